"""The walk of session 37: the library as a notebook user types it, ``jobs`` first, on both backends.

``Ledger.replay(jobs="2")``, ``audit(jobs=2.5)`` and ``ingest_batch_file(path, jobs=None)`` raised the comparison's
raw ``TypeError`` (docs/python-api.md promises a ``BenchledgerError`` for every error a caller can cause),
``replay(jobs=0)`` and ``audit(jobs=0)`` ran as if 1 was meant while ``ingest_batch_file(jobs=0)`` refused it, and
``jobs=True`` was taken for one worker. One check serves the three now.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import benchledger
from benchledger.errors import InvalidInput

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo"
RUNS = [str(DEMO / n) for n in ("04-run-baseline.json", "05-run-treatment.json", "06-comparison.json")]
WRONG = ["2", 2.5, 0, -1, None, True]


@pytest.mark.parametrize("jobs", WRONG, ids=repr)
def test_a_wrong_jobs_is_refused_by_replay_audit_and_ingest_batch_file_alike_and_nothing_is_written(migrated_url, tmp_path, jobs):
    batches = tmp_path / "batches.ndjson"
    batches.write_text(json.dumps({"goal_id": "goal-jobs", "kind": None, "artifacts": [json.loads(Path(r).read_text()) for r in RUNS]}) + "\n")
    with benchledger.open(migrated_url) as ledger:
        assert ledger.ingest("demo-goal", RUNS).ok
        events = ledger.event_count()
        calls = (
            lambda: ledger.replay(jobs=jobs),
            lambda: ledger.audit(jobs=jobs),
            lambda: ledger.ingest_batch_file(str(batches), jobs=jobs),
        )
        for call in calls:
            with pytest.raises(InvalidInput, match=rf"jobs must be a whole number of worker processes \(1 or more\), not {re.escape(repr(jobs))}"):
                call()
        assert ledger.event_count() == events, "a refused ingest_batch_file wrote nothing"


def test_a_right_jobs_still_works_for_the_three(migrated_url, tmp_path):
    batches = tmp_path / "batches.ndjson"
    batches.write_text(json.dumps({"goal_id": "goal-jobs", "kind": None, "artifacts": [json.loads(Path(r).read_text()) for r in RUNS]}) + "\n")
    with benchledger.open(migrated_url) as ledger:
        assert ledger.ingest_batch_file(str(batches), jobs=2).appended == 3
        assert ledger.replay(jobs=1).rows_changed == 0
        assert ledger.audit(jobs=2).ok


# -- the rest of the walk: what a caller passes by mistake, each refused as InvalidInput, nothing written -----------------


@pytest.fixture
def demo(migrated_url):
    with benchledger.open(migrated_url) as ledger:
        assert ledger.ingest("demo-goal", RUNS).ok
    return migrated_url


def _first_event(ledger) -> str:
    return ledger.history("demo-goal").as_dict()["entries"][0]["event_id"]  # (read whole: its snapshot closed, as a write needs on PostgreSQL)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda led: led.archive_goal("demo-goal", archived="no"), "archived must be True or False, not 'no'"),
        (lambda led: led.retract([_first_event(led)], None), "reason must be a string, not None"),
        (lambda led: led.retract([_first_event(led)], "stale", dry_run="yes"), "dry_run must be True or False, not 'yes'"),
        (lambda led: led.ingest("demo-goal", RUNS[:1], dry_run="no"), "dry_run must be True or False, not 'no'"),
        (lambda led: led.ingest("other-goal", RUNS[:1], source=5), "source must be a string, not 5"),
        (lambda led: led.ingest("other-goal", RUNS[:1], new_goal="yes"), "new_goal must be True or False, not 'yes'"),
        (lambda led: led.show("demo-goal", offset=-1), r"offset must be a whole number \(0 or more\), not -1"),
        (lambda led: led.show("demo-goal", projection="review-claim", limit="5"), r"limit must be a whole number of rows .*not '5'"),
        (lambda led: led.checkpoint(tree_size="3"), r"tree_size must be a whole number .*not '3'"),
        (lambda led: led.prove([_first_event(led)], checkpoint=1.0), r"checkpoint must be a whole number .*not 1.0"),
        (lambda led: led.prove_consistency("1"), r"old_size must be a whole number \(0 or more\), not '1'"),
        (lambda led: list(led.history("demo-goal", kind="runs")), r"kind 'runs' is not an event kind; one of: run, "),
    ],
    ids=[
        "archived-no", "reason-none", "retract-dry-run-yes", "ingest-dry-run-no", "source-int", "new-goal-yes", "offset-negative",
        "limit-str", "tree-size-str", "checkpoint-float", "old-size-str", "kind-plural",
    ],
)
def test_a_mistaken_argument_is_refused_naming_it_and_nothing_is_written(demo, call, message):
    """``archive_goal(archived="no")`` archived the goal; ``dry_run="no"`` ran dry; ``retract(ids, None)`` and
    ``ingest(source=5)`` raised raw ``AttributeError`` / ``TypeError``; ``show(offset=-1)`` returned rows from the end;
    ``history(kind="runs")`` an empty history, as if the goal held no run."""
    with benchledger.open(demo) as ledger:
        events = ledger.event_count()
        with pytest.raises(InvalidInput, match=message):
            call(ledger)
        assert ledger.event_count() == events
        assert [g.goal_id for g in ledger.goals()] == ["demo-goal"]  # (not archived, no goal created)


def test_one_event_id_given_alone_is_that_event_not_its_characters(demo):
    with benchledger.open(demo) as ledger:
        event = _first_event(ledger)
        planned = ledger.retract(event, "the baseline ran on a stale image", dry_run=True)
        assert planned.dry_run and planned.retracts == [event]
        assert ledger.prove(event).proofs[0].event_id == event
