"""Materialized projections: maintained inside ingest, equal to a replay, queryable over time."""

from __future__ import annotations

import hashlib
import json
import random
import uuid
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import update

from benchledger.cli.main import cli
from benchledger.ledger.read import views
from benchledger.ledger.service import folding, ingest, maintenance, materialize, retract
from benchledger.ledger.service.ingest_outcome import IngestOutcome
from benchledger.ledger.storage.schema import projection_rows
from benchledger.ledger.storage.store import Store
from benchledger.projections import lifecycle, projector
from benchledger.projections.artifacts import Artifact
from benchledger.projections.artifacts.kinds import normalize
from benchledger.projections.history import lifecycle_summary
from benchledger.projections.projector import ProjectionFault
from benchledger.projections.retraction import NOT_RETRACTABLE
from tests.conformance.cases import CORPUS

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"
CLAIM_CASE = CORPUS / "cases" / "review-claim" / "claim-review-01"
LIFECYCLE_CASE = CORPUS / "cases" / "lifecycle-state" / "lifecycle-05"
# Another case's preflight and launch (other documents): with them, a goal holds several attempts.
OTHER_CASE = CORPUS / "cases" / "lifecycle-state" / "lifecycle-08"


def artifact(kind: str, path: Path) -> Artifact:
    return Artifact(kind, normalize(kind, json.loads(path.read_text())))


def demo_steps() -> list[list[Artifact]]:
    """preflight -> launch -> post-launch -> baseline run -> treatment run + comparison (with both runs)."""
    baseline = artifact("run", DEMO / "04-run-baseline.json")
    return [
        [artifact("preflight", DEMO / "01-preflight.json")],
        [artifact("launch", DEMO / "02-launch.json")],
        [artifact("post-launch", DEMO / "03-post-launch.json")],
        [baseline],
        [baseline, artifact("run", DEMO / "05-run-treatment.json"), artifact("comparison", DEMO / "06-comparison.json")],
    ]


def stored_rows(ledger: Store) -> list[dict]:
    return ledger.projection_rows()


def stored_goal(ledger: Store, goal: str) -> tuple[list[dict], dict[str, int]]:
    """The goal's stored rows and its stored counts per projection, which must be the numbers of those rows."""
    rows, counts = ledger.projection_rows(goal_id=goal), ledger.projection_counts(goal)
    assert counts == Counter(r["projection"] for r in rows)
    return rows, counts


def test_history_shows_each_phase_transition_in_order(ledger):
    for step in demo_steps():
        ingest.ingest(ledger, "demo", step, source="test")
    entries = views.history(ledger, "demo")["entries"]
    phases = [e["lifecycle"]["current_phase"] for e in entries if e["phase_changed"]]
    assert phases == [
        lifecycle.PREFLIGHT_READY,
        lifecycle.LAUNCHED_PROCESS,
        lifecycle.COMPACT_RESULT_READY,
        lifecycle.RESULT_INGESTED,
        lifecycle.PAIRED_COMPARED,
        lifecycle.BUDGET_COUNTED,
    ]
    # every ordered phase reached so far is in PHASES order
    indexes = [lifecycle.PHASES.index(p) for p in phases]
    assert indexes == sorted(indexes)
    launch_entry = next(e for e in entries if e["kind"] == "launch")
    assert launch_entry["lifecycle"]["first_blocker"] == lifecycle.POST_LAUNCH_MATERIALIZATION_MISSING
    last = entries[-1]
    assert last["kind"] == "ingest_batch" and last["gates_changed"]
    assert last["lifecycle"]["gates"][lifecycle.BUDGET_COUNT_ALLOWED] is True


def test_as_of_an_early_position_shows_the_early_phase(ledger):
    for step in demo_steps():
        ingest.ingest(ledger, "demo", step, source="test")
    launch_position = next(e.position for e in ledger.read_goal("demo") if e.kind == "launch")
    early = views.history(ledger, "demo", as_of=str(launch_position))
    assert [e["position"] for e in early["entries"]][-1] == launch_position
    assert early["entries"][-1]["lifecycle"]["current_phase"] == lifecycle.LAUNCHED_PROCESS
    shown = views.show(ledger, "demo", as_of=str(launch_position))
    (state,) = shown["projections"]["lifecycle-state"]
    assert state["payload"]["current_phase"] == lifecycle.LAUNCHED_PROCESS
    assert "review-claim" not in shown["projections"]
    now = views.show(ledger, "demo")
    assert now["projections"]["lifecycle-state"][0]["payload"]["current_phase"] == lifecycle.BUDGET_COUNTED
    assert "review-claim" in now["projections"]


def test_as_of_a_time_before_anything_shows_nothing(ledger):
    ingest.ingest(ledger, "demo", demo_steps()[0], source="test")
    assert views.history(ledger, "demo", as_of="2000-01-01T00:00:00Z")["entries"] == []
    with pytest.raises(ValueError):
        views.history(ledger, "demo", as_of="last tuesday")


