"""The runs model's fast paths keep its rules (benchmarks/runs_model.py measures them):

* a goal's model events, read kind by kind and merged by position, build the model that all the goal's events,
  read in one position-ordered pass, build (any up-to position, goals together or alone);
* a comparison's ``earlier_run`` side, found by a binary search over the countable runs of its task and arm, is the
  latest of them (recorded time, then position) before the comparison that the other side does not hold, and a side
  is missing for want of one only when there is none.
"""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchledger.ledger.read import runs as read_runs
from benchledger.ledger.storage.event_records import NewEvent
from benchledger.projections import runs
from benchledger.projections.batch_manifest import BATCH_KIND

BENCH = "tb@2"
MODES = st.sampled_from(["codex-loopx", "Codex_LoopX", "hardened-codex"])
TASKS = st.sampled_from(["a", "b"])
# A compact run of a task and mode, its score, its recorded time (out of position order); a comparison of a task and
# its scenarios; or a retraction of the event that many events back.
RUN = st.tuples(st.just("run"), TASKS, MODES, st.booleans(), st.integers(0, 59))
COMPARISON = st.tuples(st.just("comparison"), TASKS, st.one_of(MODES, st.none()), st.one_of(MODES, st.none()))
RETRACTION = st.tuples(st.just("retraction"), st.integers(1, 4))
STEP = st.one_of(RUN, RUN, RUN, COMPARISON, COMPARISON, RETRACTION)
GOALS = itertools.count()


class _Event:
    def __init__(self, position: int, kind: str, payload: dict, recorded_at: str) -> None:
        self.position, self.kind, self.payload, self.goal_id = position, kind, payload, "g"
        self.event_id, self.recorded_at = f"e{position}", recorded_at


def _payload(step: tuple, ids: list[str]) -> tuple[str, dict]:
    if step[0] == "run":
        _, task, mode, passed, _second = step
        return "run", {"benchmark_id": BENCH, "mode": mode, "trials": [{"task_id": task}],
                       "official_task_score": {"value": 1.0 if passed else 0.0, "passed": passed}}
    if step[0] == "comparison":
        _, task, baseline, treatment = step
        found = {"benchmark_id": BENCH, "task_id": task}
        found.update({name: arm for name, arm in (("baseline_scenario_id", baseline), ("treatment_scenario_id", treatment)) if arm})
        return "comparison", found
    return "retraction", {"retracts": ids[-step[1]:][:1], "reason": "test"}


def _events(steps: list[tuple]) -> list[_Event]:
    """The steps as events; each comparison is ingested in a batch with the event before it."""
    found: list[_Event] = []
    for step in steps:
        kind, payload = _payload(step, [e.event_id for e in found])
        second = step[4] if kind == "run" else 0
        found.append(_Event(len(found) + 1, kind, payload, f"2026-12-01T00:00:{second:02d}Z"))
        if kind == "comparison":
            members = [{"event_id": e.event_id, "kind": e.kind} for e in found[-2:]]
            found.append(_Event(len(found) + 1, BATCH_KIND, {"members": members}, "2026-12-01T00:00:00Z"))
    return found


@settings(max_examples=300, deadline=None)
@given(st.lists(STEP, max_size=30))
def test_an_earlier_run_side_is_the_latest_countable_run_of_its_task_and_arm_before_the_comparison(steps):
    model = runs.runs_model(_events(steps))
    for pair in model.pairs:
        for side, other in (("baseline", "treatment"), ("treatment", "baseline")):
            arm = pair[f"{side}_arm"]
            # (the sides are filled from the batch first, then from earlier runs, the baseline's before the treatment's)
            found_first = pair[other] is not None and (pair[f"{other}_found_by"] != "earlier_run" or other == "baseline")
            taken = pair[other]["event_id"] if found_first else None
            candidates = [
                v for v in model.runs
                if v["countable"] and v["case_id"] == pair["case_id"] and v["arm"] == arm and v["position"] < pair["position"]
                and v["event_id"] != taken
            ]
            latest = max(candidates, key=lambda v: (runs.utc_instant(v["recorded_at"]), v["position"]), default=None)
            if pair[f"{side}_found_by"] == "earlier_run":
                assert pair[side] == latest
            elif pair[side] is None and arm and pair[f"{side}_missing"].startswith(f"no {arm} run"):
                assert latest is None


def _append(ledger, goal: str, steps: list[tuple]) -> None:
    ids: list[str] = []
    for step in steps:
        kind, payload = _payload(step, ids)
        (appended,) = ledger.append(goal, [NewEvent(kind, {**payload, "salt": len(ids)})], source="test")
        ids.append(appended.event.event_id)
        if kind == "comparison":
            members = [{"event_id": i} for i in ids[-2:]]
            ledger.append(goal, [NewEvent(BATCH_KIND, {"members": members, "salt": len(ids)})], source="test")
    ledger.append(goal, [NewEvent("note", {"text": "not a model event", "salt": len(ids)})], source="test")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(STEP, min_size=1, max_size=10), st.lists(STEP, min_size=1, max_size=6), st.integers(0, 20))
def test_a_goals_model_read_kind_by_kind_is_the_model_of_all_its_events_in_position_order(ledger, first, second, cut):
    goals = [f"kinds-{next(GOALS)}", f"kinds-{next(GOALS)}"]
    for goal, steps in zip(goals, (first, second), strict=True):
        _append(ledger, goal, steps)
    everything = [e for goal in goals for e in ledger.read_goal(goal)]
    assert read_runs.runs_model(ledger, goal_ids=goals) == runs.runs_model(everything)
    assert read_runs.runs_model(ledger, goal_ids=goals[:1]) == runs.runs_model(ledger.read_goal(goals[0]))
    up_to = sorted(e.position for e in everything)[min(cut, len(everything) - 1)]
    assert read_runs.runs_model(ledger, goal_ids=goals, up_to_position=up_to) == runs.runs_model(e for e in everything if e.position <= up_to)
