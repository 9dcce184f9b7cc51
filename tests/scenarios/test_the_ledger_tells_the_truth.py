"""The ledger tells the truth, as the CLI calls a user types, on both backends.

Every observation is kept, what LoopX accepts is accepted, a declared schema
decides the kind, an empty ingest creates no goal, every command names an
unknown goal alike, modes are read as LoopX reads them, and a summary counts
what its review counts. Each test reproduces a way the ledger once did not.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers import invoke, row_counts

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo"


def _write(path: Path, document) -> Path:
    path.write_text(json.dumps(document, indent=2))
    return path


def _demo(name: str) -> dict:
    return json.loads((DEMO / name).read_text())


def _json(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _lifecycle(url: str, goal: str) -> dict:
    view = _json(invoke(url, "show", goal, "--format", "json"))
    (row,) = view["projections"]["lifecycle-state"]
    return row["payload"]


# -- every observation is kept: identity is the source document, not the compact form --


def _preflights(tmp_path: Path) -> list[Path]:
    not_ready = {"schema_version": "benchmark_preflight_fixture_v0", "ready": False, "first_blocker": "docker_daemon_unreachable"}
    ready = {"schema_version": "benchmark_preflight_fixture_v0", "ready": True, "first_blocker": "ready_for_private_managed_no_upload_pilot_review"}
    return [
        _write(tmp_path / "p1.json", {**not_ready, "generated_at": "2026-11-20T10:00:00Z"}),
        _write(tmp_path / "p2.json", {**ready, "generated_at": "2026-11-21T10:00:00Z"}),
        _write(tmp_path / "p3.json", {**not_ready, "generated_at": "2026-11-22T10:00:00Z"}),
    ]


def test_a_preflight_that_repeats_an_older_one_is_a_new_observation(migrated_url, tmp_path, loopx):
    p1, p2, p3 = _preflights(tmp_path)
    for path in (p1, p2, p3):
        report = _json(invoke(migrated_url, "ingest", "--goal", "w", "--kind", "preflight", str(path), "--format", "json"))
        assert report["appended_count"] == 1 and report["duplicate_count"] == 0
    alone = subprocess.run(
        [loopx, "benchmark", "lifecycle-state", "--preflight-json", str(p3), "--format", "json"], capture_output=True, text=True
    )
    expected = json.loads(alone.stdout)
    assert (expected["current_phase"], expected["first_blocker"]) == ("not_started", "preflight_not_ready")
    state = _lifecycle(migrated_url, "w")
    assert (state["current_phase"], state["first_blocker"]) == ("not_started", "preflight_not_ready")
    # the same file again is the same observation: nothing appended
    again = _json(invoke(migrated_url, "ingest", "--goal", "w", "--kind", "preflight", str(p3), "--format", "json"))
    assert again["appended_count"] == 0 and again["duplicate_count"] == 1
    assert invoke(migrated_url, "audit").exit_code == 0


def test_two_repeat_trials_with_equal_compact_runs_both_count(migrated_url, tmp_path):
    trial = _demo("04-run-baseline.json")
    first = _write(tmp_path / "trial-1.json", trial)
    second = tmp_path / "trial-2.json"
    second.write_text(json.dumps(trial))  # the same run, other bytes (compaction makes them equal)
    assert invoke(migrated_url, "ingest", "--goal", "rep", str(first)).exit_code == 0
    report = _json(invoke(migrated_url, "ingest", "--goal", "rep", str(second), "--format", "json"))
    assert report["appended_count"] == 1
    (arm,) = _json(invoke(migrated_url, "runs", "--goal", "rep", "--current", "--format", "json"))["current_runs"]
    assert arm["run_count"] == 2
    assert invoke(migrated_url, "audit").exit_code == 0


# -- a run LoopX accepts is accepted ---------------------------------------------------


def test_a_run_with_a_top_level_task_id_is_accepted(migrated_url, tmp_path, loopx):
    run = _write(tmp_path / "run.json", {**_demo("04-run-baseline.json"), "task_id": "fix-git"})
    assert subprocess.run(
        [loopx, "benchmark", "review-runner-invariants", "--benchmark-run-json", str(run), "--format", "json"], capture_output=True
    ).returncode == 0
    result = invoke(migrated_url, "ingest", "--goal", "tid", str(run))
    assert result.exit_code == 0, result.output
    assert invoke(migrated_url, "ingest", "--goal", "tid2", "--dry-run", str(run)).exit_code == 0


def test_an_identifier_the_filter_drops_is_dropped_as_loopx_drops_it(migrated_url, tmp_path):
    """LoopX accepts a comparison whose comparison_id is a local path and drops it; so does ingest.

    Two such comparisons stay two observations: identity is the source document, not the compact form.
    """
    comparison = _demo("06-comparison.json")
    first = _write(tmp_path / "c1.json", {**comparison, "comparison_id": "/Users/alice/private/cmp-1"})
    second = _write(tmp_path / "c2.json", {**comparison, "comparison_id": "/Users/alice/private/cmp-2"})
    report = _json(invoke(migrated_url, "ingest", "--goal", "c", str(first), str(second), "--format", "json"))
    assert report["appended_count"] == 2
    assert "alice" not in invoke(migrated_url, "export").stdout


# -- a declared schema decides the kind; --kind names the schema-less ------------------


def test_a_kind_that_contradicts_the_schema_is_refused(migrated_url):
    result = invoke(migrated_url, "ingest", "--goal", "w", "--kind", "preflight", str(DEMO / "06-comparison.json"))
    assert result.exit_code == 2
    assert "06-comparison.json: --kind preflight (library: kind='preflight') contradicts its schema_version 'benchmark_comparison_v0'" in result.output
    folder = invoke(migrated_url, "ingest", "--goal", "w", "--kind", "preflight", str(DEMO))
    assert folder.exit_code == 2 and "nothing was written" in folder.output
    assert row_counts(migrated_url)["events"] == 0


def test_the_demo_folder_ingests_as_a_folder_with_its_declared_kinds(migrated_url):
    report = _json(invoke(migrated_url, "ingest", "--goal", "g", str(DEMO), "--format", "json"))
    assert [e["kind"] for e in report["events"]] == ["preflight", "launch", "post-launch", "run", "run", "comparison"]
    assert report["appended_count"] == 6
    # --kind still names the schema-less: a preflight without schema_version
    assert invoke(migrated_url, "ingest", "--goal", "g", "--kind", "preflight", str(DEMO / "01-preflight.json")).exit_code == 0


# -- an ingest of nothing creates no goal ----------------------------------------------


def test_an_ingest_of_a_folder_without_artifacts_writes_nothing(migrated_url, tmp_path):
    empty = tmp_path / "empty"
    (empty / "notes").mkdir(parents=True)
    (empty / "notes" / "README.txt").write_text("no artifact here")
    result = invoke(migrated_url, "ingest", "--goal", "m2", str(empty))
    assert result.exit_code == 2
    assert "no artifact to ingest" in result.output and "nothing was written" in result.output
    assert _json(invoke(migrated_url, "goals", "--format", "json"))["goals"] == []
    assert set(row_counts(migrated_url).values()) == {0}


# -- every command refuses an unknown goal alike ---------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["audit", "--goal", "nope"],
        ["replay", "--goal", "nope"],
        ["show", "nope"],
        ["history", "nope"],
        ["runs", "--goal", "nope"],
        ["export", "--goal", "nope"],
        ["retract", "00000000-0000-0000-0000-000000000000", "--reason", "wrong goal", "--goal", "nope"],
    ],
)
def test_every_command_refuses_an_unknown_goal_alike(migrated_url, command):
    assert invoke(migrated_url, "ingest", "--goal", "known", str(DEMO / "04-run-baseline.json")).exit_code == 0
    result = invoke(migrated_url, *command)
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1] == "benchledger: no goal 'nope' in this ledger (`benchledger goals` lists them)"


def test_a_ledger_written_before_source_identity_stays_valid_and_idempotent(migrated_url, tmp_path, monkeypatch):
    """Events stored under content-only ids (as builds before source identity stored them) audit clean; the same files again append nothing."""
    from benchledger.ledger.service import ingest
    from benchledger.ledger.storage.event_records import NewEvent

    keyed = ingest.member_event
    monkeypatch.setattr(ingest, "member_event", lambda artifact: NewEvent(**{**keyed(artifact).__dict__, "keyed_on_source": False}))
    p1, _, p3 = _preflights(tmp_path)
    old = _json(invoke(migrated_url, "ingest", "--goal", "old", str(p1), str(DEMO / "04-run-baseline.json"), "--format", "json"))
    monkeypatch.undo()
    digest = _json(invoke(migrated_url, "audit", "--format", "json"))["digest"]

    again = _json(invoke(migrated_url, "ingest", "--goal", "old", str(p1), str(DEMO / "04-run-baseline.json"), "--format", "json"))
    assert again["appended_count"] == 0 and again["batch_status"] == "duplicate"
    assert [e["event_id"] for e in again["events"]] == [e["event_id"] for e in old["events"]]
    # p3 compacts to p1's payload but is another document: a new event, beside the old one
    new = _json(invoke(migrated_url, "ingest", "--goal", "old", "--kind", "preflight", str(p3), "--format", "json"))
    assert new["appended_count"] == 1 and new["events"][0]["event_id"] != old["events"][0]["event_id"]
    audit = _json(invoke(migrated_url, "audit", "--expect-digest", digest, "--format", "json"))
    assert audit["ok"] is True, audit["problems"]


# -- derived identifiers and links follow LoopX's reading of a mode ---------------------
# (every reducer's identifiers under respelled modes: tests/conformance/aliases, recorded from LoopX)


def test_a_comparison_pairs_the_runs_of_its_arms_however_the_modes_are_spelled(migrated_url, tmp_path):
    baseline = {**_demo("04-run-baseline.json"), "mode": "Hardened_Codex"}
    treatment = {**_demo("05-run-treatment.json"), "mode": "codex_loopx"}
    comparison = _demo("06-comparison.json")
    assert (comparison["baseline_scenario_id"], comparison["treatment_scenario_id"]) == ("hardened-codex", "codex-loopx")
    paths = [_write(tmp_path / f"{n}.json", d) for n, d in (("b", baseline), ("t", treatment), ("c", comparison))]
    assert invoke(migrated_url, "ingest", "--goal", "spelled", *map(str, paths)).exit_code == 0
    (pair,) = _json(invoke(migrated_url, "runs", "--paired", "--goal", "spelled", "--format", "json"))["pairs"]
    assert (pair["baseline"]["mode"], pair["treatment"]["mode"]) == ("Hardened_Codex", "codex_loopx")


# -- history's summary of an adapter invocation counts what the review counts -------


def test_history_counts_an_adapter_invocations_kwargs_as_its_review_does(migrated_url, tmp_path):
    kwargs = {"loopx_mode": "m", "loopx_goal_id": "g", "loopx_benchmark_run_schema_version": "v0", "model": "x", "temperature": 0}
    invocation = _write(tmp_path / "kwargs.json", kwargs)
    assert invoke(migrated_url, "ingest", "--goal", "adapter", "--kind", "adapter-invocation", str(invocation)).exit_code == 0
    view = _json(invoke(migrated_url, "show", "adapter", "--format", "json"))
    (review,) = view["projections"]["review-adapter-kwargs"]
    assert review["payload"]["generated_loopx_kwarg_count"] == 3
    steps = _json(invoke(migrated_url, "history", "adapter", "--format", "json"))
    summaries = [step["summary"] for step in steps["entries"] if step["kind"] == "adapter-invocation"]
    assert summaries and all("3 generated loopx kwargs" in summary for summary in summaries), summaries


def test_version_names_the_installed_distribution():
    from importlib.metadata import version

    from click.testing import CliRunner

    from benchledger.cli.main import cli
    from benchledger.ledger.api import schema_head

    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert result.output.startswith(f"benchledger {version('benchledger')} (") and result.output.endswith(f"schema revision {schema_head()})\n")
