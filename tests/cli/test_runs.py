"""`benchledger runs`: imported LoopX rows and ingested runs alike, and the current countable run per arm."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from benchledger.projections import runs
from benchledger.projections.artifacts.kinds import normalize
from tests.cli.test_import_loopx import PUBLIC, public_rows
from tests.conformance.cases import CORPUS
from tests.helpers import invoke

PAIR = CORPUS / "cases" / "review-claim" / "claim-review-01"


@dataclass(frozen=True)
class Event:
    payload: Any
    position: int
    kind: str = runs.ROW_KIND
    goal_id: str = "g"
    recorded_at: str = "2026-07-01T00:00:00.000000Z"

    @property
    def event_id(self) -> str:
        return f"event-{self.position}"


def row(run_id: str, recorded_at: str, arm: str = "baseline", **fields) -> dict:
    return {"run_id": run_id, "benchmark_id": "b@1", "case_id": "c", "arm_id": arm, "recorded_at": recorded_at,
            "status": "completed", "score_status": "failed", "official_score": 0.0, **fields}


def current_of(*events: Event) -> dict[str, Any]:
    return {e["arm"]: e for e in runs.current_runs(runs.run_views(events))}


# -- pure rules -------------------------------------------------------------------------


def test_the_latest_countable_run_of_each_arm_is_current():
    entries = current_of(
        Event(row("old", "2026-06-01T10:00:00+08:00"), 1),
        Event(row("new", "2026-06-02T10:00:00+08:00"), 2),
        Event(row("earlier-but-imported-later", "2026-05-01T10:00:00+08:00"), 3),
        Event(row("t1", "2026-06-01T10:00:00+08:00", arm="treatment"), 4),
    )
    assert entries["baseline"]["current"]["run_id"] == "new"
    assert (entries["baseline"]["run_count"], entries["baseline"]["countable_run_count"]) == (3, 3)
    assert entries["treatment"]["current"]["run_id"] == "t1"


@pytest.mark.parametrize(
    "fields, reason",
    [
        ({"archive_state": "archived", "archived_at": "2026-07-03T12:00:00+08:00"}, "archived"),
        ({"archived_at": "2026-07-03T12:00:00+08:00"}, "archived"),
        ({"status": "running"}, "running"),
        ({"case_attempt_countable": False, "launcher_attempt_countable": True}, "case_attempt_countable=false"),
        ({"benchmark_budget_countable": False}, "benchmark_budget_countable=false"),
    ],
)
def test_a_non_countable_newer_run_does_not_displace_the_current_one(fields, reason):
    entries = current_of(
        Event(row("counted", "2026-06-01T10:00:00+08:00"), 1),
        Event(row("newer", "2026-06-02T10:00:00+08:00", **fields), 2),
    )
    assert entries["baseline"]["current"]["run_id"] == "counted"
    newer = next(v for v in runs.run_views([Event(row("newer", "2026-06-02T10:00:00+08:00", **fields), 2)]))
    assert (newer["countable"], newer["not_countable_reason"]) == (False, reason)


def test_explicitly_countable_runs_and_runs_without_flags_count():
    views = runs.run_views([Event(row("flagged", "2026-06-01T10:00:00Z", case_attempt_countable=True, official_score_attempt_countable=False), 1),
                            Event(row("legacy", "2026-06-01T09:00:00Z"), 2)])
    assert [v["countable"] for v in views] == [True, True]


def test_same_instant_the_later_position_wins_and_an_arm_may_have_no_current_run():
    entries = current_of(
        Event(row("first", "2026-06-01T12:00:00+08:00"), 1),
        Event(row("second", "2026-06-01T04:00:00Z"), 2),
        Event(row("gone", "2026-06-01T04:00:00Z", arm="treatment", archive_state="archived"), 3),
    )
    assert entries["baseline"]["current"]["run_id"] == "second"
    assert entries["treatment"]["current"] is None and entries["treatment"]["archived_run_count"] == 1


def test_a_reimported_row_supersedes_its_older_version():
    views = runs.run_views([
        Event(row("r1", "2026-06-01T10:00:00+08:00"), 1),
        Event(row("r1", "2026-06-01T10:00:00+08:00", archive_state="archived"), 7),
        Event(row("r1", "2026-06-01T10:00:00+08:00"), 3, goal_id="other-goal"),
    ])
    assert [(v["goal_id"], v["position"], v["archived"]) for v in views] == [("g", 7, True), ("other-goal", 3, False)]


def test_an_ingested_compact_run_is_read_like_loopx_reads_it():
    payload = normalize("run", json.loads((PAIR / "run-2.json").read_text()))
    view = runs.run_view(Event(payload, 5, kind="run"))
    assert {k: view[k] for k in ("run_id", "benchmark_id", "case_id", "arm", "mode", "status", "score_status", "official_score", "official_passed", "countable")} == {
        "run_id": "event-5", "benchmark_id": "terminal-bench@2.0", "case_id": None, "arm": payload["mode"], "mode": payload["mode"],
        "status": "completed", "score_status": "passed", "official_score": 1.0, "official_passed": True, "countable": True,
    }


@pytest.mark.parametrize(
    "run, expected",
    [
        ({}, ("recorded", "missing", None, None)),
        ({"runner_return_status": "completed"}, ("completed", "missing", None, None)),
        ({"official_score": 0.5}, ("completed", "failed", 0.5, False)),
        ({"official_task_score": {"value": 0.0, "passed": True}, "official_score": 1.0}, ("completed", "passed", 0.0, True)),
        ({"official_score": 1, "official_score_status": "verifier_timeout"}, ("completed", "verifier_timeout", 1, True)),
        ({"official_score": 1, "official_score_status": "completed"}, ("completed", "passed", 1, True)),
        ({"progress": {"n_running_trials": 1}, "official_score": 1.0}, ("running", "passed", 1.0, True)),
    ],
)
def test_compact_run_status_and_score(run, expected):
    score, passed = runs.compact_run_score(run)
    assert (runs.compact_run_status(run, score), runs.compact_run_score_status(run, score, passed), score, passed) == expected


def test_filters_match_status_or_score_status():
    view = runs.run_views([Event(row("r", "2026-06-01T10:00:00Z", mode="m1"), 1)])[0]
    assert runs.matches(view, status="completed") and runs.matches(view, status="failed")
    assert not runs.matches(view, status="passed")
    assert runs.matches(view, benchmark="b@1", case="c", arm="baseline", mode="m1")
    assert not runs.matches(view, mode="m2")


# -- the command, on every backend --------------------------------------------------------


@pytest.fixture
def imported(ledger, ledger_url):
    result = invoke(ledger_url, "import-loopx", "--goal", "loopx-public", str(PUBLIC))
    assert result.exit_code == 0, result.output
    return ledger_url


def listed(url, *args) -> list[dict]:
    result = invoke(url, "runs", "--format", "json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["runs"]


def test_runs_lists_exactly_one_benchmarks_rows(imported):
    expected = sorted(r["run_id"] for r in public_rows() if r["benchmark_id"] == "terminal-bench@2.0")
    rows = listed(imported, "--benchmark", "terminal-bench@2.0")
    assert len(expected) == 87 and sorted(r["run_id"] for r in rows) == expected
    assert {r["benchmark_id"] for r in rows} == {"terminal-bench@2.0"}
    assert len(listed(imported)) == 303
    table = invoke(imported, "runs", "--benchmark", "terminal-bench@2.0").stdout.splitlines()
    assert len(table) == 2 + 87 and table[0].split()[:4] == ["goal", "run", "benchmark", "case"]


def test_runs_filters_on_the_public_ledger(imported):
    case = listed(imported, "--case", "3d-scan-calc")
    assert len(case) == 13 and sum(r["archived"] for r in case) == 12
    failed = listed(imported, "--status", "failed")
    assert failed and {r["score_status"] for r in failed} == {"failed"}
    blocked = listed(imported, "--status", "blocked", "--benchmark", "terminal-bench@2.0")
    assert len(blocked) == 6 and {r["status"] for r in blocked} == {"blocked"}
    mode = listed(imported, "--mode", "codex_loopx")
    assert len(mode) == 23 and {r["mode"] for r in mode} == {"codex_loopx"}


def test_ingested_runs_are_listed_beside_imported_rows(imported):
    assert invoke(imported, "ingest", "--goal", "tb2-db-wal", str(PAIR / "run-1.json"), str(PAIR / "run-2.json")).exit_code == 0
    rows = listed(imported, "--benchmark", "terminal-bench@2.0")
    ingested = [r for r in rows if r["kind"] == "run"]
    assert len(rows) == 89 and [r["goal_id"] for r in ingested] == ["tb2-db-wal", "tb2-db-wal"]
    assert listed(imported, "--goal", "tb2-db-wal") == ingested
    current = json.loads(invoke(imported, "runs", "--current", "--goal", "tb2-db-wal", "--format", "json").stdout)["current_runs"]
    assert {e["arm"]: e["current"]["run_id"] for e in current} == {r["arm"]: r["run_id"] for r in ingested}


def spelt_as_arm(row: dict) -> str:
    """A LoopX row's arm, normalized by hand as the docs state it (its arm id, else its mode; lower case, "_" as "-")."""
    return (row.get("arm_id") or row["mode"]).lower().replace("_", "-")


