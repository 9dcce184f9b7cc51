"""`benchledger import-loopx`: a LoopX run ledger and a LoopX runtime history, on every backend."""

from __future__ import annotations

import copy
import filecmp
import json
from pathlib import Path

import pytest

from benchledger.ledger.service.loopx_import import import_plan, plan_import
from benchledger.ledger.storage.privacy import rule_description as guard_what
from benchledger.projections.artifacts.kinds import normalize
from benchledger.projections.runs import ROW_KIND, utc_instant
from tests.conformance.cases import CORPUS
from tests.helpers import invoke, row_counts

PUBLIC = Path(__file__).parents[1] / "data" / "loopx-public" / "benchmark-run-ledger.json"
SHARED_PUBLIC = Path(__file__).resolve().parents[3] / "shared" / "data" / "loopx-public" / "benchmark-run-ledger.json"
PAIR = CORPUS / "cases" / "review-claim" / "claim-review-01"
GOAL = "loopx-import"


def public_rows() -> list[dict]:
    document = json.loads(PUBLIC.read_text(encoding="utf-8"))
    return [row for benchmark in document["benchmarks"].values() for case in benchmark["cases"].values() for row in case["runs"]]


def run_ledger(tmp_path: Path, rows: list[dict], name: str = "ledger.json") -> Path:
    """A small benchmark_run_ledger_v0 file holding ``rows``, grouped as LoopX groups them."""
    benchmarks: dict = {}
    for row in rows:
        cases = benchmarks.setdefault(row["benchmark_id"], {"benchmark_id": row["benchmark_id"], "cases": {}})["cases"]
        cases.setdefault(row["case_id"], {"case_id": row["case_id"], "runs": []})["runs"].append(row)
    path = tmp_path / name
    path.write_text(json.dumps({"schema_version": "benchmark_run_ledger_v0", "benchmarks": benchmarks}), encoding="utf-8")
    return path


def row(run_id: str, recorded_at: str, **fields) -> dict:
    return {"run_id": run_id, "benchmark_id": "terminal-bench@2.0", "case_id": "db-wal-recovery", "recorded_at": recorded_at,
            "arm_id": "codex_goal_mode_baseline", "status": "completed", "score_status": "failed", **fields}


@pytest.mark.skipif(not SHARED_PUBLIC.is_file(), reason="no ../shared/data beside this checkout to compare with")
def test_public_ledger_copy_matches_shared():
    assert filecmp.cmp(PUBLIC, SHARED_PUBLIC, shallow=False)


# -- the public run ledger ---------------------------------------------------------


def test_public_run_ledger_imports_every_row_once_in_recorded_at_order(ledger, ledger_url):
    first = invoke(ledger_url, "import-loopx", "--goal", GOAL, "--format", "json", str(PUBLIC))
    assert first.exit_code == 0, first.output
    report = json.loads(first.stdout)
    assert report == {
        "ok": True, "dry_run": False, "goal_id": GOAL, "source_format": "benchmark_run_ledger_v0",
        "rows_read": 303, "duplicate_rows": 0, "rows_without_artifacts": 0,
        "events_appended": 303, "events_already_present": 0, "refused": [],
    }
    stored = ledger.read_goal(GOAL)
    assert [e.kind for e in stored] == [ROW_KIND] * 303
    # Every row verbatim, archived rows with their archive fields included.
    payloads = [e.payload for e in stored]
    assert sorted(payloads, key=json.dumps) == sorted(public_rows(), key=json.dumps)
    assert sum(1 for p in payloads if p.get("archive_state") == "archived" and p.get("archived_at")) == 193
    instants = [utc_instant(p["recorded_at"]) for p in payloads]
    assert instants == sorted(instants)

    again = invoke(ledger_url, "import-loopx", "--goal", GOAL, "--format", "json", str(PUBLIC))
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["events_appended"] == 0
    assert json.loads(again.stdout)["events_already_present"] == 303
    assert ledger.event_count() == 303
    audit = invoke(ledger_url, "audit", "--format", "json")
    assert audit.exit_code == 0 and json.loads(audit.stdout)["ok"], audit.output


