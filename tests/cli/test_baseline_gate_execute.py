"""`baseline-failure-gate --execute`: the gate row is kept in the ledger and rebuilt from it."""

from __future__ import annotations

import json

from click.testing import CliRunner

from benchledger.cli.main import cli
from benchledger.ledger.storage.store import Store
from tests.conformance.cases import CORPUS

CASE = CORPUS / "cases" / "baseline-failure-gate" / "baseline-gate-01"


def run_gate(url, monkeypatch, *extra):
    monkeypatch.chdir(CASE)
    args = json.loads((CASE / "case.json").read_text())["args"]
    return CliRunner().invoke(cli, ["--database-url", url, "benchmark", "baseline-failure-gate", *args, *extra, "--format", "json"])


def test_execute_appends_the_batch_and_keeps_the_gate(migrated_url, monkeypatch):
    result = run_gate(migrated_url, monkeypatch, "--execute", "--goal-id", "gate-goal")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["ok"] is True and payload["appended"] is True and payload["dry_run"] is False
    assert payload["goal_id"] == "gate-goal"
    assert payload["global_sync"]["skipped"] is True  # the case passes --no-global-sync
    ledger = Store.open(migrated_url)
    events = ledger.read_goal("gate-goal")
    assert [e.kind for e in events] == ["result", "ingest_batch"]
    batch = events[-1]
    assert payload["json_path"] == f"event:{batch.event_id}"
    recorded = batch.payload["review"]
    assert recorded["command"] == "baseline-failure-gate"
    assert recorded["options"]["benchmark_id"] == "terminal-bench@2.0"
    assert "baseline_result_json" not in recorded["options"]  # input paths are never stored
    (row,) = ledger.projection_rows(goal_id="gate-goal", projection="baseline-failure-gate")
    stored = json.loads(row["payload"])
    assert stored["benchmark_comparison"] == payload["benchmark_comparison"]
    audit = CliRunner().invoke(cli, ["--database-url", migrated_url, "audit", "--format", "json"])
    assert json.loads(audit.stdout)["ok"] is True


def test_execute_without_goal_id_is_the_reference_error(migrated_url, monkeypatch):
    result = run_gate(migrated_url, monkeypatch, "--execute")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["error"] == "benchmark baseline-failure-gate requires --goal-id with --execute"
    assert Store.open(migrated_url).event_count() == 0


def test_execute_refuses_a_goal_id_the_ledger_cannot_name(migrated_url, monkeypatch):
    result = run_gate(migrated_url, monkeypatch, "--execute", "--goal-id", "has space")
    assert result.exit_code == 1
    assert "invalid goal id" in json.loads(result.stdout)["error"]
    assert Store.open(migrated_url).event_count() == 0