def test_current_runs_on_the_public_ledger(imported):
    result = invoke(imported, "runs", "--current", "--format", "json")
    entries = json.loads(result.stdout)["current_runs"]
    by_case = {(e["benchmark_id"], e["case_id"], e["arm"]): e for e in entries}
    # 3d-scan-calc: twelve archived runs and one active one; only the active one is current.
    scan = [e for e in entries if e["case_id"] == "3d-scan-calc" and e["current"] is not None]
    assert [e["current"]["archived"] for e in scan] == [False]
    assert sum(e["run_count"] for e in entries if e["case_id"] == "3d-scan-calc") == 13
    # multi-source-data-merger's baseline closeouts are not countable (benchmark_budget_countable=false).
    merger = by_case[("terminal-bench@2.0", "multi-source-data-merger", "codex-goal-mode-baseline")]
    assert merger["current"]["not_countable_reason"] is None and merger["countable_run_count"] == merger["run_count"] - 4
    # Every current run is the latest countable run of its arm.
    for entry in entries:
        if entry["current"] is not None:
            arm_rows = [r for r in public_rows() if (r["benchmark_id"], r["case_id"], spelt_as_arm(r)) == (entry["benchmark_id"], entry["case_id"], entry["arm"])]
            assert entry["current"]["recorded_at"] == max(
                (r for r in arm_rows if r.get("archive_state") != "archived" and r.get("case_attempt_countable") is not False
                 and r.get("benchmark_budget_countable") is not False),
                key=lambda r: runs.utc_instant(r["recorded_at"]),
            )["recorded_at"]
    failed = json.loads(invoke(imported, "runs", "--current", "--status", "failed", "--format", "json").stdout)["current_runs"]
    assert failed and all(e["current"]["score_status"] == "failed" for e in failed)
    assert len(failed) == sum(1 for e in entries if e["current"] and e["current"]["score_status"] == "failed")


