"""What a fold works out once and reads again (issue 31 item 4) is what working it out again would give.

* a run's failure facts, labels and worker evidence, and what ``lifecycle-state`` reads of the
  latest run, are held per run object (``run_classifiers.per_run``);
* the learning ledger of a batch starts from the claim review the projector just made of the very
  same comparison and runs, handed to it (``learning_ledger.reduce``'s ``claim``).

The rows of ordinary goals (the benchmark workload, ingested through the real path) folded with
these shortcuts must be byte for byte those folded with every one of them worked out afresh.
"""

from __future__ import annotations

import copy

import pytest

from benchledger.ledger.service.folding import row_record
from benchledger.projections import claim_review, learning_ledger, lifecycle_state, run_classifiers
from benchledger.projections.projector import project_goal
from benchmarks import workload as wl
from benchmarks.synthetic_ledger import build_templates


@pytest.fixture(scope="module")
def goals():
    return [template.events for template in build_templates(wl.load_templates(), 8, seed=31)]


def rows_of(goals):
    return [sorted((row_record("g", row) for row in project_goal(events, strict=False).rows.values()), key=str) for events in goals]


def test_the_fold_with_its_shortcuts_makes_the_rows_of_the_fold_without(goals, monkeypatch):
    with_shortcuts = rows_of(goals)
    monkeypatch.setattr(run_classifiers, "_run_failure", run_classifiers.RunFailure.derive)
    monkeypatch.setattr(run_classifiers, "_labels", lambda run: tuple(run_classifiers.RunFailure.derive(run).labels()))
    monkeypatch.setattr(run_classifiers, "_worker_evidence", run_classifiers._treatment_worker_evidence)
    monkeypatch.setattr(lifecycle_state, "_run_facts", lifecycle_state.RunFacts.of)
    reduce_learning = learning_ledger.reduce
    monkeypatch.setattr(learning_ledger, "reduce", lambda inputs, options, claim=None: reduce_learning(inputs, options))
    assert sum(map(len, with_shortcuts)) > 100
    assert with_shortcuts == rows_of(goals)


def test_a_learning_ledger_given_its_claim_review_is_the_one_that_works_it_out():
    comparison = {"schema_version": "benchmark_comparison_v0", "comparison_id": "c", "official_task_score_delta": 1.0}
    runs = [{"schema_version": "benchmark_run_v0", "mode": "bare-codex"}, {"schema_version": "benchmark_run_v0", "mode": "loopx"}]
    inputs, options = {"comparison": [comparison], "run": runs}, {"require_actionable_learning": True}
    claim = claim_review.review_claim(comparison, runs)
    before = copy.deepcopy(claim)
    assert learning_ledger.reduce(inputs, options, claim=claim) == learning_ledger.reduce(inputs, options)
    assert claim == before  # (read, never changed: it is the claim review's own row)


def test_the_learning_ledger_does_not_share_lists_with_the_claim_review_it_read():
    comparison = {"schema_version": "benchmark_comparison_v0", "comparison_id": "c", "official_task_score_delta": 0.0}
    runs = [{"schema_version": "benchmark_run_v0", "mode": "bare-codex"}]
    claim = claim_review.review_claim(comparison, runs)
    row = learning_ledger.learning_row(comparison, runs, claim)
    assert row["claim_blockers"] == claim["decision"]["blockers"]
    assert row["claim_blockers"] is not claim["decision"]["blockers"]
    assert row["input_schema_versions"]["benchmark_runs"] is not claim["input_schema_versions"]["benchmark_runs"]
