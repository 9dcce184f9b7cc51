"""The walk of session 37, as a user types it: ``ingest-batches`` with ``--jobs 2`` (one fold worker beside the writer, the
default on two cores), the same file again, a copy of it made again, then the typical mistakes, on both backends."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import invoke, row_counts

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"
RUNS = [json.loads((DEMO / n).read_text()) for n in ("04-run-baseline.json", "05-run-treatment.json", "06-comparison.json")]


def _file(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _json(result) -> dict:
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def test_a_file_again_and_a_copy_of_it_append_nothing_and_the_ledger_replays_to_itself(migrated_url, tmp_path):
    lines = [{"goal_id": f"tb-walk-{name}", "kind": None, "artifacts": RUNS} for name in ("alpha", "omega")]
    first = _json(invoke(migrated_url, "ingest-batches", "--jobs", "2", "--format", "json", str(_file(tmp_path / "a.ndjson", lines))))
    assert (first["appended"], first["transactions"]) == (6, 1)

    again = _json(invoke(migrated_url, "ingest-batches", "--jobs", "2", "--format", "json", str(tmp_path / "a.ndjson")))
    copy = _json(invoke(migrated_url, "ingest-batches", "--jobs", "1", "--format", "json", str(_file(tmp_path / "b.ndjson", lines))))

    for report in (again, copy):
        assert (report["appended"], report["duplicates"], report["transactions"]) == (0, 6, 0)
    assert _json(invoke(migrated_url, "audit", "--format", "json"))["ok"] is True
    assert _json(invoke(migrated_url, "replay", "--format", "json"))["rows_changed"] == 0


def test_the_typical_mistakes_are_one_line_each_and_write_nothing(migrated_url, tmp_path):
    stored = _file(tmp_path / "first.ndjson", [{"goal_id": "tb-walk-alpha", "kind": None, "artifacts": RUNS}])
    assert invoke(migrated_url, "ingest-batches", str(stored)).exit_code == 0
    before = row_counts(migrated_url)
    leaked = {**RUNS[0], "job_name": "/home/alice/jobs/run-7.json"}
    mistakes = {
        "wrong kind": ([{"goal_id": "tb-walk-beta", "kind": "comparison", "artifacts": RUNS[:1]}], "contradicts its schema_version"),
        "a local path": ([{"goal_id": "tb-walk-beta", "kind": None, "artifacts": [leaked]}], "holds a local path"),
        "a goal one typo away": ([{"goal_id": "tb-walk-alpah", "kind": None, "artifacts": RUNS[:1]}], "did you mean 'tb-walk-alpha'"),
    }
    for name, (lines, said) in mistakes.items():
        result = invoke(migrated_url, "ingest-batches", "--jobs", "2", str(_file(tmp_path / f"{name}.ndjson", lines)))
        assert result.exit_code == 1 and said in result.stderr and "Traceback" not in result.output, name
        assert row_counts(migrated_url) == before, name

    unknown = invoke(migrated_url, "history", "tb-walk-nope")
    assert unknown.exit_code == 2 and unknown.stderr.strip().count("\n") == 0 and "no goal 'tb-walk-nope'" in unknown.stderr
    broken = invoke("postgresql://postgres@127.0.0.1:1/nope", "ingest-batches", str(stored))
    assert broken.exit_code == 2 and "cannot use the ledger at postgresql://postgres@127.0.0.1:1/nope" in broken.stderr
    assert "Traceback" not in broken.output and row_counts(migrated_url) == before
