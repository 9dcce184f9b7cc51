"""``compare`` and ``runs --summary`` as the ledger grows (issue 26): time against tasks, and peak memory against runs.

    .venv/bin/python -m benchmarks.compare --quick      # 10^2 and 10^3 tasks (10^3 and 10^4 runs): a few minutes
    .venv/bin/python -m benchmarks.compare              # 10^2, 10^3 and 10^4 tasks (up to 10^5 runs): builds for ~10 min on 2 cores
    .venv/bin/python -m benchmarks.compare --workdir /tmp/cmp   # keep the built ledgers there (reused when present)
    .venv/bin/python -m benchmarks.compare --postgres-url postgresql://postgres@127.0.0.1:5432/test   # on PostgreSQL

The ledger: N tasks x 5 trials x 2 arms, on two benchmarks (tasks split
between them), 100 tasks a goal. Each trial is one batch as LoopX writes it
after a paired run: the baseline's compact run, the treatment's, and the
comparison naming both arms (``baseline_scenario_id`` / ``treatment_scenario_id``)
and the task, so ``compare`` finds the arm pair and the runs their task.
Each task has its own baseline pass probability (uniform in 0.1-0.9) and the
treatment ten points more; trials draw from it. Everything derives from
``--seed``. The ledger is built through the real bulk path
(``ingest-batches``: normalization, the store's guard, hash chain, projections)
in a child process, so the parent's memory stays its own.

Then, in one run, on each ledger:

* the time of ``compare`` (``Ledger.compare()``: the runs model, each
  benchmark's per-task outcomes, the 2000-resample cluster bootstrap, the exact
  test, Holm) and of ``runs --summary`` (``Ledger.pass_rates()``), in process on
  an open ledger (a child of this script), the median of ``--repeat`` calls after
  one warm-up, interleaved; CPU time on SQLite (the database runs in the process:
  on a shared machine, wall time also counts the other processes' turns), wall
  time on PostgreSQL (whose server does part of the work); both printed. The ratio
  of ``compare`` at the largest size to the next smaller (target <= 12x for 10x
  the tasks: linear), and ``compare`` / ``runs --summary`` on the same ledger
  (target <= 3x);
* the peak RSS (``ru_maxrss`` of the child) of ``benchledger runs --summary``
  as a user runs it, on the smallest and the largest ledger (target: the largest,
  10^5 runs in the full run, <= 1.5x the smallest, 10^3 runs); and, with no
  target, of ``benchledger compare`` (it holds the runs model of its scope).

It prints one markdown table and exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchledger.ledger import api
from benchledger.ledger.service.bulk import ingest_batch_file
from benchledger.ledger.storage.store import Store
from benchmarks.harness import find_benchledger, log
from benchmarks.memory import peak_rss
from benchmarks.reads import postgres_schema

MIB = 1024 * 1024
TRIALS = 5
TASKS_PER_GOAL = 100
BENCHMARKS = ("terminal-bench@2.0", "skillsbench@1.1")
BASELINE, TREATMENT = "codex-goal-mode-baseline", "codex-loopx-treatment"
EFFECT = 0.10
# The targets of issue 26.
LINEAR_TARGET = 12.0  # compare at 10x the tasks
SUMMARY_TARGET = 3.0  # compare / runs --summary, same ledger
MEMORY_TARGET = 1.5  # runs --summary peak RSS, 100x the runs


def _run(benchmark: str, task: str, mode: str, trial: int, passed: bool) -> dict[str, Any]:
    return {
        "schema_version": "benchmark_run_v0",
        "source_runner": "harbor",
        "benchmark_id": benchmark,
        "job_name": f"{task}-{mode}-trial-{trial}",
        "mode": mode,
        "real_run": True,
        "submit_eligible": False,
        "leaderboard_evidence": False,
        "official_task_score": {"kind": "verifier_reward", "value": 1.0 if passed else 0.0, "passed": passed},
        "runner_return_status": "completed",
    }


def batch_lines(tasks: int, seed: int) -> list[dict[str, Any]]:
    """The ``ingest-batches`` lines of the ledger of ``tasks`` tasks: one batch a trial (module docstring)."""
    rng = random.Random(seed)
    lines = []
    for index in range(tasks):
        benchmark = BENCHMARKS[index % len(BENCHMARKS)]
        task = f"task-{index:06d}"
        baseline_p = rng.uniform(0.1, 0.9)
        for trial in range(TRIALS):
            baseline_passed, treatment_passed = rng.random() < baseline_p, rng.random() < baseline_p + EFFECT
            comparison = {
                "schema_version": "benchmark_comparison_v0",
                "task_id": f"{benchmark}/{task}",
                "comparison_id": f"{task}-trial-{trial}",
                "benchmark_id": benchmark,
                "baseline_scenario_id": BASELINE,
                "treatment_scenario_id": TREATMENT,
                "official_task_score_delta": float(treatment_passed) - float(baseline_passed),
            }
            lines.append({
                "goal_id": f"goal-{index // TASKS_PER_GOAL:05d}",
                "kind": None,
                "artifacts": [
                    _run(benchmark, task, BASELINE, trial, baseline_passed),
                    _run(benchmark, task, TREATMENT, trial, treatment_passed),
                    comparison,
                ],
            })
    return lines


def build(url: str, tasks: int, seed: int) -> None:
    """The ledger of ``tasks`` tasks at ``url``, through ``ingest-batches`` (run in a child: see the module docstring)."""
    with tempfile.NamedTemporaryFile("w", suffix=".ndjson", encoding="utf-8") as spool:
        for line in batch_lines(tasks, seed):
            spool.write(json.dumps(line) + "\n")
        spool.flush()
        ledger = Store.open(url)
        try:
            started = time.perf_counter()
            report = ingest_batch_file(ledger, spool.name)
            if not report.ok:
                raise RuntimeError(f"the generated ledger was refused: {report.errors[:3]}")
            log(f"built {tasks} tasks ({report.appended} artifacts) in {time.perf_counter() - started:.0f} s")
        finally:
            ledger.close()


def median_seconds(works: dict[str, Callable[[], Any]], repeat: int) -> dict[str, float]:
    """The median CPU seconds (``<name>``) and wall seconds (``<name>_wall``) of each of ``works`` over ``repeat`` rounds.

    The rounds interleave the works, so drift in the machine's load hits each
    alike. The targets read CPU time: the process is single-threaded and its
    database (SQLite, in process) is in the page cache, so CPU time is its
    cost, while wall time on a shared machine also counts the other processes'
    turns (both are printed).
    """
    times: dict[str, list[float]] = {name: [] for name in works}
    walls: dict[str, list[float]] = {name: [] for name in works}
    for _ in range(repeat):
        for name, work in works.items():
            started, started_cpu = time.perf_counter(), time.process_time()
            work()
            times[name].append(time.process_time() - started_cpu)
            walls[name].append(time.perf_counter() - started)
    return {
        **{name: statistics.median(found) for name, found in times.items()},
        **{f"{name}_wall": statistics.median(found) for name, found in walls.items()},
    }


def measure(url: str, repeat: int) -> dict[str, Any]:
    """``compare`` and ``runs --summary`` on the ledger at ``url``, in process; checks that compare found the generated arm pair."""
    with api.open(url) as ledger:
        found = ledger.compare()  # (and the warm-up of both)
        if len(found) != len(BENCHMARKS) or any(c.baseline_arm != BASELINE or c.treatment_arm != TREATMENT for c in found):
            raise RuntimeError(f"compare did not find the generated arm pair on each benchmark: {found.as_dict()}")
        runs = sum(rate.runs for rate in ledger.pass_rates())
        return {
            "runs": runs,
            "tasks": sum(c.tasks for c in found),
            "difference": [c.difference for c in found],
            **median_seconds({"compare": ledger.compare, "summary": ledger.pass_rates}, repeat),
        }


def held(ok: bool) -> str:
    return "✅" if ok else "❌"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10^2 and 10^3 tasks only")
    parser.add_argument("--tasks", type=int, nargs="+", help="the ledger sizes, in tasks (default 100 1000 10000; --quick: 100 1000)")
    parser.add_argument("--repeat", type=int, default=3, help="timed calls per measurement (the median is kept)")
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "benchledger-compare",
                        help="where the SQLite ledgers are built (one per size and seed, reused when present)")
    parser.add_argument("--postgres-url", help="measure on PostgreSQL instead: a fresh schema per size, dropped at the end")
    parser.add_argument("--build-only", nargs=2, metavar=("URL", "TASKS"), help=argparse.SUPPRESS)
    parser.add_argument("--measure-only", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.build_only:
        build(args.build_only[0], int(args.build_only[1]), args.seed)
        return 0
    if args.measure_only:
        print(json.dumps(measure(args.measure_only, args.repeat)))
        return 0
    sizes = sorted(args.tasks or ([100, 1000] if args.quick else [100, 1000, 10_000]))
    results: dict[int, dict[str, Any]] = {}
    rss: dict[int, int] = {}
    benchledger = find_benchledger()
    for tasks in sizes:
        if args.postgres_url:
            with postgres_schema(args.postgres_url) as url:
                results[tasks], rss[tasks] = measure_size(url, tasks, args, benchledger, build_first=True)
        else:
            args.workdir.mkdir(parents=True, exist_ok=True)
            path = args.workdir / f"compare-{tasks}-seed{args.seed}.sqlite"
            results[tasks], rss[tasks] = measure_size(f"sqlite:///{path}", tasks, args, benchledger, build_first=not path.exists())
    return report(results, rss, "PostgreSQL" if args.postgres_url else "SQLite")


def measure_size(url: str, tasks: int, args: argparse.Namespace, benchledger: list[str], *, build_first: bool) -> tuple[dict[str, Any], int]:
    """Build (if asked), time and measure one ledger, each step in a child process.

    This process stays small: a child started by a process that once held a
    big ledger's runs model would report that process's peak as its own (Linux
    carries the peak RSS over fork and exec), as a first version of this script did.
    """
    me = [sys.executable, "-m", "benchmarks.compare", "--seed", str(args.seed), "--repeat", str(args.repeat)]
    if build_first:
        subprocess.run([*me, "--build-only", url, str(tasks)], check=True)
    log(f"measuring {tasks} tasks")
    found = json.loads(subprocess.run([*me, "--measure-only", url], check=True, capture_output=True, text=True).stdout)
    peak, _ = peak_rss([*benchledger, "--database-url", url, "runs", "--summary", "--format", "json"])
    found["compare_peak"], _ = peak_rss([*benchledger, "--database-url", url, "compare", "--format", "json"])
    return found, peak


def report(results: dict[int, dict[str, Any]], rss: dict[int, int], backend: str) -> int:
    sizes = sorted(results)
    ok = True
    cost = "" if backend == "SQLite" else "_wall"  # what the targets read (module docstring)
    print(f"| ledger ({backend}) | runs | `compare` CPU (wall) | `runs --summary` CPU (wall) | compare / summary (target <= {SUMMARY_TARGET:g}x) "
          f"| compare / previous size (target <= {LINEAR_TARGET:g}x at 10x) | `runs --summary` peak RSS | `compare` peak RSS | differences found |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for i, tasks in enumerate(sizes):
        r = results[tasks]
        over_summary = r["compare" + cost] / r["summary" + cost]
        ok &= over_summary <= SUMMARY_TARGET
        growth = ""
        if i:
            step = r["compare" + cost] / results[sizes[i - 1]]["compare" + cost]
            scale = tasks / sizes[i - 1]
            growth_ok = step <= LINEAR_TARGET * scale / 10
            ok &= growth_ok
            growth = f"{step:.1f}x for {scale:g}x the tasks {held(growth_ok)}"
        differences = ", ".join(f"{d * 100:+.1f}" for d in r["difference"])
        print(f"| {tasks:,} tasks x {TRIALS} trials x 2 arms | {r['runs']:,} | {r['compare'] * 1000:,.0f} ({r['compare_wall'] * 1000:,.0f}) ms "
              f"| {r['summary'] * 1000:,.0f} ({r['summary_wall'] * 1000:,.0f}) ms "
              f"| {over_summary:.2f}x {held(over_summary <= SUMMARY_TARGET)} | {growth} | {rss[tasks] / MIB:.0f} MiB "
              f"| {r['compare_peak'] / MIB:.0f} MiB | {differences} points |")
    memory = rss[sizes[-1]] / rss[sizes[0]]
    memory_ok = memory <= MEMORY_TARGET
    ok &= memory_ok
    print()
    print(f"`runs --summary` peak RSS at {results[sizes[-1]]['runs']:,} runs / at {results[sizes[0]]['runs']:,} runs: "
          f"{memory:.2f}x {held(memory_ok)} (target <= {MEMORY_TARGET:g}x)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
