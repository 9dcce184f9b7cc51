"""Where the store-only append spends its time: each stage timed in process, beside eventsourcing in the same transactions.

    .venv/bin/python -m benchmarks.store_stages                               # SQLite, the full workload (250 goals)
    .venv/bin/python -m benchmarks.store_stages --backend postgresql --goals 30

The store-only append is the one of ``benchmarks.run`` (normalized artifacts, ``Ingest(...,
materialize=False)``, ~500-artifact transactions). It runs ``--runs`` times, each into a fresh ledger
and followed by eventsourcing on the same transactions (interleaved: a machine whose load moves
moves both). Every stage is timed with ``perf_counter`` around the function that does it; a stage
called inside another is counted for the outer one only. The table is that of the median store-only
run, in microseconds an artifact (a batch adds its manifest, so there are more events than artifacts).
"""

from __future__ import annotations

import argparse
import collections
import functools
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy.engine

from benchledger.ledger.storage import append, canonical, event_records, store, transaction
from benchmarks import workload as wl
from benchmarks.contenders import HAVE_EVENTSOURCING, bench_eventsourcing, bench_store_only, prepare
from benchmarks.harness import DEFAULT_PG, Backend, PostgresBackend, SQLiteBackend

# (owner, attribute, stage): the functions timed.
STAGES = (
    (append, "refuse_unstorable", "storage guard"),
    (event_records.NewEvent, "_ids", "canonical JSON, payload hash and event ids"),
    (canonical, "canonical_json", "canonical JSON, payload hash and event ids"),
    (append, "_copy_events", "insert (COPY)"),
    (store._TransactionContext, "__exit__", "commit"),
    (transaction.Transaction, "events_by_id", "duplicate and regrouping look-ups by id"),
    (append, "chained_record", "hash chain and records"),
    (append, "event_from_record", "StoredEvent objects"),
)
INSERT_STAGE = "insert (executemany)"


class StageClock:
    """Seconds spent in each stage; a stage entered inside another is not counted apart."""

    def __init__(self) -> None:
        self.seconds: collections.Counter[str] = collections.Counter()
        self._inside = False

    def timed(
        self, function: Callable[..., Any], stage: str, applies: Callable[..., bool] = lambda *a, **k: True
    ) -> Callable[..., Any]:
        @functools.wraps(function)
        def timed_function(*args: Any, **kwargs: Any) -> Any:
            if self._inside or not applies(*args, **kwargs):
                return function(*args, **kwargs)
            self._inside = True
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[stage] += time.perf_counter() - start
                self._inside = False

        return timed_function

    def install(self) -> None:
        for owner, name, stage in STAGES:
            setattr(owner, name, self.timed(getattr(owner, name), stage))
        connection = sqlalchemy.engine.Connection
        connection.execute = self.timed(
            connection.execute, INSERT_STAGE, lambda _self, statement, *a, **k: statement is append._INSERT_EVENTS
        )


def measure(backend: Backend, goals: int, runs: int, seed: int) -> None:
    clock = StageClock()
    clock.install()
    prep = prepare(wl.make_workload(wl.load_templates(), goals, seed))
    artifacts = prep.artifact_count
    measured = []
    for run in range(runs):
        url = backend.fresh_url(f"stages{run}")
        ledger = backend.open_store(url)
        clock.seconds.clear()
        seconds = bench_store_only(ledger, prep)["seconds"]
        stages = dict(clock.seconds)
        ledger.close()
        backend.drop(url)
        baseline = None
        if HAVE_EVENTSOURCING:
            es_url = backend.fresh_url(f"es_stages{run}")
            baseline = bench_eventsourcing(backend.eventsourcing_env(es_url), prep, bulk=True)["seconds"]
        measured.append((seconds, baseline, stages))
        versus = f", eventsourcing {artifacts / baseline:,.0f} ({baseline / seconds:.2f}×)" if baseline else ""
        print(f"run {run + 1}: store-only {artifacts / seconds:,.0f} artifacts/s{versus}")
    seconds, baseline, stages = sorted(measured, key=lambda m: m[0])[len(measured) // 2]
    print(f"\n{backend.name}, {goals} goals, {artifacts} artifacts; the median store-only run, µs an artifact:\n")
    print("| stage | µs / artifact |\n| --- | --- |")
    for stage, spent in sorted(stages.items(), key=lambda item: -item[1]):
        print(f"| {stage} | {1e6 * spent / artifacts:.0f} |")
    rest = seconds - sum(stages.values())
    print(f"| the rest (event, manifest and outcome objects, SQLAlchemy, heads) | {1e6 * rest / artifacts:.0f} |")
    print(f"| **total** | **{1e6 * seconds / artifacts:.0f}** |")
    if baseline:
        print(f"| eventsourcing, same transactions, same run | {1e6 * baseline / artifacts:.0f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--postgres-url", default=DEFAULT_PG)
    parser.add_argument(
        "--goals", type=int, default=250, help="goals in the workload (default %(default)s: the full workload)"
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20260101)
    args = parser.parse_args(argv)
    backend: Backend = (
        SQLiteBackend(Path(tempfile.mkdtemp(prefix="store-stages-")))
        if args.backend == "sqlite"
        else PostgresBackend(args.postgres_url)
    )
    try:
        measure(backend, args.goals, args.runs, args.seed)
    finally:
        backend.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