def test_rows_recorded_at_the_same_instant_keep_file_order(tmp_path):
    rows = [
        row("r-late", "2026-06-20T12:00:01+08:00"),
        row("r-tie-a", "2026-06-20T12:00:00+08:00"),
        row("r-early", "2026-06-20T03:00:00Z"),
        row("r-tie-b", "2026-06-20T04:00:00+00:00"),  # the same instant as r-tie-a, another offset
    ]
    plan = plan_import(str(run_ledger(tmp_path, rows)), GOAL)
    assert [e.payload["run_id"] for e in plan.events] == ["r-early", "r-tie-a", "r-tie-b", "r-late"]


def test_identical_rows_are_taken_once_and_counted(tmp_path):
    twice = row("r1", "2026-06-20T12:00:00+08:00")
    plan = plan_import(str(run_ledger(tmp_path, [twice, copy.deepcopy(twice), row("r2", "2026-06-21T12:00:00+08:00")])), GOAL)
    assert (plan.rows_read, plan.duplicate_rows, len(plan.events), plan.refused) == (3, 1, 2, [])


def test_refused_rows_are_all_listed_and_nothing_is_written(ledger, ledger_url, tmp_path):
    rows = [
        row("ok-1", "2026-06-20T12:00:00+08:00"),
        row("local-path", "2026-06-20T12:01:00+08:00", notes="rerun from /Users/alice/tb2/jobs/db-wal after fixing setup"),
        row("secret", "2026-06-20T12:02:00+08:00", next_action="retry with token=abcdef0123456789abcdef"),
        row("naive-time", "2026-06-20T12:03:00"),
        {k: v for k, v in row("no-run-id", "2026-06-20T12:04:00+08:00").items() if k != "run_id"},
    ]
    path = run_ledger(tmp_path, rows)
    document = json.loads(path.read_text())
    misfiled = row("misfiled", "2026-06-20T12:05:00+08:00", case_id="another-case")
    document["benchmarks"]["terminal-bench@2.0"]["cases"]["db-wal-recovery"]["runs"].append(misfiled)
    path.write_text(json.dumps(document))

    result = invoke(ledger_url, "import-loopx", "--goal", GOAL, "--format", "json", str(path))
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["ok"] is False and report["events_appended"] == 0 and report["rows_read"] == 6
    reasons = {r["source"].rsplit(".", 1)[-1]: r["reason"] for r in report["refused"]}
    assert set(reasons) == {"runs[1]", "runs[2]", "runs[3]", "runs[4]", "runs[5]"}
    # (the store's guard names the field and the rule, never the text)
    assert reasons["runs[1]"] == f"$.notes of this {ROW_KIND} holds {guard_what('loopx-local-path')} [loopx-local-path]"
    assert reasons["runs[2]"] == f"$.next_action of this {ROW_KIND} holds {guard_what('loopx-secret')} [loopx-secret]"
    assert "not an ISO-8601 time with a UTC offset" in reasons["runs[3]"]
    assert reasons["runs[4]"] == "run_id is missing or not a non-empty string"
    assert "filed under 'terminal-bench@2.0' / 'db-wal-recovery'" in reasons["runs[5]"]
    assert all(r["source"].startswith(f"{path}: benchmarks[terminal-bench@2.0].cases[db-wal-recovery]") for r in report["refused"])
    assert "error: " in result.stderr and "/Users/alice" not in json.dumps([e.payload for e in ledger.read_all()])
    assert row_counts(ledger_url)["events"] == 0


@pytest.mark.parametrize(
    "content, reason",
    [
        ({"schema_version": "benchmark_run_v0"}, "not a LoopX run ledger (schema_version is 'benchmark_run_v0'"),
        ({"schema_version": "benchmark_run_ledger_v0", "benchmarks": []}, "benchmarks is not an object"),
        (None, "No such file or directory"),
    ],
)
def test_unreadable_input_names_the_file(ledger, ledger_url, tmp_path, content, reason):
    path = tmp_path / "input.json"
    if content is not None:
        path.write_text(json.dumps(content))
    result = invoke(ledger_url, "import-loopx", "--goal", GOAL, str(path))
    assert result.exit_code == 2
    assert f"{path}: {reason}" in result.stderr
    assert row_counts(ledger_url)["events"] == 0


