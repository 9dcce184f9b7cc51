"""``benchledger serve`` on a 10^5-event ledger: the index and a 10^4-event goal's page (issue 16 acceptance: < 1 s each).

    .venv/bin/python -m benchmarks.serve_pages                       # SQLite; builds the ledger (a few minutes)
    .venv/bin/python -m benchmarks.serve_pages --ledger /tmp/serve.sqlite --repeat 20

The ledger: ordinary goals cloned from real ingests by the store's own record
builder (``synthetic_ledger.build_big_ledger``) up to ``--events``, then one
goal of ``--goal-events`` events ingested through the real path
(``benchmarks.reads.build_goal``: its batches through one ``Ingest``). The server
is the console script, as a user starts it, on a free loopback port; each page
is fetched over HTTP with ``urllib``. The first fetch of each page is reported on
its own (cold: the server's first queries, and the index starts the background
audit, which then shares the process with the pages); then ``--repeat`` fetches,
median and slowest. The page's size is reported as served.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from benchledger.ledger.storage.store import Store
from benchmarks import workload as wl
from benchmarks.harness import find_benchledger, log
from benchmarks.reads import build_goal
from benchmarks.synthetic_ledger import build_big_ledger, build_templates

GOAL = "goal-10k"
TARGET_S = 1.0


def build(path: Path, events: int, goal_events: int, seed: int) -> None:
    ledger = Store.open(f"sqlite:///{path}")
    try:
        if ledger.head(GOAL) is not None:
            return
        started = time.perf_counter()
        templates = build_templates(wl.load_templates(), 8, seed)
        build_big_ledger(ledger, templates, events - goal_events, measured_template=0)
        build_goal(ledger, GOAL, goal_events, seed)
        log(f"built {path} in {time.perf_counter() - started:.0f} s")
    finally:
        ledger.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def fetch(url: str) -> tuple[float, int]:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as response:
        body = response.read()
    return time.perf_counter() - started, len(body)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=100_000, help="events in the ledger")
    parser.add_argument("--goal-events", type=int, default=10_000, help="events of the goal whose page is fetched")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--ledger", type=Path, help="the SQLite file to build (reused when it exists)")
    parser.add_argument("--seed", type=int, default=16)
    args = parser.parse_args(argv)
    path = args.ledger or Path(f"/tmp/benchledger-serve-{args.events}.sqlite")
    build(path, args.events, args.goal_events, args.seed)
    url = f"sqlite:///{path}"
    ledger = Store.open(url)
    try:
        total, goals = ledger.event_count(), len(ledger.heads())
        goal_events = ledger.require_goal(GOAL)["last_version"]
    finally:
        ledger.close()
    port = free_port()
    server = subprocess.Popen(
        [*find_benchledger(), "--database-url", url, "serve", "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        server.stdout.readline()  # "serving ... at http://127.0.0.1:PORT/": it listens
        base = f"http://127.0.0.1:{port}/"
        pages = {"index": base, f"goal page ({goal_events} events)": f"{base}goals/{GOAL}/index.html"}
        print(f"ledger {path}: {total} events, {goals} goals; `benchledger serve` on port {port}")
        print()
        print("| page | first fetch | median of the next | slowest of the next | bytes | target < 1 s |")
        print("| --- | --- | --- | --- | --- | --- |")
        for name, page in pages.items():
            first, size = fetch(page)
            rest = [fetch(page)[0] for _ in range(args.repeat)]
            held = max(first, *rest) < TARGET_S
            print(
                f"| {name} | {first:.3f} s | {statistics.median(rest):.3f} s | {max(rest):.3f} s | {size:,} "
                f"| {'held' if held else 'MISSED'} |"
            )
    finally:
        server.terminate()
        server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
