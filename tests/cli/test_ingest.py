"""`benchledger ingest`: detection, normalization, batches, idempotency and refusals, on every backend."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchledger.cli.main import cli
from benchledger.ledger.storage.schema import metadata
from benchledger.ledger.storage.store import Store
from tests.conformance.cases import CORPUS
from tests.helpers import invoke, row_counts

FIXTURE = CORPUS / "cases" / "review-claim" / "claim-review-01"


@pytest.fixture
def artifacts(tmp_path) -> Path:
    folder = tmp_path / "run-artifacts"
    folder.mkdir()
    for name in ("comparison.json", "run-1.json", "run-2.json"):
        shutil.copy(FIXTURE / name, folder / name)
    return folder


def test_ingest_a_directory_as_one_batch(migrated_url, artifacts):
    result = invoke(migrated_url, "ingest", "--goal", "tb-demo", "--format", "json", str(artifacts))
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["ok"] is True and report["goal_id"] == "tb-demo"
    assert [e["kind"] for e in report["events"]] == ["comparison", "run", "run"]
    assert [e["status"] for e in report["events"]] == ["appended"] * 3
    assert [e["stream_version"] for e in report["events"]] == [1, 2, 3]
    assert report["appended_count"] == 3 and report["duplicate_count"] == 0
    ledger = Store.open(migrated_url)
    stored = ledger.read_goal("tb-demo")
    assert [e.kind for e in stored] == ["comparison", "run", "run", "ingest_batch"]
    batch = stored[-1]
    assert batch.event_id == report["batch_event_id"]
    assert [m["event_id"] for m in batch.payload["members"]] == [e["event_id"] for e in report["events"]]
    # provenance: the SHA-256 of the original bytes, not the bytes
    import hashlib

    assert stored[0].source_sha256 == hashlib.sha256((artifacts / "comparison.json").read_bytes()).hexdigest()


def test_ingesting_the_same_directory_twice_appends_nothing(migrated_url, artifacts):
    assert invoke(migrated_url, "ingest", "--goal", "g", str(artifacts)).exit_code == 0
    before = row_counts(migrated_url)
    result = invoke(migrated_url, "ingest", "--goal", "g", "--format", "json", str(artifacts))
    report = json.loads(result.stdout)
    assert result.exit_code == 0
    assert report["appended_count"] == 0 and report["duplicate_count"] == 3
    assert {e["status"] for e in report["events"]} == {"duplicate"}
    assert row_counts(migrated_url) == before


def test_a_new_batch_lists_members_already_in_the_goal(migrated_url, artifacts):
    invoke(migrated_url, "ingest", "--goal", "g", str(artifacts / "run-1.json"))
    result = invoke(migrated_url, "ingest", "--goal", "g", "--format", "json", str(artifacts / "run-1.json"), str(artifacts / "comparison.json"))
    report = json.loads(result.stdout)
    assert [e["status"] for e in report["events"]] == ["duplicate", "appended"]
    batch = Store.open(migrated_url).read_goal("g")[-1]
    assert batch.kind == "ingest_batch"
    assert [m["kind"] for m in batch.payload["members"]] == ["run", "comparison"]


def test_dry_run_validates_and_writes_nothing(migrated_url, artifacts):
    before = row_counts(migrated_url)
    result = invoke(migrated_url, "ingest", "--goal", "g", "--dry-run", "--format", "json", str(artifacts))
    assert result.exit_code == 0
    report = json.loads(result.stdout)
    assert report["dry_run"] is True and report["appended_count"] == 3
    assert row_counts(migrated_url) == before


def test_the_unit_of_work_is_what_the_command_runs_and_writes_only_on_commit(migrated_url, artifacts):
    """`Ingest` reports what `ingest --format json` prints (``as_dict``); as a context manager it commits when the block ends."""
    from benchledger.ledger.service.ingest import Ingest
    from benchledger.ledger.service.intake.files import expand_paths
    from benchledger.ledger.storage.store import LedgerError

    printed = json.loads(invoke(migrated_url, "ingest", "--goal", "g", "--dry-run", "--format", "json", str(artifacts)).stdout)
    ledger = Store.open(migrated_url)
    try:
        with Ingest(ledger, "cli ingest", dry_run=True) as dry:
            dry.add_files("g", expand_paths([str(artifacts)]))
        assert dry.outcome is not None and dry.outcome.as_dict() == printed
        with Ingest(ledger, "cli ingest") as unit:
            unit.add_files("g", expand_paths([str(artifacts)]))
            assert ledger.head("g") is None  # nothing is read or written before the commit
        assert unit.outcome is not None and unit.outcome.as_dict() == {**printed, "dry_run": False}
        assert [e.event_id for e in ledger.read_goal("g")] == [*(e["event_id"] for e in printed["events"]), printed["batch_event_id"]]
        with pytest.raises(LedgerError, match="committed"):
            unit.add("g", [])
    finally:
        ledger.close()


def test_public_safe_filter_drops_paths_and_tokens_from_free_text(migrated_url, tmp_path):
    comparison = json.loads((FIXTURE / "comparison.json").read_text())
    comparison["next_action"] = "rerun from /Users/alice/private/jobs/run-7 please"
    comparison["decision"] = {"why": "Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123"}
    path = tmp_path / "comparison.json"
    path.write_text(json.dumps(comparison))
    assert invoke(migrated_url, "ingest", "--goal", "g", str(path)).exit_code == 0
    (stored, _batch) = Store.open(migrated_url).read_goal("g")
    assert "next_action" not in stored.payload
    assert "why" not in stored.payload.get("decision", {})
    assert "/Users/alice" not in stored.payload_text and "abcdefghijklmnop" not in stored.payload_text


def _write(tmp_path: Path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


BAD_INPUTS = {
    "invalid-utf8": (b'{"schema_version": "benchmark_comparison_v0", "task_id": "\xff"}', "not valid UTF-8"),
    "invalid-json": (b'{"schema_version": ', "invalid JSON"),
    "not-an-object": (b"[1, 2, 3]", "cannot tell the artifact kind"),
    "unknown-schema": (b'{"schema_version": "something_else_v9"}', "cannot tell the artifact kind"),
    "missing-schema": (b'{"task_id": "x"}', "cannot tell the artifact kind"),
    "nan": (b'{"schema_version": "benchmark_comparison_v0", "official_task_score_delta": NaN}', "NaN is not valid JSON"),
    "bom": (b'\xef\xbb\xbf{"schema_version": "benchmark_comparison_v0", "task_id": "x"}', "byte-order mark"),
    "nul": (b'{"schema_version": "benchmark_comparison_v0", "task_id": "a\x00b"}', "NUL character"),
    "deep": (b'{"schema_version": "benchmark_comparison_v0", "x": ' + b"[" * 200 + b"]" * 200 + b"}", "nested deeper"),
    "not-compactable": (b'{"schema_version": "benchmark_comparison_v0"}', "not a compactable comparison"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_names_the_file_and_writes_nothing(migrated_url, artifacts, tmp_path, case):
    data, reason = BAD_INPUTS[case]
    bad = _write(tmp_path, f"{case}.json", data)
    before = row_counts(migrated_url)
    result = CliRunner().invoke(cli, ["--database-url", migrated_url, "ingest", "--goal", "g", "--format", "json", str(artifacts), bad])
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert report["ok"] is False
    assert [e["source"] for e in report["errors"]] == [bad]
    assert reason in report["errors"][0]["error"]
    assert f"error: {bad}: " in result.stderr
    assert row_counts(migrated_url) == before


def test_oversized_and_missing_files_are_refused(migrated_url, tmp_path):
    big = _write(tmp_path, "big.json", b'{"schema_version": "benchmark_comparison_v0", "task_id": "' + b"x" * (5 * 1024 * 1024) + b'"}')
    missing = str(tmp_path / "missing.json")
    result = invoke(migrated_url, "ingest", "--goal", "g", "--format", "json", big, missing)
    assert result.exit_code == 1
    errors = {e["source"]: e["error"] for e in json.loads(result.stdout)["errors"]}
    assert "larger than the" in errors[big]
    assert "No such file" in errors[missing]
    assert row_counts(migrated_url) == {t.name: 0 for t in metadata.sorted_tables}


def test_ndjson_errors_name_the_line(migrated_url, tmp_path):
    comparison = (FIXTURE / "comparison.json").read_text().replace("\n", "")
    path = _write(tmp_path, "batch.ndjson", (comparison + "\n\n{oops\n").encode())
    result = invoke(migrated_url, "ingest", "--goal", "g", "--format", "json", path)
    assert result.exit_code == 1
    assert json.loads(result.stdout)["errors"][0]["source"] == f"{path}:3"


def test_stdin_and_explicit_kind(migrated_url):
    preflight = {"schema_version": "benchmark_preflight_fixture_v0", "ready": True}
    result = invoke(migrated_url, "ingest", "--goal", "g", "--kind", "preflight", "--format", "json", "-", input=json.dumps(preflight))
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["events"][0]["kind"] == "preflight" and report["events"][0]["source"] == "<stdin>"


@pytest.mark.parametrize("goal", ["", "-x", "a b", "a/b", "x" * 122])
def test_invalid_goal_id_is_a_usage_error(migrated_url, artifacts, goal):
    result = CliRunner().invoke(cli, ["--database-url", migrated_url, "ingest", "--goal", goal, str(artifacts)])
    assert result.exit_code == 2
    assert "goal" in result.output.lower()


def test_symlink_loop_in_a_directory_is_not_followed(migrated_url, artifacts):
    (artifacts / "loop").symlink_to(artifacts, target_is_directory=True)
    result = invoke(migrated_url, "ingest", "--goal", "g", "--format", "json", str(artifacts))
    assert result.exit_code == 0
    assert json.loads(result.stdout)["appended_count"] == 3


def test_a_review_with_goal_refuses_nan_like_ingest_and_the_stateless_review_reads_it(migrated_url, tmp_path):
    run = json.loads((FIXTURE / "run-1.json").read_text())
    run["official_score"] = float("nan")
    path = tmp_path / "run-nan.json"
    path.write_text(json.dumps(run))  # writes NaN, as a careless runner might
    stateless = invoke(migrated_url, "benchmark", "review-runner-invariants", "--benchmark-run-json", str(path), "--format", "json")
    assert stateless.exception is None or isinstance(stateless.exception, SystemExit)
    assert json.loads(stateless.stdout)["schema_version"] == "benchmark_runner_invariant_review_v0"  # LoopX reads NaN too
    kept = invoke(migrated_url, "benchmark", "review-runner-invariants", "--goal", "g", "--benchmark-run-json", str(path))
    assert kept.exit_code == 1
    assert "$.official_score of this run is NaN or infinite; the ledger stores only finite numbers" in kept.output
    assert invoke(migrated_url, "ingest", "--goal", "g", str(path)).exit_code == 1
    engine = Store.open(migrated_url)
    try:
        assert engine.event_count() == 0
    finally:
        engine.close()