def test_show_covers_the_reviews_that_apply(ledger):
    for step in demo_steps():
        ingest.ingest(ledger, "demo", step, source="test")
    shown = views.show(ledger, "demo")["projections"]
    assert {
        "review-claim",
        "learning-ledger",
        "review-verifier-attribution",
        "review-runner-invariants",
        "attempt-learning-gate",
        "lifecycle-state",
    } <= set(shown)
    # The latest row of each; the counts say how many there are, --projection lists them.
    assert all(len(rows) == 1 for rows in shown.values())
    assert views.show(ledger, "demo")["counts"]["review-runner-invariants"] == 2  # one per run
    listed = views.show(ledger, "demo", projection="review-runner-invariants")["projections"]["review-runner-invariants"]
    assert [row["key"] for row in listed] == [e.event_id for e in ledger.read_goal("demo") if e.kind == "run"]
    goal = next(g for g in views.goals(ledger) if g["goal_id"] == "demo")
    assert goal["current_phase"] == lifecycle.BUDGET_COUNTED
    assert goal["claim_strength"] == shown["review-claim"][0]["payload"]["decision"]["claim_strength"]
    assert goal["learning_status"] == shown["learning-ledger"][0]["payload"]["learning_status"]


def test_the_newest_claim_review_wins_whether_ingested_or_derived(ledger):
    steps = demo_steps()
    for step in steps:
        ingest.ingest(ledger, "demo", step, source="test")
    derived = json.loads(ledger.projection_rows(goal_id="demo", projection="review-claim")[0]["payload"])
    ingested = dict(derived, decision=dict(derived["decision"], claim_strength="ingested_later"))
    ingest.ingest(ledger, "demo", [Artifact("claim-review", ingested)], source="test")
    assert views.goals(ledger)[0]["claim_strength"] == "ingested_later"
    # a newer comparison batch derives a newer claim review, which wins again
    comparison = dict(steps[-1][-1].payload, comparison_id="second-pair")
    ingest.ingest(ledger, "demo", [*steps[-1][:2], Artifact("comparison", comparison)], source="test")
    assert views.goals(ledger)[0]["claim_strength"] == derived["decision"]["claim_strength"]


def test_a_raising_reducer_fails_the_ingest_and_writes_nothing(ledger, monkeypatch):
    from benchledger.projections import runner_invariants

    def broken(inputs, options):
        raise RuntimeError("boom")

    monkeypatch.setattr(runner_invariants, "reduce", broken)
    with pytest.raises(ProjectionFault, match="review-runner-invariants.*boom"):
        ingest.ingest(ledger, "demo", demo_steps()[3], source="test")
    assert ledger.event_count() == 0 and ledger.projection_rows() == []


def test_replay_marks_a_raising_reducer_faulted_and_queries_say_so(ledger, monkeypatch):
    for step in demo_steps():
        ingest.ingest(ledger, "demo", step, source="test")
    from benchledger.projections import runner_invariants

    monkeypatch.setattr(runner_invariants, "reduce", lambda inputs, options: 1 / 0)
    report = maintenance.replay(ledger)
    assert {f["projection"] for f in report["faulted"]} == {"review-runner-invariants"}
    shown = views.show(ledger, "demo")["projections"]["review-runner-invariants"]
    assert {row["status"] for row in shown} == {"faulted"} and "ZeroDivisionError" in shown[0]["error"]
    assert maintenance.status(ledger)["faulted"]


def test_status_lists_rows_of_an_older_version_and_replay_rebuilds_them(ledger):
    for step in demo_steps():
        ingest.ingest(ledger, "demo", step, source="test")
    assert maintenance.status(ledger)["ok"] is True
    with ledger.engine.begin() as connection:
        connection.execute(
            update(projection_rows).where(projection_rows.c.projection == "review-claim").values(projection_version=0)
        )
    status = maintenance.status(ledger)
    assert status["ok"] is False
    assert status["stale"] == [{"projection": "review-claim", "stored_version": 0, "code_version": 1, "rows": 1}]
    assert maintenance.replay(ledger, projection="review-claim")["rows_changed"] == 1
    assert maintenance.status(ledger)["ok"] is True
    assert maintenance.audit(ledger)["ok"] is True


def test_replay_rewrites_exactly_the_rows_that_differ_from_the_events(ledger):
    for step in demo_steps():
        ingest.ingest(ledger, "demo", step, source="test")
    before = ledger.projection_rows()
    assert maintenance.replay(ledger)["rows_changed"] == 0  # a healthy ledger: everything recomputed, nothing written
    with ledger.engine.begin() as connection:
        connection.execute(update(projection_rows).where(projection_rows.c.projection == "review-claim").values(payload="{}"))
        connection.execute(
            projection_rows.insert().values(
                projection="review-claim", goal_id="demo", key="stray", projection_version=1, status="ok", payload="{}", error=None, position=1
            )
        )
    report = maintenance.replay(ledger)
    assert report["rows_changed"] == 2 and report["rows"] == len(before)
    assert ledger.projection_rows() == before


