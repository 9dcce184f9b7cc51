"""The ingest benchmarks run end to end on tiny inputs and print every row they promise (benchmarks/README.md):
benchmarks.run's bulk rows (``ingest-batches`` against the serial ceiling, the store alone against eventsourcing)
and benchmarks.growth's one-run-file ingest as a whole process."""

from __future__ import annotations

import json

import pytest

from benchledger.ledger.storage.store import Store
from benchmarks import growth, run
from benchmarks.contenders import HAVE_EVENTSOURCING
from tests.conftest import POSTGRES_URL


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_run_reports_ingest_batches_against_the_serial_ceiling_and_the_store_alone(backend, tmp_path, capsys):
    if backend == "postgresql" and not POSTGRES_URL:
        pytest.skip("BENCHLEDGER_TEST_POSTGRES_URL is not set")
    results = tmp_path / "results.json"
    argv = ["--quick", "--backends", backend, "--goals", "3", "--sizes", "300", "--workdir", str(tmp_path), "--json", str(results)]
    if POSTGRES_URL:
        argv += ["--postgres-url", POSTGRES_URL]
    assert run.main(argv) == 0
    out = capsys.readouterr().out
    assert "| 2. bulk ingest through `ingest-batches`" in out and "serial ceiling 1 / (1/n + 1/f + 1/p)" in out
    assert "| 2. bulk ingest through `ingest-batches --jobs 2`" in out and "`--jobs 1`, same run" in out
    assert "| 2. store-only append (normalized artifacts, projections off" in out
    if HAVE_EVENTSOURCING and backend == "sqlite":  # (on PostgreSQL it also needs eventsourcing's postgres extra)
        assert out.count("| 2. store-only append") == 2 and "eventsourcing not installed" not in out
    measured = json.loads(results.read_text())["backends"][backend]
    artifacts = measured["workload"]["artifacts"]
    # the ceiling does the three parts one after the other: it is slower than each of them alone
    fold_per_artifact = artifacts / measured["fold_only"]["seconds"]
    for alone in (measured["bulk_benchledger"]["normalize_events_per_s"], fold_per_artifact, measured["bulk_plain"]["events_per_s"]):
        assert measured["serial_ceiling"] < alone
    assert measured["ingest_batches"]["transactions"] >= 1 and measured["store_only"]["events_per_s"] > 0
    assert measured["ingest_batches_jobs2"]["transactions"] == measured["ingest_batches"]["transactions"]


def test_growth_ingests_one_run_file_as_a_process_into_the_grown_goal_and_fresh_goals(tmp_path, capsys):
    argv = ["--attempts", "20", "--measured-attempts", "2", "--process-reps", "2", "--replay-events", "300", "--workdir", str(tmp_path)]
    assert growth.main(argv) == 0
    out = capsys.readouterr().out
    assert "| `benchledger ingest` of one run file (subprocess, median of 2) | into a fresh goal | into the 20-attempt goal |" in out
    assert "| whole process, start to exit |" in out and "| `replay --jobs 2` |" in out
    ledger = Store.open(f"sqlite:///{tmp_path / 'growth.sqlite'}")
    try:
        goals = {head["goal_id"]: head["last_version"] for head in ledger.heads()}
    finally:
        ledger.close()
    # each run file went into a goal of its own (the run and its batch manifest), and into the grown goal
    assert goals["fresh-process-000"] == goals["fresh-process-001"] == 2
    assert {"grown-20", "fresh", "fresh-process-warm-up"} <= goals.keys()
