"""Incremental projections (issue 15 parts 1, 2, 4): what an ingest costs as its goal grows, and replay on every core.

    .venv/bin/python -m benchmarks.growth --quick     # goals of 10^3 and 10^4 attempts; a 10^5-event replay (~5 min)
    .venv/bin/python -m benchmarks.growth             # also 5x10^4 attempts; a 2x10^5-event replay

Everything is measured in one run, on one SQLite ledger per section (``--workdir``):

1. **Goal growth**, in process. Goals of 10^3 and 10^4 attempts (full: 5x10^4)
   are built through the real path (an ``Ingest`` of whole batches in
   transactions of about 500 artifacts, each transaction resuming each goal's
   fold from its checkpoint). Then one sequence of ordinary batches (a
   preflight, a launch, attempts of baseline run + treatment run + comparison,
   a post-launch record, now and then a learning ledger or claim review) is
   ingested batch by batch (``ingest``: one transaction each, as one
   ``benchledger ingest`` call) into a fresh goal and into each grown goal,
   interleaved batch by batch so that drift hits every goal alike. Only the
   ``ingest`` call is timed (the documents are parsed and normalized before).
   Reported: median and p95 per batch, and their ratio to the fresh goal's.
2. **One run file, whole process**: ``benchledger ingest --goal G run.json``
   as a subprocess (start to exit), into the largest grown goal and into a
   fresh goal (a new one for each file) of the same ledger, the two
   interleaved, each run file a new one. Reported: the medians and their ratio.
3. **Replay on every core**: a ledger of many ordinary goals (clones of real
   goals, as in ``benchmarks.run``, section 4) replayed with ``jobs=1`` and
   ``jobs=2`` (wall clock, worker start-up included), against the fold alone
   (the same events already read and decoded, folded into serialized rows in
   this process, no database): the ceiling one process can reach.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchledger.ledger.service.ingest import Ingest, ingest
from benchledger.ledger.service.intake.artifacts import to_artifact
from benchledger.ledger.service.intake.files import parse_document
from benchledger.ledger.service.maintenance import replay
from benchledger.ledger.storage.store import Store
from benchmarks import workload as wl
from benchmarks.contenders import BULK_ARTIFACTS, bench_fold_only
from benchmarks.harness import find_benchledger, log, pct, timed_process
from benchmarks.synthetic_ledger import build_big_ledger, build_templates

TARGETS = {"median": 1.5, "p95": 3.0}  # per-batch ingest into a 10^4-attempt goal vs a fresh goal
JOBS_TARGET, FOLD_TARGET = 1.6, 0.7  # replay --jobs 2 vs --jobs 1; --jobs 1 vs the fold alone
PROCESS_TARGET = 1.2  # one run file, whole process: into a 10^4-attempt goal vs into a fresh goal


def artifacts_of(batch: wl.Batch) -> list:
    return [to_artifact(parse_document(doc, "bench"), batch.kind) for doc in batch.documents]


def grow(ledger: Store, goal_id: str, attempts: int, seed: int) -> int:
    """A goal of ``attempts`` attempts, ingested in transactions of whole batches (about 500 artifacts each)."""
    goal = wl.make_goal(wl.load_templates(), goal_id, random.Random(seed), attempts=attempts)
    unit, held = Ingest(ledger, "benchmark"), 0
    for batch in goal.batches:
        artifacts = artifacts_of(batch)
        unit.add(goal_id, artifacts)
        held += len(artifacts)
        if held >= BULK_ARTIFACTS:
            unit.commit()
            unit, held = Ingest(ledger, "benchmark"), 0
    if held:
        unit.commit()
    return ledger.require_goal(goal_id)["last_version"]


def goal_growth(workdir: Path, sizes: list[int], measured_attempts: int, seed: int) -> list[dict]:
    ledger = Store.open(f"sqlite:///{workdir / 'growth.sqlite'}")
    goals = {0: "fresh"}
    events = {0: 0}
    for attempts in sizes:
        started = time.perf_counter()
        goals[attempts] = f"grown-{attempts}"
        events[attempts] = grow(ledger, goals[attempts], attempts, seed + attempts)
        log(f"grew {goals[attempts]}: {events[attempts]} events in {time.perf_counter() - started:.0f} s")
    measured = wl.make_goal(wl.load_templates(), "measured", random.Random(seed - 1), attempts=measured_attempts)
    batches = [artifacts_of(batch) for batch in measured.batches]
    times: dict[int, list[float]] = {size: [] for size in goals}
    order = list(goals.items())
    for index, artifacts in enumerate(batches):
        # each batch goes to every goal, the goals in a rotating order (the first one pays what a warm cache spares the others)
        for size, goal_id in order[index % len(order) :] + order[: index % len(order)]:
            started = time.perf_counter()
            ingest(ledger, goal_id, artifacts, source="benchmark")
            times[size].append((time.perf_counter() - started) * 1000)
    ledger.close()
    fresh = times[0]
    return [
        {
            "attempts": size,
            "events_before": events[size],
            "batches": len(times[size]),
            "median_ms": pct(times[size], 0.5),
            "p95_ms": pct(times[size], 0.95),
            "median_ratio": pct(times[size], 0.5) / pct(fresh, 0.5),
            "p95_ratio": pct(times[size], 0.95) / pct(fresh, 0.95),
        }
        for size in goals
    ]


def one_run_file_process(workdir: Path, grown_goal: str, reps: int, seed: int) -> dict:
    """``benchledger ingest`` of one run file as a subprocess: into ``grown_goal`` and into a fresh goal, interleaved."""
    url = f"sqlite:///{workdir / 'growth.sqlite'}"
    source = wl.make_goal(wl.load_templates(), "process", random.Random(seed), attempts=reps + 1)
    runs = [batch.documents[0] for batch in source.batches if len(batch.documents) == 3]  # each attempt's baseline run
    folder = workdir / "run-files"
    folder.mkdir(exist_ok=True)
    paths = []
    for index, document in enumerate(runs):
        paths.append(folder / f"run-{index:03d}.json")
        paths[-1].write_bytes(document)
    env = dict(os.environ)
    env.pop("BENCHLEDGER_DATABASE_URL", None)
    command = [*find_benchledger(), "--database-url", url, "ingest", "--goal"]
    for goal in (grown_goal, "fresh-process-warm-up"):  # the OS caches warmed once for each (not counted)
        timed_process([*command, goal, str(paths[-1])], env)
    seconds: dict[str, list[float]] = {"grown": [], "fresh": []}
    for index in range(reps):
        order = [("grown", grown_goal), ("fresh", f"fresh-process-{index:03d}")]
        for side, goal in order if index % 2 == 0 else reversed(order):
            seconds[side].append(timed_process([*command, goal, str(paths[index])], env))
    grown, fresh = statistics.median(seconds["grown"]), statistics.median(seconds["fresh"])
    return {"reps": reps, "grown_goal": grown_goal, "grown_ms": grown * 1000, "fresh_ms": fresh * 1000, "ratio": grown / fresh}


def replay_on_cores(workdir: Path, target_events: int, seed: int, repeat: int) -> dict:
    ledger = Store.open(f"sqlite:///{workdir / 'replay.sqlite'}")
    templates = build_templates(wl.load_templates(), 24, seed)
    _goal, written = build_big_ledger(ledger, templates, target_events, 0)
    log(f"built a {written}-event ledger of {len(ledger.heads())} goals")
    seconds: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(repeat):  # interleaved, so drift hits both
        for jobs in (1, 2):
            started = time.perf_counter()
            report = replay(ledger, jobs=jobs)
            seconds[jobs].append(time.perf_counter() - started)
            if report["rows_changed"] or report["faulted"]:
                raise RuntimeError(f"replay --jobs {jobs} changed {report['rows_changed']} rows, faulted {len(report['faulted'])}")
    fold = bench_fold_only(ledger)
    ledger.close()
    rate = {jobs: written / min(s) for jobs, s in seconds.items()}
    return {
        "events": written,
        "jobs1_events_per_s": rate[1],
        "jobs2_events_per_s": rate[2],
        "fold_events_per_s": fold["events_per_s"],
        "jobs2_vs_jobs1": rate[2] / rate[1],
        "jobs1_vs_fold": rate[1] / fold["events_per_s"],
        "jobs2_vs_fold": rate[2] / fold["events_per_s"],
    }


def held(ok: bool) -> str:
    return "held" if ok else "MISSED"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="goals of 10^3 and 10^4 attempts, a 10^5-event replay")
    parser.add_argument("--measured-attempts", type=int, default=None, help="attempts of the measured batch sequence (default 60 quick, 100 full)")
    parser.add_argument("--attempts", default=None, help="comma-separated sizes of the grown goals (default 1000,10000 quick; also 50000 full)")
    parser.add_argument("--process-reps", type=int, default=None, help="run files ingested by a subprocess into each side (default 10 quick, 25 full)")
    parser.add_argument("--replay-events", type=int, default=None, help="events of the replayed ledger (default 10^5 quick, 2x10^5 full)")
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--workdir", type=Path, default=None, help="where the scratch SQLite files go, kept (default: a temporary directory, removed at the end)")
    args = parser.parse_args(argv)
    if args.attempts:
        sizes = sorted(int(float(size)) for size in args.attempts.split(","))
    else:
        sizes = [10**3, 10**4] if args.quick else [10**3, 10**4, 5 * 10**4]
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
        return measure(args, sizes, args.workdir)
    with tempfile.TemporaryDirectory(prefix="benchledger-growth-") as scratch:  # (full mode leaves ~2.5 GB of SQLite files)
        return measure(args, sizes, Path(scratch))


def measure(args: argparse.Namespace, sizes: list[int], workdir: Path) -> int:
    growth = goal_growth(workdir, sizes, args.measured_attempts or (60 if args.quick else 100), args.seed)
    print("| goal before the batches | events before | batches | per-batch ingest median / p95 | vs fresh goal: median / p95 | target |")
    print("| --- | --- | --- | --- | --- | --- |")
    for row in growth:
        name = "fresh (0 attempts)" if row["attempts"] == 0 else f"{row['attempts']:,} attempts"
        target = ""
        if row["attempts"] == 10**4:
            ok = row["median_ratio"] <= TARGETS["median"] and row["p95_ratio"] <= TARGETS["p95"]
            target = f"median <= {TARGETS['median']}x, p95 <= {TARGETS['p95']}x: {held(ok)}"
        print(
            f"| {name} | {row['events_before']:,} | {row['batches']} | {row['median_ms']:.1f} / {row['p95_ms']:.1f} ms "
            f"| {row['median_ratio']:.2f}x / {row['p95_ratio']:.2f}x | {target} |"
        )
    print()
    process = one_run_file_process(workdir, f"grown-{sizes[-1]}", args.process_reps or (10 if args.quick else 25), args.seed + 1)
    grown_name = f"{sizes[-1]:,}-attempt goal"
    print(f"| `benchledger ingest` of one run file (subprocess, median of {process['reps']}) | into a fresh goal | into the {grown_name} | ratio | target |")
    print("| --- | --- | --- | --- | --- |")
    target = f"<= {PROCESS_TARGET}x: {held(process['ratio'] <= PROCESS_TARGET)}" if sizes[-1] >= 10**4 else ""
    print(f"| whole process, start to exit | {process['fresh_ms']:.0f} ms | {process['grown_ms']:.0f} ms | {process['ratio']:.2f}x | {target} |")
    print()
    result = replay_on_cores(workdir, args.replay_events or (10**5 if args.quick else 2 * 10**5), args.seed, 2 if args.quick else 3)
    print(f"| replay of {result['events']:,} events (SQLite) | events/s | ratio | target |")
    print("| --- | --- | --- | --- |")
    print(f"| fold alone (no database, one process) | {result['fold_events_per_s']:,.0f} | 1.00x | |")
    print(
        f"| `replay --jobs 1` | {result['jobs1_events_per_s']:,.0f} | {result['jobs1_vs_fold']:.2f}x the fold alone "
        f"| >= {FOLD_TARGET}x: {held(result['jobs1_vs_fold'] >= FOLD_TARGET)} |"
    )
    print(
        f"| `replay --jobs 2` | {result['jobs2_events_per_s']:,.0f} | {result['jobs2_vs_jobs1']:.2f}x `--jobs 1` "
        f"({result['jobs2_vs_fold']:.2f}x the fold alone) | >= {JOBS_TARGET}x: {held(result['jobs2_vs_jobs1'] >= JOBS_TARGET)} |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