ARTIFACT_POOL = None


def late_ledger(comparison_id: str, action: str) -> Artifact:
    """A LoopX learning ledger, ingested on its own, naming the comparison it was written for."""
    payload = json.loads((LIFECYCLE_CASE / "ledger.json").read_text())
    payload.update(comparison_id=comparison_id, routing=dict(payload["routing"], next_allowed_action=action))
    return Artifact("learning-ledger", normalize("learning-ledger", payload))


def artifact_pool() -> list[Artifact]:
    """Realistic artifacts of every kind the linking rules use, from the demo and the corpus."""
    global ARTIFACT_POOL
    if ARTIFACT_POOL is None:
        pool = [a for step in demo_steps() for a in step]
        pool += [artifact("run", CLAIM_CASE / "run-1.json"), artifact("comparison", CLAIM_CASE / "comparison.json")]
        pool += [artifact("claim-review", LIFECYCLE_CASE / "claim-review.json"), artifact("learning-ledger", LIFECYCLE_CASE / "ledger.json")]
        pool += [artifact("run", LIFECYCLE_CASE / "run.json"), Artifact("adapter-invocation", normalize("adapter-invocation", {"loopx_mode": "x"}))]
        # learning ledgers arriving after (or before) the comparison they name
        pool += [artifact("comparison", LIFECYCLE_CASE / "comparison.json"), late_ledger("fixture-pair", "late_action")]
        # a preflight or launch of another attempt, opening it (projections/attempts.py) among the evidence of the first
        pool += [artifact("preflight", OTHER_CASE / "preflight.json"), artifact("launch", OTHER_CASE / "launch.json")]
        ARTIFACT_POOL = pool
    return ARTIFACT_POOL


def ingest_sequence(ledger: Store, goal: str, rng: random.Random) -> None:
    """Random batches of the pool into ``goal``: duplicates, evidence out of order, ledgers early or late."""
    pool = artifact_pool()
    sequence = [rng.choice(pool) for _ in range(rng.randint(1, 14))]
    while sequence:
        size = rng.randint(1, 4)
        ingest.ingest(ledger, goal, sequence[:size], source="test")
        sequence = sequence[size:]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000))
def test_incremental_maintenance_equals_a_full_replay(ledger, seed):
    rng = random.Random(seed)
    goal = f"g{seed}"
    ingest_sequence(ledger, goal, rng)
    incremental = stored_goal(ledger, goal)
    assert any(r["projection"] == "projector-checkpoint" for r in incremental[0])
    assert_one_row_per_attempt(incremental)
    maintenance.replay(ledger, goal_id=goal)
    assert stored_goal(ledger, goal) == incremental  # every row, the checkpoint included, and the counts
    assert maintenance.audit(ledger, goal_id=goal)["ok"] is True


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000))
def test_incremental_maintenance_equals_a_full_replay_with_retractions_anywhere(ledger, seed):
    rng = random.Random(seed)
    goal = f"r{seed}"
    retracted = ingest_with_retractions(ledger, goal, rng, rng.randint(2, 12))
    incremental = stored_goal(ledger, goal)
    assert not {row["key"] for row in incremental[0]} & retracted
    assert_one_row_per_attempt(incremental)
    maintenance.replay(ledger, goal_id=goal)
    assert stored_goal(ledger, goal) == incremental
    assert maintenance.audit(ledger, goal_id=goal)["ok"] is True


def assert_one_row_per_attempt(goal: tuple[list[dict], dict[str, int]]) -> None:
    """The goal holds an ``attempt-lifecycle-state`` row for each attempt it counts, 1 to N, the latest one its current lifecycle."""
    rows, counts = goal
    by_projection = {(r["projection"], r["key"]): r for r in rows}
    summary = json.loads(by_projection[("goal-summary", "current")]["payload"])
    attempts = sorted((r for r in rows if r["projection"] == "attempt-lifecycle-state"), key=lambda r: r["position"])
    assert [r["key"] for r in attempts] == [str(n) for n in range(1, summary["attempts"] + 1)] and attempts[-1]["key"] == summary["attempt"]
    assert attempts[-1]["payload"] == by_projection[("lifecycle-state", "current")]["payload"]
    assert counts["attempt-lifecycle-state"] == summary["attempts"]