def test_dry_run_reports_and_writes_nothing(ledger, ledger_url, tmp_path):
    result = invoke(ledger_url, "import-loopx", "--goal", GOAL, "--dry-run", "--format", "json",
                    str(run_ledger(tmp_path, [row("r1", "2026-06-20T12:00:00+08:00")])))
    assert result.exit_code == 0
    assert json.loads(result.stdout)["events_appended"] == 1 and json.loads(result.stdout)["dry_run"] is True
    assert row_counts(ledger_url)["events"] == 0


# -- a LoopX runtime history folder ----------------------------------------------------


def pair_document(name: str) -> dict:
    return json.loads((PAIR / name).read_text(encoding="utf-8"))


def history_record(generated_at: str, classification: str, **embedded) -> dict:
    """A per-run record as `loopx history` writes it (spec baseline-failure-gate.md §7)."""
    return {
        "generated_at": generated_at,
        "goal_id": "tb2-db-wal",
        "classification": classification,
        "recommended_action": "review the paired claim",
        "health_check": f"{classification} compact event public-safe",
        **embedded,
    }


def write_history(root: Path, records: list[tuple[str, dict]], extra_lines: list[str] = ()) -> Path:
    """A runtime root: goals/tb2-db-wal/runs/<stem>.json records, their .md views, and index.jsonl rows.

    Index rows name the record by the absolute path of the machine that wrote
    it, as LoopX does; an empty stem puts the record in the index row itself.
    """
    runs = root / "goals" / "tb2-db-wal" / "runs"
    runs.mkdir(parents=True)
    lines = []
    for stem, record in records:
        if not stem:
            lines.append(json.dumps(record))
            continue
        (runs / f"{stem}.json").write_text(json.dumps(record, indent=2), encoding="utf-8")
        (runs / f"{stem}.md").write_text(f"# {record['classification']}\n", encoding="utf-8")
        where = f"/Users/operator/.loopx/runtime/goals/tb2-db-wal/runs/{stem}"
        index_row = {key: record[key] for key in ("generated_at", "goal_id", "classification", "recommended_action")}
        lines.append(json.dumps({**index_row, "json_path": f"{where}.json", "markdown_path": f"{where}.md"}))
    (runs / "index.jsonl").write_text("".join(f"{line}\n" for line in [*lines, *extra_lines]), encoding="utf-8")
    return runs / "index.jsonl"


def realistic_history(root: Path) -> Path:
    baseline = history_record("2026-11-24T10:15:00+08:00", "benchmark_run_v0", benchmark_run=pair_document("run-1.json"))
    treatment = history_record("2026-11-24T12:40:00+08:00", "benchmark_run_v0", benchmark_run=pair_document("run-2.json"))
    comparison = history_record(
        "2026-11-24T13:05:00+08:00", "benchmark_comparison_v0",
        benchmark_comparison=pair_document("comparison.json"), benchmark_run=pair_document("run-2.json"),
    )
    gate = history_record("2026-11-24T13:10:00+08:00", "operator_gate_approved", operator_gate={"gate": "publish_claim", "decision": "approve"})
    index = write_history(root, [("20261124T101500-baseline", baseline), ("20261124T124000-treatment", treatment),
                                 ("20261124T130500-comparison", comparison), ("", gate)])
    # The known LoopX problem: the treatment's index line appended twice.
    lines = index.read_text().splitlines()
    index.write_text("\n".join([lines[0], lines[1], lines[1], *lines[2:]]) + "\n")
    return index