def test_unknown_goal_and_help(imported):
    result = invoke(imported, "runs", "--goal", "nope")
    assert result.exit_code == 2 and "no goal 'nope'" in result.stderr
    help_text = " ".join(invoke(imported, "runs", "--help").stdout.split())
    # The countable-run rule is written once, in docs/interop.md; --help points there.
    assert "current countable run" in help_text and "the full rule: docs/interop.md" in help_text
    rule = (Path(__file__).parents[2] / "docs" / "interop.md").read_text()
    for phrase in ("not countable", "case_attempt_countable", "latest", "recorded_at", "no current run"):
        assert phrase in rule


def test_compare_on_the_public_ledger_says_why_archived_evidence_gives_no_comparison(imported):
    found = json.loads(invoke(imported, "compare", "--benchmark", "skillsbench@1.1", "--format", "json").stdout)["comparisons"]
    assert found and all(c["verdict"] == "no paired tasks" and c["tasks"] == 0 for c in found)
    left_out = re.compile(r"\d+ archived run\(s\) of these arms are left out \(--include-archived counts (them|the archived ones)\)$")
    assert all(left_out.search(c["note"]) for c in found)
    archived = json.loads(invoke(imported, "compare", "--benchmark", "skillsbench@1.1", "--include-archived", "--format", "json").stdout)
    assert any(c["tasks"] > 0 and c["p_value"] is not None for c in archived["comparisons"]) and archived["scope"]["include_archived"]