def file_artifact(kind: str, path: Path) -> Artifact:
    """An artifact as ``ingest`` reads it from ``path``: with the hash of its bytes (its identity)."""
    return Artifact(kind, normalize(kind, json.loads(path.read_text())), source_sha256=hashlib.sha256(path.read_bytes()).hexdigest())


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000))
def test_incremental_maintenance_equals_a_full_replay_when_attempts_repeat_the_same_lifecycle_files(ledger, seed):
    """The same preflight, launch and post-launch files in several attempts (service/attempt_identity.py): new observations where
    the open attempt lacks them, placed as a replay places them."""
    rng = random.Random(seed)
    goal = f"s-{uuid.uuid4().hex}"
    names = ("preflight", "launch", "post-launch", "run", "comparison")
    case = {kind: file_artifact(kind, LIFECYCLE_CASE / f"{kind}.json") for kind in names}
    pool = [*case.values(), file_artifact("preflight", OTHER_CASE / "preflight.json"), file_artifact("run", CLAIM_CASE / "run-1.json")]
    sequence = [rng.choice(pool) for _ in range(rng.randint(2, 16))]
    while sequence:
        size = rng.randint(1, 3)
        ingest.ingest(ledger, goal, sequence[:size], source="test")
        sequence = sequence[size:]
    incremental = stored_goal(ledger, goal)
    assert_one_row_per_attempt(incremental)
    maintenance.replay(ledger, goal_id=goal)
    assert stored_goal(ledger, goal) == incremental
    assert maintenance.audit(ledger, goal_id=goal)["ok"] is True
    # a launch is stored once per attempt that received the launch file at most
    launches = [e for e in ledger.read_goal(goal) if e.kind == "launch"]
    assert len(launches) == len({e.event_id for e in launches}) <= json.loads(
        next(r for r in incremental[0] if r["projection"] == "goal-summary")["payload"]
    )["attempts"]


def ingest_with_retractions(ledger: Store, goal: str, rng: random.Random, artifacts: int) -> set[str]:
    """Random batches of the pool into ``goal``, each followed half the time by a retraction of earlier evidence; the ids retracted."""
    pool = artifact_pool()
    sequence = [rng.choice(pool) for _ in range(artifacts)]
    retracted: set[str] = set()
    while sequence:
        size = rng.randint(1, 4)
        ingest.ingest(ledger, goal, sequence[:size], source="test")
        sequence = sequence[size:]
        evidence = [e.event_id for e in ledger.read_goal(goal) if e.kind not in NOT_RETRACTABLE and e.event_id not in retracted]
        if evidence and rng.random() < 0.5:
            chosen = rng.sample(evidence, rng.randint(1, min(2, len(evidence))))
            retract.retract(ledger, chosen, "test", goal_id=goal)
            retracted.update(chosen)
    return retracted


@pytest.fixture
def small_pages(monkeypatch):
    """Replay and audit read, hold and compare a goal a few events and rows at a time (what a goal of 10^5 events gets)."""
    monkeypatch.setattr(folding, "EVENTS_PER_PAGE", 3)
    monkeypatch.setattr(folding, "ROWS_PER_COMPARISON", 2)
    monkeypatch.setattr(folding, "GOALS_PER_STEP", 2)
    monkeypatch.setattr(projector, "RECENT_EVENTS", 2)
    monkeypatch.setattr(projector, "ROWS_PER_HANDOVER", 2)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000))
def test_a_replay_in_small_pages_makes_the_rows_of_the_whole_goal_fold_and_counts_what_it_changes(ledger, small_pages, seed):
    rng = random.Random(seed)
    goal = f"p-{uuid.uuid4().hex}"  # (hypothesis may try a seed again on the same ledger)
    for other in ("a", "z"):  # goals around it share its steps and its reads
        ingest_sequence(ledger, f"{other}-{uuid.uuid4().hex}", rng)
    ingest_with_retractions(ledger, goal, rng, rng.randint(8, 20))
    whole = [folding.row_record(goal, row) for row in projector.project_goal(ledger.read_goal(goal), strict=False).rows.values()]
    assert sorted(whole, key=lambda r: (r["projection"], r["key"])) == ledger.projection_rows(goal_id=goal)
    assert maintenance.replay(ledger)["rows_changed"] == 0  # rows handed over again (runs gated again) count once, as they end

    stored = ledger.projection_rows(goal_id=goal)
    lost, changed = rng.sample(stored, 2)  # a row lost, a row changed, a row the events do not make
    rows = projection_rows.c
    with ledger.engine.begin() as connection:
        connection.execute(projection_rows.delete().where(rows.projection == lost["projection"], rows.goal_id == goal, rows.key == lost["key"]))
        connection.execute(update(projection_rows).where(rows.projection == changed["projection"], rows.goal_id == goal, rows.key == changed["key"]).values(position=-1))
        connection.execute(projection_rows.insert().values({**changed, "key": "not-made-by-any-event"}))
    problems = [p["kind"] for p in maintenance.audit(ledger, goal_id=goal)["problems"] if p["kind"] != "projection_count_mismatch"]
    assert sorted(problems) == ["projection_extra", "projection_mismatch", "projection_missing"]
    assert maintenance.replay(ledger, goal_id=goal)["rows_changed"] == 3
    assert stored_goal(ledger, goal)[0] == stored
    assert maintenance.audit(ledger)["ok"] is True


