"""An ingest folds only what it adds, each attempt is gated by its own learning ledger (CLI calls, both backends)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from sqlalchemy import create_engine, delete, update

from benchledger.ledger.storage.engine import normalize_url
from benchledger.ledger.storage.schema import projection_rows
from tests.helpers import invoke

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo"
LEDGER = REPO / "tests" / "conformance" / "corpus" / "cases" / "lifecycle-state" / "lifecycle-05" / "ledger.json"


def _json(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _ingest(url: str, *args: str) -> dict:
    return _json(invoke(url, "ingest", *args, "--format", "json"))


def _gates(url: str) -> dict[str, dict]:
    view = _json(invoke(url, "show", "--goal", "w", "--projection", "attempt-learning-gate", "--format", "json"))
    return {row["key"]: row for row in view["projections"]["attempt-learning-gate"]}


def _loopx_gate(loopx: str, run: Path, ledger: Path | None) -> dict:
    flags = ["--benchmark-learning-ledger-json", str(ledger)] if ledger else []
    done = subprocess.run(
        [loopx, "benchmark", "attempt-learning-gate", "--benchmark-run-json", str(run), *flags, "--format", "json"],
        capture_output=True, text=True,
    )
    return json.loads(done.stdout)


def test_each_attempt_is_gated_by_the_learning_ledger_written_for_it(migrated_url, tmp_path, loopx):
    baseline, treatment, comparison = (DEMO / n for n in ("04-run-baseline.json", "05-run-treatment.json", "06-comparison.json"))
    _ingest(migrated_url, "--goal", "w", str(baseline))
    (alone,) = _gates(migrated_url).values()
    assert alone["payload"] == _loopx_gate(loopx, baseline, None)  # no ledger written for it yet: LoopX without the flag

    _ingest(migrated_url, "--goal", "w", str(baseline), str(treatment), str(comparison))
    paired = _gates(migrated_url)
    assert len(paired) == 2 and all(row["payload"]["learning_row_present"] for row in paired.values())

    # LoopX's own ledger for that comparison, arriving later: it gates exactly that comparison's attempts
    late = json.loads(LEDGER.read_text())
    late.update(comparison_id="fixture-pair", routing=dict(late["routing"], next_allowed_action="repair_then_repeat"))
    late_path = tmp_path / "late-ledger.json"
    late_path.write_text(json.dumps(late))
    _ingest(migrated_url, "--goal", "w", "--kind", "learning-ledger", str(late_path))
    regated = _gates(migrated_url)
    assert set(regated) == set(paired)
    for run_path in (baseline, treatment):
        expected = _loopx_gate(loopx, run_path, late_path)
        assert expected["next_required_action"] == "repair_then_repeat"
        assert any(row["payload"] == expected for row in regated.values())

    # an attempt of another comparison keeps its gate when a ledger for this one arrives
    other_run = {**json.loads(baseline.read_text()), "run_id": "other-attempt"}
    other_path = tmp_path / "other-run.json"
    other_path.write_text(json.dumps(other_run))
    _ingest(migrated_url, "--goal", "w", str(other_path))
    before = _gates(migrated_url)
    _ingest(migrated_url, "--goal", "w", "--kind", "learning-ledger", str(LEDGER))
    assert _gates(migrated_url) == before  # it names "lifecycle-startup-failure", a comparison this goal never saw
    assert _json(invoke(migrated_url, "status", "--format", "json"))["ok"] is True
    assert _json(invoke(migrated_url, "replay", "--format", "json"))["rows_changed"] == 0


def test_a_tampered_checkpoint_is_named_by_audit_and_the_next_ingest_is_still_right(migrated_url):
    for name in ("01-preflight.json", "02-launch.json"):
        _ingest(migrated_url, "--goal", "w", str(DEMO / name))
    engine = create_engine(normalize_url(migrated_url))
    with engine.begin() as connection:  # an attacker (or a bug) with write access to the database
        connection.execute(update(projection_rows).where(projection_rows.c.projection == "projector-checkpoint").values(payload='{"latest": {}}'))
    engine.dispose()
    audit = invoke(migrated_url, "audit")
    assert audit.exit_code == 1
    assert "projection_mismatch (goal w" in audit.stdout and "projector-checkpoint [current] differs from a replay" in audit.stdout
    _ingest(migrated_url, "--goal", "w", str(DEMO / "03-post-launch.json"))
    assert invoke(migrated_url, "audit").exit_code == 0  # the ingest folded the goal afresh and rewrote it
    view = _json(invoke(migrated_url, "show", "--goal", "w", "--format", "json"))
    assert view["projections"]["lifecycle-state"][0]["payload"]["current_phase"] == "compact_result_ready"
    assert _json(invoke(migrated_url, "replay", "--format", "json"))["rows_changed"] == 0


def test_the_first_ingest_after_an_upgrade_brings_an_older_goal_up_to_date(migrated_url):
    # A goal written by a benchledger before checkpoints and lifecycle steps (and with an older gate
    # version): found walking an upgrade by hand, where the next ingest stored steps for its own events
    # only, so `history` lost the older ones' lifecycle, `audit` failed and `status` said all was current.
    _ingest(migrated_url, "--goal", "w", str(DEMO / "01-preflight.json"))
    _ingest(migrated_url, "--goal", "w", *(str(DEMO / n) for n in ("04-run-baseline.json", "05-run-treatment.json", "06-comparison.json")))
    engine = create_engine(normalize_url(migrated_url))
    with engine.begin() as connection:
        connection.execute(delete(projection_rows).where(projection_rows.c.projection.in_(["projector-checkpoint", "lifecycle-step"])))
        connection.execute(update(projection_rows).where(projection_rows.c.projection == "attempt-learning-gate").values(projection_version=1))
    engine.dispose()
    before = invoke(migrated_url, "status")
    assert before.exit_code == 1 and "stale: attempt-learning-gate" in before.output and "stale: no lifecycle-step rows for 1 goal(s)" in before.output

    _ingest(migrated_url, "--goal", "w", "--kind", "launch", str(DEMO / "02-launch.json"))
    assert invoke(migrated_url, "status").exit_code == 0
    assert invoke(migrated_url, "audit").exit_code == 0
    history = _json(invoke(migrated_url, "history", "--goal", "w", "--format", "json"))
    assert all(entry["lifecycle"] is not None for entry in history["entries"])
    assert _json(invoke(migrated_url, "replay", "--format", "json"))["rows_changed"] == 0


def _ledger_of_goals(url: str, count: int) -> None:
    for goal in range(count):
        for name in ("01-preflight.json", "04-run-baseline.json"):
            _ingest(url, "--goal", f"g{goal}", str(DEMO / name))
        _ingest(url, "--goal", f"g{goal}", *(str(DEMO / n) for n in ("04-run-baseline.json", "05-run-treatment.json", "06-comparison.json")))


def _rows(url: str) -> list[dict]:
    from benchledger.ledger.storage.store import Store

    ledger = Store.open(url)
    try:
        return ledger.projection_rows()
    finally:
        ledger.close()


def test_replay_and_audit_fold_goals_in_worker_processes(migrated_url, monkeypatch):
    from benchledger.ledger.service import fold_jobs, folding

    monkeypatch.setattr(folding, "GOALS_PER_STEP", 1)  # one goal a step: the four goals go to the workers
    _ledger_of_goals(migrated_url, 4)
    rows = _rows(migrated_url)
    serial = _json(invoke(migrated_url, "replay", "--jobs", "1", "--format", "json"))
    parallel = _json(invoke(migrated_url, "replay", "--jobs", "2", "--format", "json"))
    assert {k: parallel[k] for k in ("goals", "events", "rows", "rows_changed")} == {k: serial[k] for k in ("goals", "events", "rows", "rows_changed")}
    assert parallel["rows_changed"] == 0 and _rows(migrated_url) == rows
    assert _json(invoke(migrated_url, "audit", "--jobs", "2", "--format", "json"))["ok"] is True

    engine = create_engine(normalize_url(migrated_url))
    with engine.begin() as connection:
        connection.execute(update(projection_rows).where(projection_rows.c.goal_id == "g2", projection_rows.c.projection == "review-claim").values(payload="{}"))
    engine.dispose()
    audits = [invoke(migrated_url, "audit", "--jobs", jobs, "--format", "json") for jobs in ("1", "2")]
    assert [a.exit_code for a in audits] == [1, 1] and json.loads(audits[0].stdout) == json.loads(audits[1].stdout)
    assert [(p["kind"], p["goal_id"]) for p in json.loads(audits[1].stdout)["problems"]] == [("projection_mismatch", "g2")]
    # a goal too large to send through a pipe is folded by the calling process (here: every goal), through the same comparison
    monkeypatch.setattr(fold_jobs, "FOLDED_HERE_EVENTS", 0)
    assert json.loads(invoke(migrated_url, "audit", "--jobs", "2", "--format", "json").stdout) == json.loads(audits[0].stdout)
    assert _json(invoke(migrated_url, "replay", "--jobs", "2", "--format", "json"))["rows_changed"] == 1
    assert _rows(migrated_url) == rows


def test_a_replay_whose_worker_fails_writes_nothing(migrated_url, monkeypatch):
    from sqlalchemy import text

    from benchledger.ledger.service import folding
    from benchledger.ledger.storage.schema import drop_immutability_ddl

    monkeypatch.setattr(folding, "GOALS_PER_STEP", 1)
    _ledger_of_goals(migrated_url, 3)
    engine = create_engine(normalize_url(migrated_url))
    with engine.begin() as connection:  # a stale row in g0, and an event of g2 that no longer holds JSON
        connection.execute(update(projection_rows).where(projection_rows.c.goal_id == "g0", projection_rows.c.projection == "review-claim").values(payload="{}"))
        for statement in drop_immutability_ddl(engine.dialect.name):
            connection.execute(text(statement))
        connection.execute(text("UPDATE events SET payload = 'not json' WHERE goal_id = 'g2' AND kind = 'preflight'"))
    engine.dispose()
    rows = _rows(migrated_url)
    failed = invoke(migrated_url, "replay", "--jobs", "2")
    assert failed.exit_code != 0 and "does not hold JSON" in failed.output
    assert _rows(migrated_url) == rows  # g0's row was rebuilt in the transaction, which rolled back
    audit = _json_exit(invoke(migrated_url, "audit", "--jobs", "2", "--format", "json"), 1)
    assert {(p["kind"], p["goal_id"]) for p in audit["problems"]} >= {("projection_mismatch", "g0"), ("replay_failed", "g2")}


def _json_exit(result, code: int) -> dict:
    assert result.exit_code == code, result.output
    return json.loads(result.stdout)
