"""The report's reads agree with the rules they stand for, on both backends: pass rates counted as the
events stream past (newest first) equal the runs model's over every marked run, and the failure labels a goal's
page shows (from the runs model its comparisons read) equal a count over the runs that model shows."""

from __future__ import annotations

import itertools
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchledger.ledger.read import report_views as views
from benchledger.ledger.storage.event_records import NewEvent
from benchledger.projections import runs

# What a run's outcome and arm fields may hold: the words the rules look for, blanks (Python's
# whitespace, Unicode included), numbers around the pass mark, booleans, null, and other JSON.
TEXTS = st.sampled_from(["passed", "failed", "missing", "completed", "probe_error", " passed", "", "  ", "\u2003\t", "tb@2", "codex", "hardened"])
SCALARS = st.one_of(TEXTS, st.sampled_from([0, 0.5, 0.999, 1, 1.0, 2, -1, 10**30, True, False, None]))
VALUES = st.one_of(SCALARS, st.lists(SCALARS, max_size=2), st.dictionaries(st.sampled_from(["value", "passed"]), SCALARS, max_size=2))
TASK_SCORES = st.one_of(VALUES, st.fixed_dictionaries({}, optional={"value": SCALARS, "passed": SCALARS}))
FIELDS = {
    "benchmark_id": VALUES, "mode": VALUES, "arm_id": VALUES, "run_id": st.sampled_from(["r1", "r2", " ", 7]),
    "score_status": VALUES, "official_score_status": VALUES, "official_score": VALUES, "official_passed": VALUES,
    "official_task_score": TASK_SCORES,
}
RUN = st.tuples(st.sampled_from(runs.RUN_KINDS), st.fixed_dictionaries({}, optional=FIELDS), st.integers(0, 10**6))
GOALS = itertools.count()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(RUN, min_size=1, max_size=12))
def test_streamed_pass_rates_equal_the_runs_models(ledger, generated):
    goal = f"rates-{next(GOALS)}"
    # the salt keeps equal payloads distinct events; versions of one run id supersede each other by position
    ledger.append(goal, [NewEvent(kind, {**payload, "salt": salt}) for kind, payload, salt in generated], source="test")
    want = runs.pass_rates(runs.runs_model(ledger.read_goal(goal)).runs)
    (entry,) = views.goal_index(ledger, [goal])["goals"]
    assert entry["pass_rates"] == want


# A run's failure labels (a compact run's failure_attribution_labels, a LoopX row's failure_labels): a list of labels
# (text or numbers) or something that is no list (counts nothing); LoopX rows in versions of a run id, some archived.
LABELS = st.one_of(st.lists(st.sampled_from(["verifier_timeout", "a/b", " ", 7]), max_size=3), st.sampled_from(["verifier_timeout", None, {"a": 1}, 3]))
LABELLED = {
    runs.RUN_KIND: st.fixed_dictionaries({}, optional={"failure_attribution_labels": LABELS, "mode": st.sampled_from(["codex", "hardened", None])}),
    runs.ROW_KIND: st.fixed_dictionaries(
        {"run_id": st.sampled_from(["r1", "r2"])},
        optional={"failure_labels": LABELS, "arm_id": st.sampled_from(["codex_loopx", "hardened"]), "archive_state": st.just("archived")},
    ),
}
LABELLED_RUN = st.sampled_from(runs.RUN_KINDS).flatmap(lambda kind: st.tuples(st.just(kind), LABELLED[kind]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(LABELLED_RUN, min_size=1, max_size=8))
def test_failure_labels_the_page_shows_equal_a_count_over_the_runs_the_model_shows(ledger, generated):
    goal = f"labels-{next(GOALS)}"
    # (the salt keeps equal payloads distinct events: the ledger stores an identical event once)
    ledger.append(goal, [NewEvent(kind, {**payload, "salt": salt}) for salt, (kind, payload) in enumerate(generated)], source="test")
    payloads = {event.event_id: event.payload for event in ledger.read_goal(goal)}
    want: dict[tuple[str, object], int] = {}
    for view in runs.runs_model(ledger.read_goal(goal)).runs:
        if view["superseded"] or view["retracted"] or view["archived"]:
            continue
        field = "failure_labels" if view["kind"] == runs.ROW_KIND else "failure_attribution_labels"
        labels = payloads[view["event_id"]].get(field)
        for label in labels if isinstance(labels, list) else []:
            key = (label if isinstance(label, str) else json.dumps(label), view["arm"])
            want[key] = want.get(key, 0) + 1
    got = {(entry["label"], entry["arm"]): entry["runs"] for entry in views.goal_runs(ledger, [goal])["failure_labels"][goal]}
    assert got == want