def gates(ledger: Store, goal: str) -> dict[str, dict]:
    """The goal's attempt gate rows by run event id."""
    return {r["key"]: r for r in ledger.projection_rows(goal_id=goal, projection="attempt-learning-gate")}


def test_a_run_is_gated_against_the_learning_ledger_of_its_own_batch(ledger):
    baseline, treatment, comparison = demo_steps()[-1]
    alone = ingest.ingest(ledger, "demo", [baseline], source="test")
    (gate,) = gates(ledger, "demo").values()
    assert json.loads(gate["payload"])["learning_row_present"] is False  # no ledger written for it yet
    paired = ingest.ingest(ledger, "demo", [baseline, treatment, comparison], source="test")
    rows = gates(ledger, "demo")
    assert set(rows) == {alone.members[0].event_id, paired.members[1].event_id}
    derived = json.loads(ledger.projection_rows(goal_id="demo", projection="learning-ledger")[0]["payload"])
    for row in rows.values():
        payload = json.loads(row["payload"])
        assert row["position"] == paired.batch.position
        assert payload["learning_row_present"] is True
        assert payload["next_required_action"] == derived["routing"]["next_allowed_action"]


def test_a_new_comparison_changes_only_the_gates_of_its_own_runs(ledger):
    *_, (baseline, treatment, comparison) = demo_steps()
    ingest.ingest(ledger, "demo", [baseline, treatment, comparison], source="test")
    before = gates(ledger, "demo")
    other_run = artifact("run", LIFECYCLE_CASE / "run.json")
    second = ingest.ingest(ledger, "demo", [other_run, artifact("comparison", LIFECYCLE_CASE / "comparison.json")], source="test")
    after = gates(ledger, "demo")
    assert {k: v for k, v in after.items() if k in before} == before  # the earlier attempts keep their rows
    assert set(after) - set(before) == {second.members[0].event_id}
    # the goal's lifecycle reads the newest ledger all the same
    assert views.goals(ledger)[0]["learning_status"] == json.loads(
        ledger.projection_rows(goal_id="demo", projection="learning-ledger", key=second.batch.event_id)[0]["payload"]
    )["learning_status"]


def test_a_late_learning_ledger_gates_the_runs_of_the_comparison_it_names(ledger):
    *_, (baseline, treatment, comparison) = demo_steps()
    first = ingest.ingest(ledger, "demo", [baseline, treatment, comparison], source="test")
    other = ingest.ingest(
        ledger, "demo", [artifact("run", LIFECYCLE_CASE / "run.json"), artifact("comparison", LIFECYCLE_CASE / "comparison.json")], source="test"
    )
    before = gates(ledger, "demo")
    late = ingest.ingest(ledger, "demo", [late_ledger("fixture-pair", "late_action")], source="test")
    after = gates(ledger, "demo")
    fixture_runs = {m.event_id for m in first.members[:2]}
    assert {k for k in after if after[k] != before[k]} == fixture_runs
    for key in fixture_runs:
        assert after[key]["position"] == late.batch.position
        assert json.loads(after[key]["payload"])["next_required_action"] == "late_action"
    assert after[other.members[0].event_id] == before[other.members[0].event_id]
    # a ledger naming no comparison of the goal gates nothing
    ingest.ingest(ledger, "demo", [late_ledger("no-such-pair", "unused")], source="test")
    assert gates(ledger, "demo") == after
    rows = ledger.projection_rows(goal_id="demo")
    maintenance.replay(ledger)
    assert ledger.projection_rows(goal_id="demo") == rows


def test_a_run_ingested_with_a_learning_ledger_is_gated_against_it(ledger):
    run = artifact("run", LIFECYCLE_CASE / "run.json")
    outcome = ingest.ingest(ledger, "demo", [run, late_ledger("elsewhere", "ledger_given_with_the_run")], source="test")
    (gate,) = gates(ledger, "demo").values()
    assert gate["key"] == outcome.members[0].event_id
    assert json.loads(gate["payload"])["next_required_action"] == "ledger_given_with_the_run"


def reads_of_goal(monkeypatch) -> list[dict]:
    """Record every read of a goal's events inside a transaction (its filters)."""
    from benchledger.ledger.storage.transaction import Transaction

    reads: list[dict] = []
    original = Transaction.read_goal

    def recorded(self, goal_id, **filters):
        reads.append(filters)
        return original(self, goal_id, **filters)

    monkeypatch.setattr(Transaction, "read_goal", recorded)
    return reads


