"""Session 38's bulk-intake defects, as a user types the commands, on both backends: what ``ingest`` and ``ingest-batches``
say of what they refused or wrote is the whole truth, and ``ingest-batches`` refuses before writing anything."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import invoke, row_counts

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"


def _demo(name: str) -> dict:
    return json.loads((DEMO / name).read_text())


def _file(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_ingest_refusing_more_files_than_it_lists_says_how_many_more_on_stdout_too(migrated_url, tmp_path):
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(1, 26):
        (folder / f"b{i:02}.json").write_text('{"schema_version":"benchmark_run_v0","x":NaN}')
    before = row_counts(migrated_url)

    result = invoke(migrated_url, "ingest", "--goal", "many-nans", str(folder))

    assert result.exit_code == 1 and "Traceback" not in result.output
    listed = [line for line in result.stdout.splitlines() if line.startswith("- ")]
    assert len(listed) == 21 and listed[-2].endswith("b20.json: NaN is not valid JSON (the ledger stores only finite numbers)")
    assert listed[-1] == "- ... and 5 more"
    assert result.stderr.splitlines()[-1] == "error: ... and 5 more"
    assert row_counts(migrated_url) == before


def test_ingest_batches_counts_the_ingest_batch_events_it_appends_beside_the_artifacts(migrated_url, tmp_path):
    run = _demo("05-run-treatment.json")
    path = _file(tmp_path / "five.ndjson", [{"goal_id": "five-runs", "kind": None, "artifacts": [{**run, "job_name": f"k{i}"}]} for i in range(5)])
    before = row_counts(migrated_url)["events"]

    result = invoke(migrated_url, "ingest-batches", str(path))

    assert result.exit_code == 0, result.output
    events = row_counts(migrated_url)["events"] - before
    assert events == 10  # (5 runs, and the 5 ingest_batch events grouping them)
    assert "- appended: 5 event(s); duplicates: 0 (artifacts; +5 ingest_batch event(s) grouping them: 10 in all)" in result.stdout
    info = invoke(migrated_url, "info")
    assert [line.split()[-1] for line in info.stdout.splitlines() if line.startswith("events")] == [str(before + events)]

    again = invoke(migrated_url, "ingest-batches", "--format", "json", str(path))
    report = json.loads(again.stdout)
    assert (report["appended"], report["batches_appended"], report["events_appended"], report["duplicates"]) == (0, 0, 0, 5)
    assert row_counts(migrated_url)["events"] - before == events
    plain = invoke(migrated_url, "ingest-batches", str(path)).stdout
    assert "- appended: 0 event(s); duplicates: 5; transactions: 0" in plain  # (nothing new: no batch event to mention)

    more = _file(tmp_path / "more.ndjson", [{"goal_id": "five-runs", "kind": None, "artifacts": [{**run, "job_name": f"m{i}"}]} for i in range(3)])
    report = json.loads(invoke(migrated_url, "ingest-batches", "--format", "json", str(more)).stdout)
    assert (report["appended"], report["batches_appended"], report["events_appended"]) == (3, 3, 6)
    assert row_counts(migrated_url)["events"] - before == events + report["events_appended"]
