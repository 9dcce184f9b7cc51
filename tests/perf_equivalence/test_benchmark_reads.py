"""The read benchmarks run end to end on small ledgers and print every row they promise (benchmarks/README.md)."""

from __future__ import annotations

import pytest

from benchmarks import reads, serve_pages
from tests.conftest import POSTGRES_URL


def test_reads_benchmark_prints_latency_ratios_and_peak_memory(tmp_path, capsys):
    assert reads.main(["--events", "300", "--small-events", "60", "--repeat", "3", "--ledger", str(tmp_path / "reads.sqlite")]) == 0
    out = capsys.readouterr().out
    for row in ("| `history --limit 50` |", "| `show` |", "| `history` |", "| `replay` |", "| `audit` |", "| `export` |"):
        assert row in out
    assert "lifecycle steps" in out


def test_reads_benchmark_runs_on_postgresql_in_a_schema_it_drops(capsys):
    if not POSTGRES_URL:
        pytest.skip("BENCHLEDGER_TEST_POSTGRES_URL is not set")
    assert reads.main(["--postgres-url", POSTGRES_URL, "--events", "300", "--small-events", "60", "--repeat", "3"]) == 0
    out = capsys.readouterr().out
    assert "| read (in process, PostgreSQL, view + json.dumps) |" in out and "| `audit` |" in out


def test_serve_benchmark_fetches_the_index_and_the_goal_page(tmp_path, capsys):
    ledger = str(tmp_path / "serve.sqlite")
    assert serve_pages.main(["--events", "2000", "--goal-events", "300", "--repeat", "2", "--ledger", ledger]) == 0
    out = capsys.readouterr().out
    assert "| index |" in out and "| goal page (" in out