def without_new_events(monkeypatch) -> None:
    """``materialize_goals`` called as by a caller that does not hold the events the transaction appended."""
    original = materialize.materialize_goals
    monkeypatch.setattr(ingest, "materialize_goals", lambda tx, first_new, *_: original(tx, first_new))


def test_an_ingest_reads_only_the_events_after_the_checkpoint(ledger, monkeypatch):
    for step in demo_steps():
        ingest.ingest(ledger, "demo", step, source="test")
    reads = reads_of_goal(monkeypatch)
    ingest.ingest(ledger, "demo", [artifact("run", LIFECYCLE_CASE / "run.json")], source="test")
    assert reads == []  # the events after the checkpoint are the run and its batch, which the append holds: none is read back
    # a learning ledger naming a comparison finds its batch by the comparison-batch row
    ingest.ingest(ledger, "demo", [late_ledger("fixture-pair", "late_action")], source="test")
    assert reads == []
    head = ledger.head("demo")["last_version"]
    without_new_events(monkeypatch)  # a caller that does not hold them reads the events after the checkpoint
    ingest.ingest(ledger, "demo", [late_ledger("other-pair", "later_action")], source="test")
    assert reads == [{"after_version": head, "upto_position": None}]  # (every event after the checkpoint)
    assert {json.loads(g["payload"])["next_required_action"] for g in gates(ledger, "demo").values()} >= {"late_action"}


def ingest_batches(ledger: Store, batches: list[tuple[str, list[Artifact]]]) -> IngestOutcome:
    """Every batch in one :class:`ingest.Ingest` (one transaction): a bulk ingest."""
    unit = ingest.Ingest(ledger, "test")
    for goal, artifacts in batches:
        unit.add(goal, artifacts)
    return unit.commit()


def test_a_bulk_ingest_reads_what_its_goals_checkpoints_name_once_for_all_goals(ledger, monkeypatch):
    """The earlier events the goals' checkpoints name (and the members of those that are batches) are read together."""
    from benchledger.ledger.storage.transaction import Transaction

    goals = [f"goal-{i}" for i in range(8)]
    for step in demo_steps():
        ingest_batches(ledger, [(goal, step) for goal in goals])
    reads: list[int] = []
    by_id = Transaction.events_by_id
    monkeypatch.setattr(Transaction, "events_by_id", lambda self, ids: reads.append(1) or by_id(self, ids))

    ingest_batches(ledger, [(goal, [late_ledger("fixture-pair", "late_action")]) for goal in goals])

    assert len(reads) <= 6  # the regrouping and duplicate checks, the content-only ids, the checkpoints' events, their members
    for goal in goals:
        assert_equals_replay(ledger, goal)


def test_a_tampered_comparison_index_is_never_followed_and_audit_names_it(ledger):
    *_, (baseline, treatment, comparison) = demo_steps()
    ingest.ingest(ledger, "demo", [baseline, treatment, comparison], source="test")
    launch = ingest.ingest(ledger, "demo", [artifact("launch", DEMO / "02-launch.json")], source="test")
    with ledger.engine.begin() as connection:  # point the comparison's row at a batch that lists no comparison
        connection.execute(
            update(projection_rows)
            .where(projection_rows.c.projection == "comparison-batch")
            .values(payload=json.dumps({"batch_id": launch.batch.event_id, "comparison_id": "fixture-pair"}))
        )
    assert [p["detail"] for p in maintenance.audit(ledger)["problems"]] == ["comparison-batch [id:fixture-pair] differs from a replay in payload"]
    ingest.ingest(ledger, "demo", [late_ledger("fixture-pair", "late_action")], source="test")
    assert_equals_replay(ledger, "demo")


def test_a_deleted_checkpoint_is_reported_and_the_next_ingest_folds_the_whole_goal(ledger, monkeypatch):
    for step in demo_steps():
        ingest.ingest(ledger, "demo", step, source="test")
    with ledger.engine.begin() as connection:
        connection.execute(projection_rows.delete().where(projection_rows.c.projection == "projector-checkpoint"))
    problems = maintenance.audit(ledger)["problems"]
    assert [(p["kind"], p["detail"]) for p in problems] == [
        ("projection_missing", "projector-checkpoint [current] is not stored"),
        ("projection_count_mismatch", "projector-checkpoint holds 0 row(s), its stored count says 1"),
    ]
    reads = reads_of_goal(monkeypatch)
    ingest.ingest(ledger, "demo", [late_ledger("fixture-pair", "late_action")], source="test")
    assert [read["after_version"] for read in reads] == [0]  # the fallback: every event of the goal (up to the appended ones)
    assert_equals_replay(ledger, "demo")


