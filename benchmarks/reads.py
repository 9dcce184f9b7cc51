"""Bounded reads (issue 15 part 3): ``history --limit 50`` and ``show`` on a 10^5-event goal vs a 100-event goal.

    .venv/bin/python -m benchmarks.reads                 # SQLite, a 10^5-event goal (builds it: a few minutes)
    .venv/bin/python -m benchmarks.reads --events 20000  # a smaller big goal (quick)
    .venv/bin/python -m benchmarks.reads --ledger /tmp/reads.sqlite   # keep (or reuse) the built ledger
    .venv/bin/python -m benchmarks.reads --postgres-url postgresql://postgres@127.0.0.1:5432/test   # on PostgreSQL

One ledger holds both goals, built from the seeded workload (benchmarks/workload.py)
through the real path: every batch of a goal goes through one ``Ingest`` (all the
big goal's batches in one transaction, one fold), so its events, projections and
lifecycle steps are what ordinary ingests store. Then, in the same run:

* latency, in process on an open ledger, as ``benchmarks/run.py`` measures
  history/show (the view and ``json.dumps`` of it): ``history GOAL --limit 50``
  and the default ``show GOAL``, each repeated; p50 / p99, and the ratio big /
  small against the targets (history p99 <= 20 ms, show p99 <= 50 ms, each <= 2x
  the 100-event goal);
* peak RSS of whole commands (the console script, as a user runs it; ``ru_maxrss``
  of the child) on the big goal: ``history``, ``show``, ``replay --goal``,
  ``audit --goal``, ``export --goal`` (target <= 300 MB), against the same run's
  baseline (``benchledger goals`` on the ledger: interpreter, imports, engine).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import create_engine, text

from benchledger.ledger.read import views
from benchledger.ledger.service.ingest import Ingest
from benchledger.ledger.service.intake.artifacts import to_artifact
from benchledger.ledger.service.intake.files import parse_document
from benchledger.ledger.storage.engine import create_ledger_engine, normalize_url
from benchledger.ledger.storage.migrate import upgrade
from benchledger.ledger.storage.store import Store
from benchmarks import workload as wl
from benchmarks.harness import find_benchledger, log, pct
from benchmarks.memory import peak_rss

BIG, SMALL = "big-goal", "small-goal"
MIB = 1024 * 1024
TARGETS = {"history --limit 50": 20.0, "show": 50.0}
RSS_TARGET_MIB = 300


def build_goal(ledger: Store, goal_id: str, events: int, seed: int) -> int:
    """A workload goal of about ``events`` events, ingested as its batches in one transaction; returns its event count."""
    templates = wl.load_templates()
    # A workload attempt is about 5.7 events (two runs, a comparison, its batch, most often a post-launch check ...).
    goal = wl.make_goal(templates, goal_id, random.Random(seed), attempts=max(1, round(events / 5.7)))
    unit = Ingest(ledger, "benchmark")
    for batch in goal.batches:
        unit.add(goal_id, [to_artifact(parse_document(doc, "bench"), batch.kind) for doc in batch.documents])
    unit.commit()
    return ledger.require_goal(goal_id)["last_version"]


def build(url: str, args: argparse.Namespace) -> None:
    ledger = Store.open(url)
    try:
        started = time.perf_counter()
        build_goal(ledger, SMALL, args.small_events, args.seed)
        build_goal(ledger, BIG, args.events, args.seed + 1)
        with ledger.engine.begin() as connection:  # fresh statistics, as a long-lived ledger has
            connection.execute(text("ANALYZE"))
        log(f"built {url.split('?')[0]} in {time.perf_counter() - started:.0f} s")
    finally:
        ledger.close()


def timed(work: Callable[[], Any], repeat: int) -> list[float]:
    """Milliseconds of each of ``repeat`` calls of ``work`` and ``json.dumps`` of its answer, after three warm-up calls."""
    for _ in range(3):
        json.dumps(work())
    gc.collect()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        json.dumps(work())
        times.append((time.perf_counter() - start) * 1000)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=100_000, help="events of the big goal")
    parser.add_argument("--small-events", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--ledger", type=Path, help="the SQLite file to build (reused when it exists)")
    parser.add_argument("--postgres-url", help="measure on PostgreSQL instead: a fresh schema of this database, dropped at the end")
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--build-only", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.build_only:
        build(args.build_only, args)
        return 0
    if args.postgres_url:
        with postgres_schema(args.postgres_url) as url:
            return measure(url, args, build_first=True)
    path = args.ledger or Path(f"/tmp/benchledger-reads-{args.events}.sqlite")
    return measure(f"sqlite:///{path}", args, build_first=not path.exists())


@contextmanager
def postgres_schema(server_url: str) -> Iterator[str]:
    """The URL of a fresh, migrated schema of ``server_url``'s database (dropped afterwards)."""
    schema = f"benchledger_reads_{os.getpid()}"
    admin = create_engine(normalize_url(server_url))
    with admin.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    url = f"{server_url}{'&' if '?' in server_url else '?'}options={quote(f'-csearch_path={schema}')}"
    try:
        engine = create_ledger_engine(url)
        upgrade(engine)
        engine.dispose()
        yield url
    finally:
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


