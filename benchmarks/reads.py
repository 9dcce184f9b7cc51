"""Bounded reads (issue 15 part 3): ``history --limit 50`` and ``show`` on a 10^5-event goal vs a 100-event goal.

    .venv/bin/python -m benchmarks.reads                 # SQLite, a 10^5-event goal (builds it: a few minutes)
    .venv/bin/python -m benchmarks.reads --events 20000  # a smaller big goal (quick)
    .venv/bin/python -m benchmarks.reads --ledger /tmp/reads.sqlite   # keep (or reuse) the built ledger

One ledger holds both goals, built from the seeded workload (benchmarks/workload.py)
through the real path: every batch of a goal goes through ``ingest_many`` (all the
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
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchledger.ledger import views
from benchledger.ledger.application import BatchRequest, ingest_many
from benchledger.ledger.intake.artifacts import to_artifact
from benchledger.ledger.intake.files import parse_document
from benchledger.ledger.store import Ledger
from benchmarks import workload as wl
from benchmarks.harness import find_benchledger, log, pct
from benchmarks.memory import peak_rss

BIG, SMALL = "big-goal", "small-goal"
MIB = 1024 * 1024
TARGETS = {"history --limit 50": 20.0, "show": 50.0}
RSS_TARGET_MIB = 300


def build_goal(ledger: Ledger, goal_id: str, events: int, seed: int) -> int:
    """A workload goal of about ``events`` events, ingested as its batches in one transaction; returns its event count."""
    templates = wl.load_templates()
    # A workload attempt is about 5.7 events (two runs, a comparison, its batch, most often a post-launch check ...).
    goal = wl.make_goal(templates, goal_id, random.Random(seed), attempts=max(1, round(events / 5.7)))
    batches = [
        BatchRequest(goal_id, [to_artifact(parse_document(doc, "bench"), batch.kind) for doc in batch.documents])
        for batch in goal.batches
    ]
    ingest_many(ledger, batches, source="benchmark")
    return ledger.require_goal(goal_id)["last_version"]


def build(url: str, args: argparse.Namespace) -> None:
    ledger = Ledger.open(url)
    try:
        started = time.perf_counter()
        build_goal(ledger, SMALL, args.small_events, args.seed)
        build_goal(ledger, BIG, args.events, args.seed + 1)
        log(f"built {url} in {time.perf_counter() - started:.0f} s")
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
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--build-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    path = args.ledger or Path(f"/tmp/benchledger-reads-{args.events}.sqlite")
    url = f"sqlite:///{path}"
    if args.build_only:
        build(url, args)
        return 0
    if not path.exists():
        # In a child: a process's peak RSS carries over to the processes it starts (Linux keeps the
        # high-water mark across fork and exec), and building the big goal takes gigabytes.
        subprocess.run([sys.executable, "-m", "benchmarks.reads", "--build-only", *(argv if argv is not None else sys.argv[1:]), "--ledger", str(path)], check=True)
    ledger = Ledger.open(url)
    try:
        sizes = {goal: ledger.require_goal(goal)["last_version"] for goal in (SMALL, BIG)}
        steps = {goal: ledger.goal_projections(goal)[0].get("lifecycle-step", 0) for goal in (SMALL, BIG)}
    finally:
        ledger.close()
    print(f"ledger {path}: {sizes[BIG]} events in {BIG} ({steps[BIG]} lifecycle steps), {sizes[SMALL]} in {SMALL} ({steps[SMALL]})")
    print()
    print("| read (in process, SQLite, view + json.dumps) | 100-event goal p50 / p99 | 10^5-event goal p50 / p99 | ratio (p99) | target |")
    print("| --- | --- | --- | --- | --- |")
    ledger = Ledger.open(url)
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