def assert_equals_replay(ledger: Store, goal: str) -> None:
    incremental = stored_goal(ledger, goal)
    assert maintenance.replay(ledger, goal_id=goal)["rows_changed"] == 0
    assert stored_goal(ledger, goal) == incremental
    assert maintenance.audit(ledger)["ok"] is True


def tamper_checkpoint(ledger: Store, change) -> None:
    (row,) = ledger.projection_rows(projection="projector-checkpoint")
    payload = json.loads(row["payload"])
    change(payload)
    with ledger.engine.begin() as connection:
        connection.execute(
            update(projection_rows).where(projection_rows.c.projection == "projector-checkpoint").values(payload=json.dumps(payload))
        )


def _point_claim_review_at_a_run(ledger: Store):
    run = next(e for e in ledger.read_goal("demo") if e.kind == "run")
    return lambda payload: payload["latest"].__setitem__("claim-review", {"stream_version": run.stream_version, "event_id": run.event_id})


TAMPERINGS = {
    "not json": lambda ledger: ledger,
    "other versions": lambda ledger: (lambda payload: payload["versions"].__setitem__("review-claim", 0)),
    "claims a later event": lambda ledger: (lambda payload: payload.__setitem__("stream_version", payload["stream_version"] + 5)),
    "names an event of another kind": _point_claim_review_at_a_run,
    "names no event": lambda ledger: (lambda payload: payload["latest"]["run"].__setitem__("event_id", "nope")),
    "malformed evidence": lambda ledger: (lambda payload: payload["latest"].__setitem__("launch", [1])),
}


@pytest.mark.parametrize("tampering", sorted(TAMPERINGS))
def test_a_tampered_checkpoint_is_never_resumed_from_and_audit_names_it(ledger, tampering):
    for step in demo_steps():
        ingest.ingest(ledger, "demo", step, source="test")
    if tampering == "not json":
        with ledger.engine.begin() as connection:
            connection.execute(update(projection_rows).where(projection_rows.c.projection == "projector-checkpoint").values(payload="{"))
    else:
        tamper_checkpoint(ledger, TAMPERINGS[tampering](ledger))
    problems = maintenance.audit(ledger)["problems"]
    assert [(p["kind"], p["detail"]) for p in problems] == [
        ("projection_mismatch", "projector-checkpoint [current] differs from a replay in payload")
    ]
    ingest.ingest(ledger, "demo", [late_ledger("fixture-pair", "late_action"), artifact("launch", DEMO / "02-launch.json")], source="test")
    assert_equals_replay(ledger, "demo")


def test_history_command_marks_changes_and_answers_as_of(migrated_url, tmp_path):
    runner = CliRunner()
    for kind, name in (("preflight", "01-preflight.json"), ("launch", "02-launch.json"), ("post-launch", "03-post-launch.json")):
        result = runner.invoke(cli, ["--database-url", migrated_url, "ingest", "--goal", "demo", "--kind", kind, str(DEMO / name)])
        assert result.exit_code == 0, result.output
    result = runner.invoke(cli, ["--database-url", migrated_url, "history", "demo", "--format", "json"])
    view = json.loads(result.stdout)
    assert [e["kind"] for e in view["entries"]] == ["preflight", "ingest_batch", "launch", "ingest_batch", "post-launch", "ingest_batch"]
    assert [e["phase_changed"] for e in view["entries"]] == [True, False, True, False, True, False]
    table = runner.invoke(cli, ["--database-url", migrated_url, "history", "demo", "--as-of", "3"]).stdout
    assert "launched_process" in table and "compact_result_ready" not in table
    missing = runner.invoke(cli, ["--database-url", migrated_url, "history", "nope"])
    assert missing.exit_code == 2 and "no goal 'nope'" in missing.output
    bad = runner.invoke(cli, ["--database-url", migrated_url, "history", "demo", "--as-of", "yesterday"])
    assert bad.exit_code == 2


