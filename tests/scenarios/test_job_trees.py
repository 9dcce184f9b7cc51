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