def measure(url: str, args: argparse.Namespace, *, build_first: bool) -> int:
    backend = "PostgreSQL" if url.startswith("postgres") else "SQLite"
    if build_first:
        # In a child: a process's peak RSS carries over to the processes it starts (Linux keeps the
        # high-water mark across fork and exec), and building the big goal takes gigabytes.
        sizes_args = ["--events", str(args.events), "--small-events", str(args.small_events), "--seed", str(args.seed)]
        subprocess.run([sys.executable, "-m", "benchmarks.reads", "--build-only", url, *sizes_args], check=True)
    ledger = Store.open(url)
    try:
        sizes = {goal: ledger.require_goal(goal)["last_version"] for goal in (SMALL, BIG)}
        steps = {goal: ledger.goal_projections(goal)[0].get("lifecycle-step", 0) for goal in (SMALL, BIG)}
    finally:
        ledger.close()
    print(f"ledger {url.split('?')[0]}: {sizes[BIG]} events in {BIG} ({steps[BIG]} lifecycle steps), {sizes[SMALL]} in {SMALL} ({steps[SMALL]})")
    print()
    print(f"| read (in process, {backend}, view + json.dumps) | 100-event goal p50 / p99 | 10^5-event goal p50 / p99 | ratio (p99) | target |")
    print("| --- | --- | --- | --- | --- |")
    ledger = Store.open(url)
    try:
        reads: dict[str, Callable[[str], Callable[[], Any]]] = {
            "history --limit 50": lambda goal: lambda: views.history(ledger, goal, limit=50),
            "show": lambda goal: lambda: views.show(ledger, goal),
        }
        for name, read in reads.items():
            p = {}
            for goal in (SMALL, BIG):
                times = timed(read(goal), args.repeat)
                p[goal] = (pct(times, 0.5), pct(times, 0.99))
            ratio = p[BIG][1] / p[SMALL][1]
            held = p[BIG][1] <= TARGETS[name] and ratio <= 2.0
            print(
                f"| `{name}` | {p[SMALL][0]:.1f} / {p[SMALL][1]:.1f} ms | {p[BIG][0]:.1f} / {p[BIG][1]:.1f} ms | {ratio:.2f}x "
                f"| p99 <= {TARGETS[name]:.0f} ms and <= 2x: {'held' if held else 'MISSED'} |"
            )
    finally:
        ledger.close()
    print()
    benchledger = find_benchledger()
    baseline, _ = peak_rss([*benchledger, "--database-url", url, "goals"])
    print(f"| command on the {sizes[BIG]}-event goal | peak RSS | over baseline ({baseline / MIB:.0f} MiB) | seconds | target <= {RSS_TARGET_MIB} MB |")
    print("| --- | --- | --- | --- | --- |")
    for argv_tail in (["history", "--goal", BIG], ["show", "--goal", BIG], ["replay", "--goal", BIG], ["audit", "--goal", BIG], ["export", "--goal", BIG]):
        rss, seconds = peak_rss([*benchledger, "--database-url", url, *argv_tail])
        held = rss <= RSS_TARGET_MIB * 1_000_000
        print(f"| `{' '.join(argv_tail[:1] + argv_tail[3:])}` | {rss / MIB:.0f} MiB | {(rss - baseline) / MIB:.0f} MiB | {seconds:.1f} | {'held' if held else 'MISSED'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