def test_history_folder_artifacts_become_ordinary_events_once(ledger, ledger_url, tmp_path):
    realistic_history(tmp_path / "runtime")
    result = invoke(ledger_url, "import-loopx", "--goal", "tb2-db-wal", "--format", "json", str(tmp_path / "runtime"))
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert {k: report[k] for k in ("source_format", "rows_read", "duplicate_rows", "rows_without_artifacts", "refused")} == {
        "source_format": "loopx_runtime_history", "rows_read": 5, "duplicate_rows": 1, "rows_without_artifacts": 1, "refused": [],
    }
    stored = ledger.read_goal("tb2-db-wal")
    # baseline run + batch, treatment run + batch, comparison + batch (its treatment run is already there).
    assert [e.kind for e in stored] == ["run", "ingest_batch", "run", "ingest_batch", "comparison", "ingest_batch"]
    assert report["events_appended"] == 6 and report["events_already_present"] == 1
    assert stored[0].payload == normalize("run", pair_document("run-1.json"))
    assert stored[4].payload == normalize("comparison", pair_document("comparison.json"))
    # The record holding a comparison and its run is one batch: its claim review is materialized.
    claim = ledger.projection_rows(goal_id="tb2-db-wal", projection="review-claim")
    assert [r["key"] for r in claim] == [stored[5].event_id]

    again = invoke(ledger_url, "import-loopx", "--goal", "tb2-db-wal", "--format", "json", str(tmp_path / "runtime"))
    assert json.loads(again.stdout)["events_appended"] == 0
    # A file is its own source document: the run file ingested by hand is another observation
    # than the run its history record embeds (docs/hash-chain.md, "the same artifact").
    ingest = invoke(ledger_url, "ingest", "--goal", "tb2-db-wal", "--format", "json", str(PAIR / "run-1.json"))
    assert [e["status"] for e in json.loads(ingest.stdout)["events"]] == ["appended"]
    assert invoke(ledger_url, "audit").exit_code == 0


def test_a_history_record_whose_artifacts_an_earlier_batch_groups_records_no_batch(ledger, ledger_url, tmp_path):
    """As for `ingest`: the treatment's own record, after the comparison's record that holds it, would be a batch whose
    reviews, without the comparison, became the goal's latest."""
    comparison = history_record(
        "2026-11-24T13:05:00+08:00", "benchmark_comparison_v0",
        benchmark_comparison=pair_document("comparison.json"), benchmark_run=pair_document("run-2.json"),
    )
    treatment = history_record("2026-11-24T13:06:00+08:00", "benchmark_run_v0", benchmark_run=pair_document("run-2.json"))
    write_history(tmp_path / "runtime", [("20261124T130500-comparison", comparison), ("20261124T130600-treatment", treatment)])

    report = json.loads(invoke(ledger_url, "import-loopx", "--goal", "tb2-db-wal", "--format", "json", str(tmp_path / "runtime")).stdout)

    stored = ledger.read_goal("tb2-db-wal")
    assert [e.kind for e in stored] == ["run", "comparison", "ingest_batch"]
    assert (report["events_appended"], report["events_already_present"]) == (3, 2)  # the run again, and the batch holding it


@pytest.mark.parametrize("where", ["runtime", "runtime/goals/tb2-db-wal", "runtime/goals/tb2-db-wal/runs", "runtime/goals/tb2-db-wal/runs/index.jsonl"])
def test_history_path_may_name_the_root_the_goal_the_runs_folder_or_the_index(tmp_path, where):
    realistic_history(tmp_path / "runtime")
    plan = plan_import(str(tmp_path / where), "any-goal")
    assert (plan.rows_read, plan.duplicate_rows) == (5, 1)
    assert [[a.kind for a in batch] for batch in plan.batches] == [["run"], ["run"], ["run", "comparison"]]  # a batch a record


def test_a_runtime_root_with_several_goals_needs_one_named(tmp_path):
    realistic_history(tmp_path / "runtime")
    other = tmp_path / "runtime" / "goals" / "other-goal" / "runs"
    other.mkdir(parents=True)
    (other / "index.jsonl").write_text("")
    assert plan_import(str(tmp_path / "runtime"), "tb2-db-wal").rows_read == 5
    assert plan_import(str(tmp_path / "runtime"), "other-goal").rows_read == 0
    result = invoke(f"sqlite:///{tmp_path / 'l.sqlite'}", "import-loopx", "--goal", "third", str(tmp_path / "runtime"))
    assert result.exit_code == 2
    assert "several LoopX goals (other-goal, tb2-db-wal)" in result.stderr