def test_a_batch_naming_a_lost_member_faults_visibly_instead_of_crashing(ledger):
    from sqlalchemy import text

    from benchledger.ledger.storage.schema import drop_immutability_ddl

    ingest.ingest(ledger, "demo", demo_steps()[0], source="test")
    with ledger.engine.begin() as connection:  # damage the ledger as an attacker with the file could
        for statement in drop_immutability_ddl(ledger.dialect):
            connection.execute(text(statement))
        connection.execute(text("UPDATE events SET event_id = 'lost' WHERE position = 1"))
    report = maintenance.replay(ledger)
    assert [f["projection"] for f in report["faulted"]] == ["batch-links"]
    assert views.show(ledger, "demo")["projections"]["batch-links"][0]["status"] == "faulted"
    assert {p["kind"] for p in maintenance.audit(ledger)["problems"]} >= {"event_id", "chain_hash"}


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000))
def test_a_bulk_ingest_of_interleaved_batches_equals_the_batches_ingested_one_by_one(ledger, seed):
    rng = random.Random(seed)
    pool = artifact_pool()
    goals = [f"g{uuid.uuid4().hex[:8]}-{i}" for i in range(3)]
    batches = [(rng.choice(goals), [rng.choice(pool) for _ in range(rng.randint(1, 3))]) for _ in range(rng.randint(1, 8))]
    outcomes = ingest_batches(ledger, batches).batches
    one_by_one = Store.in_memory()
    try:
        singles = [ingest.ingest(one_by_one, goal, artifacts, source="test") for goal, artifacts in batches]
        assert [(m.status, m.event_id) for o in outcomes for m in [*o.members, o.batch]] == [
            (m.status, m.event_id) for o in singles for m in [*o.members, o.batch]
        ]
        # Positions differ (the ledger holds other goals' events), and so the keys of lifecycle steps
        # (their event's position; in the same order); nothing else may.
        def strip(rows):
            return [{k: v for k, v in r.items() if k != "position" and (k, r["projection"]) != ("key", "lifecycle-step")} for r in rows]

        for goal in goals:
            assert strip(ledger.projection_rows(goal_id=goal)) == strip(one_by_one.projection_rows(goal_id=goal))
            assert stored_goal(ledger, goal)[1] == stored_goal(one_by_one, goal)[1]
            assert [e.stream_version for e in ledger.read_goal(goal)] == list(range(1, len(ledger.read_goal(goal)) + 1))
    finally:
        one_by_one.close()
    assert maintenance.audit(ledger)["ok"] is True


def test_a_bulk_ingest_is_all_or_nothing(ledger, monkeypatch):
    from benchledger.projections import runner_invariants

    first, *_ = demo_steps()
    ingest_batches(ledger, [("a", first)])
    before = (ledger.event_count(), ledger.projection_rows(), ledger.heads())
    monkeypatch.setattr(runner_invariants, "reduce", lambda inputs, options: 1 / 0)  # the first run's review fails
    with pytest.raises(ProjectionFault):
        ingest_batches(ledger, [("a", step) for step in demo_steps()[1:]] + [("b", first)])
    assert (ledger.event_count(), ledger.projection_rows(), ledger.heads()) == before


def test_history_is_the_lifecycle_a_fold_up_to_each_event_gives(ledger):
    for step in demo_steps():
        ingest.ingest(ledger, "demo", step, source="test")
    entries = views.history(ledger, "demo")["entries"]
    assert [e["position"] for e in entries] == [e.position for e in ledger.read_goal("demo")]
    for entry in entries:
        (lifecycle_row,) = views.show(ledger, "demo", as_of=str(entry["position"]))["projections"]["lifecycle-state"]
        assert entry["lifecycle"] == lifecycle_summary(lifecycle_row["payload"])
        assert entry["lifecycle_status"] == "ok"
    # the last entry is the stored current lifecycle
    stored = json.loads(ledger.projection_rows(goal_id="demo", projection="lifecycle-state")[0]["payload"])
    assert entries[-1]["lifecycle"] == lifecycle_summary(stored)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000))
def test_incremental_maintenance_equals_a_full_replay_with_named_attempts_interleaved(ledger, seed):
    """Batches named into attempts (ingest --attempt: earlier ones, the open one, the next) among batches the rule places, and
    retractions: every row, the checkpoint and the attempt-evidence rows included, is what a replay computes."""
    rng = random.Random(seed)
    goal = f"n-{uuid.uuid4().hex}"
    pool = artifact_pool()
    case = [file_artifact(kind, LIFECYCLE_CASE / f"{kind}.json") for kind in ("preflight", "launch", "post-launch")]
    retracted: set[str] = set()
    for _ in range(rng.randint(2, 10)):
        count = json.loads(next(r for r in stored_goal(ledger, goal)[0] if r["projection"] == "goal-summary")["payload"])["attempts"] if ledger.read_goal(goal) else 0
        named = str(rng.randint(1, count + 1)) if rng.random() < 0.5 else None
        ingest.ingest(ledger, goal, [rng.choice(pool + case) for _ in range(rng.randint(1, 3))], source="test", attempt=named)
        evidence = [e.event_id for e in ledger.read_goal(goal) if e.kind not in NOT_RETRACTABLE and e.event_id not in retracted]
        if evidence and rng.random() < 0.15:
            retracted.update(chosen := rng.sample(evidence, 1))
            retract.retract(ledger, chosen, "test", goal_id=goal)
    incremental = stored_goal(ledger, goal)
    maintenance.replay(ledger, goal_id=goal)
    assert stored_goal(ledger, goal) == incremental
    assert maintenance.audit(ledger, goal_id=goal)["ok"] is True
    rows = {(r["projection"], r["key"]) for r in incremental[0]}
    assert {k for p, k in rows if p == "attempt-evidence"} == {k for p, k in rows if p == "attempt-lifecycle-state"}
