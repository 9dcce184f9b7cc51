"""Correcting a mistake in an immutable ledger: `benchledger retract`, as a user types it, on both backends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import invoke, row_counts

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo"

NOT_READY = {"schema_version": "benchmark_preflight_fixture_v0", "ready": False, "first_blocker": "docker_daemon_unreachable"}
READY = {"schema_version": "benchmark_preflight_fixture_v0", "ready": True, "first_blocker": "ready_for_private_managed_no_upload_pilot_review"}


def _json(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _write(path: Path, document) -> Path:
    path.write_text(json.dumps(document, indent=2))
    return path


def _ingest(url: str, goal: str, *paths: Path, kind: str | None = None) -> list[dict]:
    """The member events the ingest reported."""
    report = _json(invoke(url, "ingest", "--goal", goal, *(("--kind", kind) if kind else ()), *map(str, paths), "--format", "json"))
    return [e for e in report["events"] if e["kind"] != "ingest_batch"]


def _phase(url: str, goal: str, *as_of: str) -> tuple[str, str]:
    view = _json(invoke(url, "show", "--goal", goal, *(("--as-of", *as_of) if as_of else ()), "--format", "json"))
    (row,) = view["projections"]["lifecycle-state"]
    return row["payload"]["current_phase"], row["payload"]["first_blocker"]


def _two_preflights(url: str, tmp_path: Path) -> tuple[dict, dict]:
    (first,) = _ingest(url, "w", _write(tmp_path / "p1.json", NOT_READY))
    (second,) = _ingest(url, "w", _write(tmp_path / "p2.json", READY))
    return first, second


def _lifecycle_after(url: str, event_id: str) -> tuple[str, str]:
    """(phase, first blocker) that the history shows after the event ``event_id`` of goal ``w``."""
    entries = _json(invoke(url, "history", "--goal", "w", "--format", "json"))["entries"]
    (entry,) = [e for e in entries if e["event_id"] == event_id]
    return entry["lifecycle"]["current_phase"], entry["lifecycle"]["first_blocker"]


def test_retracting_the_second_preflight_brings_back_the_first_ones_phase(migrated_url, tmp_path):
    first, second = _two_preflights(migrated_url, tmp_path)
    before = _phase(migrated_url, "w")
    first_alone = _lifecycle_after(migrated_url, first["event_id"])
    assert before == _lifecycle_after(migrated_url, second["event_id"]) != first_alone
    assert first_alone == ("not_started", "preflight_not_ready")
    digest_before = _json(invoke(migrated_url, "audit", "--format", "json"))["digest"]

    done = _json(invoke(migrated_url, "retract", second["event_id"], "--reason", "ingested the wrong host's preflight", "--format", "json"))
    assert (done["goal_id"], done["retracts"]) == ("w", [second["event_id"]])

    # show, goals and history say the first preflight's phase
    after = _phase(migrated_url, "w")
    assert after == first_alone
    (goal,) = _json(invoke(migrated_url, "goals", "--format", "json"))["goals"]
    assert (goal["current_phase"], goal["first_blocker"]) == after
    entries = _json(invoke(migrated_url, "history", "--goal", "w", "--format", "json"))["entries"]
    last = entries[-1]
    assert last["kind"] == "retraction" and last["event_id"] == done["event_id"]
    assert second["event_id"] in last["summary"] and "ingested the wrong host's preflight" in last["summary"]
    assert (last["lifecycle"]["current_phase"], last["lifecycle"]["first_blocker"]) == first_alone
    # the retracted event is still in the history, with the lifecycle it caused then
    assert _lifecycle_after(migrated_url, second["event_id"]) == before

    # --as-of a position before the retraction shows the old view
    assert _phase(migrated_url, "w", str(done["position"] - 1)) == before
    old_history = _json(invoke(migrated_url, "history", "--goal", "w", "--as-of", str(done["position"] - 1), "--format", "json"))
    assert old_history["entries"][-1]["lifecycle"]["current_phase"] == before[0]

    # audit verifies everything; a replay changes nothing (incremental == replay)
    audit = _json(invoke(migrated_url, "audit", "--format", "json"))
    assert audit["ok"] is True, audit["problems"]
    assert audit["digest"] != digest_before
    assert _json(invoke(migrated_url, "replay", "--format", "json"))["rows_changed"] == 0

    # export / import-ndjson round-trip it with the same digest
    exported = invoke(migrated_url, "export")
    assert exported.exit_code == 0
    copy = f"sqlite:///{tmp_path / 'copy.sqlite'}"
    (tmp_path / "ledger.ndjson").write_text(exported.stdout)
    imported = invoke(copy, "import-ndjson", str(tmp_path / "ledger.ndjson"))
    assert imported.exit_code == 0, imported.output
    assert _json(invoke(copy, "audit", "--expect-digest", audit["digest"], "--format", "json"))["ok"] is True
    assert _phase(copy, "w") == after


def test_runs_and_reviews_no_longer_show_a_retracted_run(migrated_url, tmp_path):
    _ingest(migrated_url, "demo", DEMO)
    runs = _json(invoke(migrated_url, "runs", "--goal", "demo", "--format", "json"))["runs"]
    assert len(runs) == 2
    treatment = next(r for r in runs if r["mode"] == "codex-loopx")
    def keys(projection: str) -> set[str]:
        shown = _json(invoke(migrated_url, "show", "--goal", "demo", "--projection", projection, "--format", "json"))["projections"]
        return {row["key"] for rows in shown.values() for row in rows}

    assert treatment["event_id"] in keys("review-runner-invariants") & keys("attempt-learning-gate")

    assert invoke(migrated_url, "retract", treatment["event_id"], "--reason", "treatment ran on a stale image").exit_code == 0

    runs = _json(invoke(migrated_url, "runs", "--goal", "demo", "--format", "json"))["runs"]
    assert [r["mode"] for r in runs] == ["hardened-codex"]
    assert treatment["event_id"] not in keys("review-runner-invariants") | keys("attempt-learning-gate")  # its rows are gone
    shown = _json(invoke(migrated_url, "show", "--goal", "demo", "--format", "json"))["projections"]
    # the batch's reviews read the batch without it
    (verifier,) = shown["review-verifier-attribution"]
    assert "codex-loopx" not in json.dumps(verifier["payload"])
    audit = _json(invoke(migrated_url, "audit", "--format", "json"))
    assert audit["ok"] is True, audit["problems"]
    assert _json(invoke(migrated_url, "replay", "--format", "json"))["rows_changed"] == 0


def test_an_ingest_after_a_retraction_keeps_the_evidence_retracted(migrated_url, tmp_path):
    first, second = _two_preflights(migrated_url, tmp_path)
    assert invoke(migrated_url, "retract", second["event_id"], "--reason", "wrong host").exit_code == 0
    # the same file again is the same (retracted) observation; a new one counts
    assert _ingest(migrated_url, "w", tmp_path / "p2.json")[0]["status"] == "duplicate"
    assert _phase(migrated_url, "w") == ("not_started", "preflight_not_ready")
    _ingest(migrated_url, "w", _write(tmp_path / "p3.json", {**READY, "generated_at": "2026-11-23T10:00:00Z"}))
    assert _phase(migrated_url, "w") == _lifecycle_after(migrated_url, second["event_id"])
    assert _json(invoke(migrated_url, "audit", "--format", "json"))["ok"] is True
    assert _json(invoke(migrated_url, "replay", "--format", "json"))["rows_changed"] == 0


@pytest.mark.parametrize(
    "case",
    ["unknown id", "another goal's id", "already retracted", "a retraction", "a batch", "empty reason", "secret reason", "path reason", "unknown goal"],
)
def test_a_retraction_that_cannot_be_made_exits_2_and_writes_nothing(migrated_url, tmp_path, case):
    first, second = _two_preflights(migrated_url, tmp_path)
    (other,) = _ingest(migrated_url, "other", _write(tmp_path / "o.json", NOT_READY))
    done = _json(invoke(migrated_url, "retract", first["event_id"], "--reason", "first mistake", "--format", "json"))
    history = _json(invoke(migrated_url, "history", "--goal", "w", "--format", "json"))["entries"]
    batch_id = next(e["event_id"] for e in history if e["kind"] == "ingest_batch")
    ids, reason, goal = [second["event_id"]], "a fine reason", []
    if case == "unknown id":
        ids = ["00000000-0000-0000-0000-000000000000"]
    elif case == "another goal's id":
        ids, goal = [other["event_id"]], ["--goal", "w"]
    elif case == "already retracted":
        ids = [first["event_id"]]
    elif case == "a retraction":
        ids = [done["event_id"]]
    elif case == "a batch":
        ids = [batch_id]
    elif case == "empty reason":
        reason = "  "
    elif case == "secret reason":
        reason = "token ghp_" + "a" * 36
    elif case == "path reason":
        reason = "see /home/alice/notes.txt"
    elif case == "unknown goal":
        goal = ["--goal", "nope"]
    before = row_counts(migrated_url)
    result = invoke(migrated_url, "retract", *ids, "--reason", reason, *goal)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and result.output.startswith("benchledger: "), result.output
    assert row_counts(migrated_url) == before
    if case in ("secret reason", "path reason"):
        assert reason.split()[-1] not in result.output  # the refusal never echoes what it refused


def test_the_report_counts_no_retracted_run(migrated_url):
    from benchledger.ledger.read import report_views
    from benchledger.ledger.storage.store import Store

    _ingest(migrated_url, "demo", DEMO)
    runs = _json(invoke(migrated_url, "runs", "--goal", "demo", "--format", "json"))["runs"]
    baseline = next(r for r in runs if r["mode"] == "hardened-codex")

    def seen() -> tuple[set[str], list[dict]]:
        ledger = Store.open(migrated_url)
        try:
            (goal,) = report_views.goal_index(ledger)["goals"]
            return {rate["arm"] for rate in goal["pass_rates"] if rate["runs"]}, report_views.goal_runs(ledger, ["demo"])["failure_labels"]["demo"]
        finally:
            ledger.close()

    arms, labels = seen()
    assert arms == {"hardened-codex", "codex-loopx"} and {label["arm"] for label in labels} == {"hardened-codex"}
    assert invoke(migrated_url, "retract", baseline["event_id"], "--reason", "baseline ran without its verifier").exit_code == 0
    assert seen() == ({"codex-loopx"}, [])


def _writer_between_check_and_append(monkeypatch, url: str, *args: str) -> None:
    """Make another writer run ``benchledger ARGS`` after the retraction is checked and before it is appended (once)."""
    from benchledger.ledger.service import retract

    plan = retract._retraction_plan
    pending = [args]

    def checked_then_raced(*a, **kw):
        checked = plan(*a, **kw)
        while pending:
            assert invoke(url, *pending.pop()).exit_code == 0
        return checked

    monkeypatch.setattr(retract, "_retraction_plan", checked_then_raced)


def test_a_retraction_raced_by_an_ingest_is_checked_again_and_made(migrated_url, tmp_path, monkeypatch):
    # Reported by the retraction's author: a retract beside a concurrent ingest of the same goal failed
    # with a version conflict; it is now checked again against what the goal holds and appended.
    first, second = _two_preflights(migrated_url, tmp_path)
    _writer_between_check_and_append(monkeypatch, migrated_url, "ingest", "--goal", "w", str(DEMO / "04-run-baseline.json"))
    done = invoke(migrated_url, "retract", second["event_id"], "--reason", "fixture mix-up")
    assert done.exit_code == 0, done.output
    assert _phase(migrated_url, "w")[1] == "preflight_not_ready"
    assert invoke(migrated_url, "audit").exit_code == 0


def test_the_same_retraction_made_twice_at_once_is_kept_once(migrated_url, tmp_path, monkeypatch):
    first, second = _two_preflights(migrated_url, tmp_path)
    _writer_between_check_and_append(monkeypatch, migrated_url, "retract", second["event_id"], "--reason", "the other operator")
    done = invoke(migrated_url, "retract", second["event_id"], "--reason", "fixture mix-up")
    assert done.exit_code == 2 and "retracted already" in done.output
    entries = _json(invoke(migrated_url, "history", "--goal", "w", "--format", "json"))["entries"]
    assert [e["kind"] for e in entries].count("retraction") == 1


def test_retracting_a_baseline_run_says_how_the_goals_verdicts_change_and_matches_loopx(migrated_url, loopx, tmp_path):
    """A comparison's baseline run retracted: its batch's claim review reads the comparison and the treatment alone, which LoopX
    answers as strong (no baseline failure to caveat). `retract` says so before anything is written (dry run) and after, in the
    words `goals` lists, with what to do if the comparison does not stand without the run; the JSON carries both sides."""
    import subprocess

    files = [DEMO / "04-run-baseline.json", DEMO / "05-run-treatment.json", DEMO / "06-comparison.json"]
    baseline = _ingest(migrated_url, "g", *files)[0]
    assert baseline["kind"] == "run"
    loopx_says = json.loads(subprocess.run(
        [loopx, "benchmark", "review-claim", "--format", "json", "--benchmark-comparison-json", str(files[2]),
         "--benchmark-run-json", str(files[1])], capture_output=True, text=True, check=True,
    ).stdout)["decision"]["claim_strength"]
    assert loopx_says == "strong_loopx_assisted_score_recovery"

    dry = invoke(migrated_url, "retract", baseline["event_id"], "--reason", "baseline was mistaken", "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert f"verdicts: claim strength candidate_score_recovery_needs_attribution_review -> {loopx_says}" in dry.stdout
    assert "if a comparison does not stand without what was retracted, retract it too" in dry.stdout
    done = _json(invoke(migrated_url, "retract", baseline["event_id"], "--reason", "baseline was mistaken", "--format", "json"))
    assert done["verdicts_before"]["claim_strength"] == "candidate_score_recovery_needs_attribution_review"
    assert done["verdicts_after"] == {"claim_strength": loopx_says, "learning_status": "clean_score_recovery_evidence"}
    (goal,) = _json(invoke(migrated_url, "goals", "--format", "json"))["goals"]
    assert (goal["claim_strength"], goal["learning_status"]) == (loopx_says, "clean_score_recovery_evidence")

    # retracting a run no review reads changes no verdict, and says none
    stray = {**json.loads(files[0].read_text()), "run_id": "a-stray-run"}
    other = _ingest(migrated_url, "g", _write(tmp_path / "stray.json", stray))
    quiet = invoke(migrated_url, "retract", other[0]["event_id"], "--reason", "a stray run")
    assert quiet.exit_code == 0 and "verdicts:" not in quiet.stdout, quiet.stdout