def test_bad_history_rows_are_all_refused_and_nothing_is_written(ledger, ledger_url, tmp_path):
    comparison = pair_document("comparison.json")
    comparison.pop("schema_version")
    records = [
        ("20261124T101500-baseline", history_record("2026-11-24T10:15:00+08:00", "benchmark_run_v0", benchmark_run=pair_document("run-1.json"))),
        ("20261124T110000-comparison", history_record("2026-11-24T11:00:00+08:00", "benchmark_comparison_v0", benchmark_comparison=comparison)),
        ("20261124T120000-lost", history_record("2026-11-24T12:00:00+08:00", "benchmark_run_v0", benchmark_run=pair_document("run-2.json"))),
    ]
    index = write_history(tmp_path / "runtime", records, extra_lines=["{not json", "[1, 2]"])
    (index.parent / "20261124T120000-lost.json").unlink()
    result = invoke(ledger_url, "import-loopx", "--goal", "tb2-db-wal", "--format", "json", str(index))
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    refused = {r["source"].rsplit(":", 1)[-1]: r["reason"] for r in report["refused"]}
    assert set(refused) == {"2", "3", "4", "5"}
    assert refused["2"].startswith("not a compactable comparison artifact")
    assert refused["3"].startswith("the run record 20261124T120000-lost.json that json_path names is not in")
    assert refused["4"].startswith("invalid JSON")
    assert refused["5"] == "an index row must be a JSON object"
    assert row_counts(ledger_url)["events"] == 0


def test_a_record_holding_a_local_path_that_compaction_keeps_is_refused(ledger, tmp_path):
    # Lifecycle-free history: a claim review is stored as given, so the store's guard must catch the path.
    review = {"schema_version": "benchmark_claim_review_v0", "decision": {"next_action": "open /home/alice/notes.md"}}
    index = write_history(tmp_path / "runtime", [("", review | {"classification": "benchmark_claim_review_v0"})])
    report = import_plan(ledger, "g", plan_import(str(tmp_path / "runtime"), "g"))
    assert report.ok is False and report.appended == 0 and ledger.event_count() == 0
    assert report.plan.refused == [
        {"source": f"{index}:1", "reason": f"$.decision.next_action of this claim-review holds {guard_what('posix-local-path')} [posix-local-path]"}
    ]


def test_history_rows_without_json_path_records_are_the_records(tmp_path):
    record = history_record("2026-11-24T10:15:00+08:00", "benchmark_run_v0", benchmark_run=pair_document("run-1.json"))
    index = write_history(tmp_path / "runtime", [("", record), ("", record)])
    plan = plan_import(str(index), "g")
    assert (plan.rows_read, plan.duplicate_rows, [[a.kind for a in batch] for batch in plan.batches]) == (2, 1, [["run"]])


# -- regular files only, read a line at a time ----------------------------------------------


@pytest.mark.parametrize("where", ["index-fifo", "index-dev-zero", "record-fifo", "ledger-dev-zero", "ledger-fifo"])
def test_fifos_and_devices_are_refused_by_name_without_hanging(ledger, ledger_url, tmp_path, where):
    import os
    import time

    index = realistic_history(tmp_path / "runtime")
    if where.startswith("index"):
        index.unlink()
        os.mkfifo(index) if where == "index-fifo" else index.symlink_to("/dev/zero")
        path, named = index.parent.parent, index
    elif where == "record-fifo":
        record = index.parent / "20261124T101500-baseline.json"
        record.unlink()
        os.mkfifo(record)
        path, named = index.parent.parent, record
    else:
        path = named = tmp_path / "benchmark-run-ledger.json"
        os.mkfifo(path) if where == "ledger-fifo" else path.symlink_to("/dev/zero")
    started = time.monotonic()
    result = invoke(ledger_url, "import-loopx", "--goal", GOAL, str(path))
    assert time.monotonic() - started < 30
    assert result.exit_code in (1, 2), result.output
    assert f"{named}: not a regular file (devices, FIFOs and sockets are not read)" in result.stderr
    assert row_counts(ledger_url)["events"] == 0


