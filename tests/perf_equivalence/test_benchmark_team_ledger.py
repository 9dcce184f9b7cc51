"""benchmarks/team_ledger.py measures what it says: a new attempt per ingest, the growth class its ratio reads as,
and its ledgers in databases of their own on the server, dropped at the end."""

from __future__ import annotations

import argparse
import json
import os

import pytest
from sqlalchemy import create_engine, text

from benchledger.ledger.storage.engine import normalize_url
from benchmarks import team_ledger as bench
from benchmarks.harness import PostgresBackend


def test_each_ingest_is_a_new_attempt_of_three_documents(tmp_path):
    attempts = bench.attempt_files(tmp_path, 4, seed=5)
    assert len(attempts) == 4 and all(len(files) == 3 for files in attempts)
    documents = [[json.loads(path.read_bytes()) for path in files] for files in attempts]
    assert [[d["schema_version"] for d in attempt] for attempt in documents] == [
        ["benchmark_run_v0", "benchmark_run_v0", "benchmark_comparison_v0"]
    ] * 4
    contents = [path.read_bytes() for files in attempts for path in files]
    assert len(set(contents)) == len(contents)  # fresh documents each time: no ingest is an idempotent no-op


@pytest.mark.parametrize(("ratio", "growth"), [(0.9, "flat"), (1.49, "flat"), (1.5, "sub-linear (log)"), (4.9, "sub-linear (log)"), (5.0, "linear"), (11.0, "linear")])
def test_the_growth_class_reads_the_ratio_against_ten_times_the_events(ratio, growth):
    assert bench.growth_class(ratio, 10.0) == growth


def test_a_size_is_built_and_measured_in_a_database_of_its_own_dropped_at_the_end(tmp_path):
    server = os.environ.get("BENCHLEDGER_TEST_POSTGRES_URL")
    if not server:
        pytest.skip("BENCHLEDGER_TEST_POSTGRES_URL is not set")
    args = argparse.Namespace(repeat=1, heavy_repeat=1, jobs=1, templates=2, seed=3, keep=False, json=None, only=None)
    backend = PostgresBackend(server)
    backend.prefix = f"bench_team_test_{os.getpid()}"
    try:
        size = bench.one_size(backend, 60, args, bench.attempt_files(tmp_path, 1, seed=4))
        args.only = {"show", "serve"}
        some = bench.one_size(backend, 60, args, bench.attempt_files(tmp_path, 1, seed=5))
    finally:
        backend.cleanup()
    assert size["events"] >= 60 and size["goals"] >= 2
    commands = size["commands"]
    assert {"ingest (one attempt)", "history --limit 50", "show", "goals", "runs --summary", "compare", "audit", "replay", "export",
            "serve index (start + first fetch)", "serve index (warm fetch)"} <= set(commands)
    assert all(entry["median"] > 0 for entry in commands.values())
    assert set(some["commands"]) == {bench.FLOOR, "show", "serve index (start + first fetch)", "serve index (warm fetch)"}
    admin = create_engine(normalize_url(server))
    with admin.connect() as connection:
        left = connection.execute(text("SELECT datname FROM pg_database WHERE datname LIKE :name"), {"name": f"{backend.prefix}%"}).all()
    admin.dispose()
    assert left == []
