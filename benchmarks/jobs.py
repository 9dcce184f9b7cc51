"""``audit --jobs N`` and ``replay --jobs N`` on one ledger, in one run (issue 31, item 3): how far each scales, and where the CPU goes.

    .venv/bin/python -m benchmarks.jobs --quick        # a 5x10^4-event SQLite ledger, --jobs 1,2 (~2 min on 2 shared cores)
    .venv/bin/python -m benchmarks.jobs                # a 10^5-event ledger, --jobs 1,2,4,8
    .venv/bin/python -m benchmarks.jobs --backend postgresql --jobs 1,2

The ledger is built as ``benchmarks.run`` builds its big ledgers (clones of real
goals written by the store's own record builder: ``synthetic_ledger.py``). Then,
``--repeat`` rounds, each round every ``--jobs`` value of ``audit`` and of
``replay`` one after the other (interleaved, so drift hits all alike), each
call in this process (``ledger.service.maintenance``, the code the commands
run): wall clock (worker start-up included), this process's CPU time and its
workers' (``RUSAGE_CHILDREN``: the pool's workers are reaped when it shuts
down). Reported: the best wall clock of each, events per second, the ratio to
``--jobs 1``, and the median CPU seconds of the caller and of its workers,
which say what is still serial in the caller whatever the machine's load.
Every audit must be ok and every replay change nothing (else it raises).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchledger.ledger.service.maintenance import audit, checked_chain, replay
from benchledger.ledger.storage.store import Store
from benchmarks import workload as wl
from benchmarks.harness import PostgresBackend, SQLiteBackend, log
from benchmarks.synthetic_ledger import build_big_ledger, build_templates

AUDIT_TARGET = 1.7  # audit --jobs 2 vs --jobs 1 (issue 31)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(call: Callable[[], dict]) -> tuple[dict, float, float, float]:
    """``call()``'s answer, wall seconds, this process's CPU seconds and its (reaped) children's."""
    wall, cpu, children = time.perf_counter(), time.process_time(), _children_cpu()
    answer = call()
    return answer, time.perf_counter() - wall, time.process_time() - cpu, _children_cpu() - children


def measure(ledger: Store, events: int, jobs: list[int], repeat: int) -> list[dict]:
    calls = {"audit": lambda n: audit(ledger, jobs=n), "replay": lambda n: replay(ledger, jobs=n)}
    seen: dict[tuple[str, int], list[tuple[float, float, float]]] = {(c, n): [] for c in calls for n in jobs}
    for _ in range(repeat):
        for command, call in calls.items():
            for n in jobs:
                answer, wall, cpu, children = timed(lambda call=call, n=n: call(n))
                if command == "audit" and not answer["ok"]:
                    raise RuntimeError(f"audit --jobs {n} found problems: {answer['problems'][:3]}")
                if command == "replay" and (answer["rows_changed"] or answer["faulted"]):
                    raise RuntimeError(f"replay --jobs {n} changed {answer['rows_changed']} rows")
                seen[(command, n)].append((wall, cpu, children))
                log(f"{command} --jobs {n}: {wall:.2f} s (caller CPU {cpu:.2f} s, workers {children:.2f} s)")
    rows = []
    for (command, n), runs in seen.items():
        best = min(wall for wall, _, _ in runs)
        one = min(wall for wall, _, _ in seen[(command, 1)]) if (command, 1) in seen else None
        rows.append({
            "command": command, "jobs": n, "wall_s": best, "events_per_s": events / best,
            "vs_jobs_1": one / best if one else None,
            "caller_cpu_s": statistics.median(cpu for _, cpu, _ in runs),
            "workers_cpu_s": statistics.median(children for _, _, children in runs),
        })
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a 5x10^4-event ledger, --jobs 1,2")
    parser.add_argument("--events", type=float, default=None, help="events of the ledger (default 5e4 quick, 1e5)")
    parser.add_argument("--jobs", default=None, help="comma-separated --jobs values (default 1,2 quick, 1,2,4,8); 1 is always measured")
    parser.add_argument("--repeat", type=int, default=None, help="rounds (default 2 quick, 3)")
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--postgres-url", default=os.environ.get("BENCHLEDGER_BENCH_POSTGRES_URL") or os.environ.get("BENCHLEDGER_TEST_POSTGRES_URL") or "postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--seed", type=int, default=31)
    args = parser.parse_args(argv)
    events = int(args.events or (5e4 if args.quick else 1e5))
    jobs = sorted({1, *(int(n) for n in (args.jobs or ("1,2" if args.quick else "1,2,4,8")).split(","))})
    repeat = args.repeat or (2 if args.quick else 3)
    with tempfile.TemporaryDirectory(prefix="benchledger-jobs-") as scratch:
        backend = SQLiteBackend(Path(scratch)) if args.backend == "sqlite" else PostgresBackend(args.postgres_url)
        try:
            return report(backend.open_store(backend.fresh_url("jobs")), events, jobs, repeat, args)
        finally:
            backend.cleanup()


def report(ledger: Store, target: int, jobs: list[int], repeat: int, args: argparse.Namespace) -> int:
    started = time.perf_counter()
    _, events = build_big_ledger(ledger, build_templates(wl.load_templates(), 24, args.seed), target, 0)
    goals = len(ledger.heads())
    log(f"built a {events}-event ledger of {goals} goals in {time.perf_counter() - started:.0f} s")
    load = os.getloadavg()[0]
    rows = measure(ledger, events, jobs, repeat)
    chain = chain_check_cpu(ledger)
    ledger.close()
    print(
        f"{args.backend}, {events:,} events in {goals:,} goals, {os.cpu_count()} CPUs, best of {repeat}; "
        f"1-min load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
    )
    print()
    print("| command | --jobs | wall (best) | events/s | vs --jobs 1 | caller CPU (median) | workers' CPU (median) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        ratio = f"{row['vs_jobs_1']:.2f}x"
        if row["command"] == "audit" and row["jobs"] == 2:
            ratio += f" (target >= {AUDIT_TARGET}x: {'held' if row['vs_jobs_1'] >= AUDIT_TARGET else 'MISSED'})"
        print(
            f"| `{row['command']}` | {row['jobs']} | {row['wall_s']:.2f} s | {row['events_per_s']:,.0f} | {ratio} "
            f"| {row['caller_cpu_s']:.2f} s | {row['workers_cpu_s']:.2f} s |"
        )
    print()
    two = next((row for row in rows if row["command"] == "audit" and row["jobs"] == 2), None)
    print(
        f"The audit's check of the events and the Merkle log, one task in one worker beside the folds, takes {chain:.2f} s of CPU alone"
        + (f": past about {two['workers_cpu_s'] / chain:.0f} jobs (the workers' CPU at --jobs 2 / that task) it is the audit's critical path." if two else ".")
    )
    return 0


def chain_check_cpu(ledger: Store) -> float:
    """CPU seconds of the audit's chain and Merkle check alone (``maintenance.checked_chain``), best of 2, in this process."""
    seconds = []
    for _ in range(2):
        with ledger.snapshot() as view:
            heads = view.heads()
            started = time.process_time()
            checked_chain(view, heads=heads, goal_id=None, expect_digest=None)
            seconds.append(time.process_time() - started)
    return min(seconds)


if __name__ == "__main__":
    sys.exit(main())
