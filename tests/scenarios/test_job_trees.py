"""Real job trees and real files, as a user brings them in, on both backends (issue #28, items 11-13; #30.14).

A job tree holds more than artifacts (a ``job-summary.json``), files come
gzipped (``run.json.gz``), a backlog's lines carry different ``"source"``
labels, and a batch can be far larger than any review needs: each is a CLI
call as a user types it.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from tests.helpers import invoke, row_counts

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo"


def _demo(name: str) -> dict:
    return json.loads((DEMO / name).read_text())


def _json(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _run(task: str) -> dict:
    return {**_demo("04-run-baseline.json"), "task_id": task}


def _exported(url) -> list[dict]:
    """The ledger's events as ``export`` writes them (the trailer left out)."""
    lines = [json.loads(line) for line in invoke(url, "export").stdout.splitlines()]
    return [line for line in lines if "event_id" in line]


# -- ingest-batches: transactions by size, whatever the lines' sources ------------------------------


def test_lines_of_alternating_sources_share_transactions(migrated_url, tmp_path):
    """docs/cli.md: "transactions of about 500 artifacts"; a new transaction at every change of "source" made 3,600 of 14,400 artifacts."""
    lines = [{"goal_id": f"g{i % 2}", "kind": None, "source": f"harvest-{i % 3}", "artifacts": [_run(f"t{i}")]} for i in range(30)]
    path = tmp_path / "backlog.ndjson"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))

    report = _json(invoke(migrated_url, "ingest-batches", str(path), "--format", "json"))

    assert (report["batches"], report["appended"], report["transactions"]) == (30, 30, 1)
    sources = {(e["goal_id"], e["kind"], e["source"]) for e in _exported(migrated_url)}
    assert sources == {(f"g{i % 2}", kind, f"harvest-{i % 3}") for i in range(30) for kind in ("run", "ingest_batch")}
    assert _json(invoke(migrated_url, "audit", "--format", "json"))["ok"] is True


def test_transactions_are_cut_by_size_only(migrated_url, tmp_path, monkeypatch):
    from benchledger.ledger.service import bulk

    monkeypatch.setattr(bulk, "TRANSACTION_ARTIFACTS", 4)
    # batches of 1, 2 and 3 artifacts, each line another source: 1+2 | 3 | 1+2 | 3 | ...
    lines = [
        {"goal_id": "g", "kind": None, "source": f"s{i}", "artifacts": [_run(f"t{i}-{n}") for n in range(1 + i % 3)]} for i in range(9)
    ]
    path = tmp_path / "backlog.ndjson"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))

    report = _json(invoke(migrated_url, "ingest-batches", str(path), "--format", "json"))

    assert (report["artifacts"], report["transactions"]) == (18, 6)


def test_a_gzip_backlog_is_read_decompressed(migrated_url, tmp_path):
    path = tmp_path / "backlog.ndjson.gz"
    path.write_bytes(gzip.compress(b"".join(json.dumps({"goal_id": "g", "kind": None, "artifacts": [_run(f"t{i}")]}).encode() + b"\n" for i in range(3))))

    report = _json(invoke(migrated_url, "ingest-batches", str(path), "--format", "json"))

    assert (report["batches"], report["appended"]) == (3, 3)


# -- gzip files: read as such, limits on what they decompress to ------------------------------------


def test_a_gzip_file_is_the_document_it_holds(migrated_url, tmp_path):
    job = tmp_path / "jobs" / "job-1"
    job.mkdir(parents=True)
    document = json.dumps(_run("t1")).encode()
    (job / "run.json.gz").write_bytes(gzip.compress(document))
    (job / "more.ndjson.gz").write_bytes(gzip.compress(b"".join(json.dumps(_run(f"t{n}")).encode() + b"\n" for n in (2, 3))))
    plain = tmp_path / "run.json"
    plain.write_bytes(document)

    tree = _json(invoke(migrated_url, "ingest", "--goal", "g", "--batch-per-directory", str(tmp_path / "jobs"), "--format", "json"))
    again = _json(invoke(migrated_url, "ingest", "--goal", "g", str(plain), "--format", "json"))
    piped = _json(invoke(migrated_url, "ingest", "--goal", "h", "-", "--format", "json", input=gzip.compress(document)))

    assert [Path(e["source"]).name for e in tree["events"]] == ["more.ndjson.gz:1", "more.ndjson.gz:2", "run.json.gz"]
    assert tree["appended_count"] == 3
    # the same bytes, compressed or not, are the same observation (the source hash is the decompressed bytes')
    assert (again["appended_count"], again["duplicate_count"]) == (0, 1)
    assert piped["appended_count"] == 1


def test_a_zip_bomb_is_refused_naming_the_limit(migrated_url, tmp_path):
    bomb = tmp_path / "run.json.gz"
    bomb.write_bytes(gzip.compress(b'{"schema_version": "benchmark_run_v0", "job_name": "' + b"x" * (5 * 1024 * 1024) + b'"}'))
    assert bomb.stat().st_size < 64 * 1024  # (small on disk: only what it decompresses to is over the limit)

    result = invoke(migrated_url, "ingest", "--goal", "g", str(bomb))

    assert result.exit_code == 1
    assert f"error: {bomb}: decompressed file is larger than the 4194304-byte limit" in result.stderr
    assert row_counts(migrated_url)["events"] == 0


def test_a_gzip_ndjson_counts_its_limit_on_the_decompressed_bytes(migrated_url, tmp_path, monkeypatch):
    from benchledger.ledger.service.intake import files

    monkeypatch.setattr(files, "MAX_NDJSON_BYTES", 4096)
    lines = b"".join(json.dumps(_run(f"t{n}")).encode() + b"\n" for n in range(10))
    path = tmp_path / "runs.ndjson.gz"
    path.write_bytes(gzip.compress(lines))
    assert path.stat().st_size < 4096 < len(lines)

    result = invoke(migrated_url, "ingest", "--goal", "g", str(path))

    assert result.exit_code == 1 and "decompressed file is larger than the 4096-byte limit" in result.stderr
    assert row_counts(migrated_url)["events"] == 0


def test_a_broken_gzip_file_is_one_refusal(migrated_url, tmp_path):
    whole = gzip.compress(json.dumps(_run("t1")).encode())
    (tmp_path / "truncated.json.gz").write_bytes(whole[: len(whole) // 2])

    result = invoke(migrated_url, "ingest", "--goal", "g", str(tmp_path / "truncated.json.gz"))

    assert result.exit_code == 1
    assert "truncated.json.gz: not a readable gzip file (Compressed file ended before the end-of-stream marker was reached)" in result.stderr
    assert row_counts(migrated_url)["events"] == 0