def test_an_index_over_the_limit_is_refused_while_reading(ledger, ledger_url, tmp_path, monkeypatch):
    from benchledger.ledger.service import loopx_import

    index = realistic_history(tmp_path / "runtime")
    monkeypatch.setattr(loopx_import, "MAX_NDJSON_BYTES", index.stat().st_size - 10)
    result = invoke(ledger_url, "import-loopx", "--goal", GOAL, str(index))
    assert result.exit_code == 2 and f"{index}: file is" in result.stderr and "-byte limit" in result.stderr
    assert row_counts(ledger_url)["events"] == 0


# -- an un-archive is honoured ----------------------------------------------------------------


def test_a_row_unarchived_in_a_newer_ledger_file_is_current_again(ledger, ledger_url, tmp_path):
    live = row("run-1", "2026-11-20T10:00:00+08:00")
    archived = {**live, "archive_state": "archived", "archived_at": "2026-11-21T09:00:00+08:00", "archive_reason": "superseded"}
    other = row("run-2", "2026-11-22T10:00:00+08:00", arm_id="codex_goal_mode_treatment")

    def archived_flags() -> dict[str, bool]:
        result = invoke(ledger_url, "runs", "--goal", GOAL, "--format", "json")
        assert result.exit_code == 0, result.output
        return {v["run_id"]: v["archived"] for v in json.loads(result.stdout)["runs"]}

    steps = [
        (run_ledger(tmp_path, [live], "v1.json"), {"run-1": False}),
        (run_ledger(tmp_path, [archived], "v2.json"), {"run-1": True}),
        # LoopX un-archives the run and records another one: the row is v1's again, in a newer file.
        (run_ledger(tmp_path, [live, other], "v3.json"), {"run-1": False, "run-2": False}),
    ]
    for path, expected in steps:
        result = invoke(ledger_url, "import-loopx", "--goal", GOAL, "--format", "json", str(path))
        assert result.exit_code == 0, result.output
        assert archived_flags() == expected
    current = json.loads(invoke(ledger_url, "runs", "--goal", GOAL, "--current", "--format", "json").stdout)["current_runs"]
    assert {e["current"]["run_id"] for e in current if e["current"]} == {"run-1", "run-2"}
    # Importing the newest file again appends nothing; the ledger still audits clean.
    again = json.loads(invoke(ledger_url, "import-loopx", "--goal", GOAL, "--format", "json", str(steps[-1][0])).stdout)
    assert again["events_appended"] == 0 and archived_flags() == {"run-1": False, "run-2": False}
    assert invoke(ledger_url, "audit").exit_code == 0
    # And archiving it once more is honoured too.
    result = invoke(ledger_url, "import-loopx", "--goal", GOAL, "--format", "json", str(run_ledger(tmp_path, [archived, other], "v4.json")))
    assert json.loads(result.stdout)["events_appended"] == 1 and archived_flags() == {"run-1": True, "run-2": False}


def test_the_reports_failure_label_chart_counts_the_public_ledgers_current_rows_by_hand(ledger, ledger_url):
    """The goal page's failure labels of an imported LoopX ledger are its rows' own ``failure_labels``, per arm (D-MODE
    spelling of arm_id, else mode), archived rows left out: a count by hand of the JSON (it drew none before)."""
    from benchledger.ledger.read import report_views

    assert invoke(ledger_url, "import-loopx", "--goal", GOAL, str(PUBLIC)).exit_code == 0
    want: dict[tuple[str, str], int] = {}
    for found in public_rows():
        if found.get("archive_state") == "archived" or found.get("archived_at"):
            continue
        arm = (found.get("arm_id") or found.get("mode")).strip().lower().replace("_", "-")
        for label in found.get("failure_labels") or []:
            want[(label, arm)] = want.get((label, arm), 0) + 1
    assert sum(want.values()) > 50  # (the public ledger labels most of its failed runs)
    got = {(c["label"], c["arm"]): c["runs"] for c in report_views.goal_runs(ledger, [GOAL])["failure_labels"][GOAL]}
    assert got == want
