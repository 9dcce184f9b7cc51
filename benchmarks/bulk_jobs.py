"""``ingest-batches --jobs N``: the bulk ingest on every core, against ``--jobs 1`` and the serial ceiling, in one run.

    .venv/bin/python -m benchmarks.bulk_jobs --quick                      # SQLite, 30 goals (878 artifacts), 3 rounds
    .venv/bin/python -m benchmarks.bulk_jobs --backends sqlite,postgresql --goals 250

One seeded workload (``benchmarks.workload``, that of ``benchmarks.run``) written once as an
``ingest-batches`` file; then, in rounds whose order alternates (1, 2, then 2, 1, ...), the file
ingested by ``ledger.service.bulk.ingest_batch_file`` (what ``benchledger ingest-batches FILE
--jobs N`` runs) with each ``--jobs``, each into a fresh ledger; medians. Each run's wall time is
split into the validation pass (parse, normalize, guard, spool: the part the workers take) and the
append (one writer: events, chain, the projections' fold, commits), and its CPU time is that of
this process and of its children (``getrusage``: user + sys, the workers counted once the pool has
joined them), so a loaded machine shows whether the work was spread even when the wall clock gains
little. In the same run: the serial ceiling of ``benchmarks.run`` (1 / (1/n + 1/f + 1/p):
normalization alone, the fold alone of the ledger a ``--jobs 1`` run made, the plain Core insert),
and the stage costs of one more ``--jobs 1`` run with every stage timed (exclusive time: a stage
called inside another is not counted in the outer one).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import gc
import json
import os
import resource
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from benchledger.ledger.service import bulk, goal_folds, ingest
from benchledger.ledger.service.intake.artifacts import to_artifact
from benchledger.ledger.service.intake.files import parse_document
from benchledger.ledger.storage import append
from benchledger.ledger.storage.transaction import Transaction
from benchmarks import workload as wl
from benchmarks.contenders import (
    Prepared,
    bench_fold_only,
    bench_plain_insert,
    prepare,
    serial_ceiling,
    write_batch_lines,
)
from benchmarks.harness import (
    DEFAULT_PG,
    Backend,
    PostgresBackend,
    SQLiteBackend,
    cli_url,
    find_benchledger,
    log,
    timed_process,
)

# (owner, attribute, stage) of the stage-cost run.
STAGES = (
    (bulk, "parse_document", "validate: parse the line's JSON"),
    (bulk, "canonical_json", "validate: each document's canonical JSON and source hash"),
    (bulk, "embedded_document", "validate: each document's canonical JSON and source hash"),
    (bulk, "to_artifact", "validate: normalize (compaction, public-safe checks)"),
    (append, "storage_problems", "validate: the store's guard"),
    (bulk, "check_batch", "validate: events, ids, manifest, receipt"),
    (bulk, "spool_line", "validate: the spool line"),
    (bulk, "unspooled", "append: read the spool"),
    (bulk.Ingest, "commit", "append: events, ids, manifests, insert, chain, commit"),
    (goal_folds.FoldsHere, "appended", "append: the projections' fold"),  # (each chunk, as it is appended)
    (ingest, "materialize_goals", "append: the projections' fold"),
    (Transaction, "upsert_projection_rows", "append: write the projection rows"),
    (Transaction, "write_projection_rows_diff", "append: write the projection rows"),
    (Transaction, "projection_rows_diff", "append: write the projection rows"),
)
ROOT_STAGE = "the rest (reading lines, goal names, the report)"


class ExclusiveClock:
    """Seconds spent in each stage, exclusive: while a stage runs inside another, the outer one's clock stops.

    Both wall time (``seconds``) and this process's CPU time (``cpu``): on a loaded machine the wall time of a stage
    is mostly waiting for a core, its CPU time is not; on PostgreSQL the server's work is in the wall time only.
    """

    def __init__(self) -> None:
        self.seconds: collections.Counter[str] = collections.Counter()
        self.cpu: collections.Counter[str] = collections.Counter()
        self._stack: list[list[Any]] = []

    def timed(self, function: Callable[..., Any], stage: str) -> Callable[..., Any]:
        @functools.wraps(function)
        def timed_function(*args: Any, **kwargs: Any) -> Any:
            self._enter(stage)
            try:
                return function(*args, **kwargs)
            finally:
                self._leave()

        return timed_function

    def _enter(self, stage: str) -> None:
        now, cpu = time.perf_counter(), time.process_time()
        if self._stack:
            outer = self._stack[-1]
            self.seconds[outer[0]] += now - outer[1]
            self.cpu[outer[0]] += cpu - outer[2]
        self._stack.append([stage, now, cpu])

    def _leave(self) -> None:
        now, cpu = time.perf_counter(), time.process_time()
        stage, started, started_cpu = self._stack.pop()
        self.seconds[stage] += now - started
        self.cpu[stage] += cpu - started_cpu
        if self._stack:
            self._stack[-1][1:] = [now, cpu]

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        originals = [(owner, name, getattr(owner, name)) for owner, name, _ in STAGES]
        for owner, name, stage in STAGES:
            setattr(owner, name, self.timed(getattr(owner, name), stage))
        self._enter(ROOT_STAGE)
        try:
            yield
        finally:
            self._leave()
            for owner, name, original in originals:
                setattr(owner, name, original)


@contextlib.contextmanager
def validation_timed(into: dict[str, float]) -> Iterator[None]:
    """The wall time of ``ingest_batch_file``'s validation pass (``bulk._validate``: one call) put in ``into``."""
    original = bulk._validate

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            into["validate_seconds"] = time.perf_counter() - start

    bulk._validate = timed
    try:
        yield
    finally:
        bulk._validate = original


@contextlib.contextmanager
def writer_waits_timed(into: dict[str, float]) -> Iterator[None]:
    """The wall time this process's main thread (the writer) spends blocked waiting for the fold workers (``fold_workers``:
    ``multiprocessing.connection.wait`` without a timeout) put in ``into`` as ``writer_wait_seconds``: its idle time in the
    append (the validation's pool waits in other threads, not counted)."""
    import multiprocessing.connection

    original = multiprocessing.connection.wait
    into["writer_wait_seconds"] = 0.0

    def timed(object_list: Any, timeout: float | None = None) -> Any:
        if timeout is not None or threading.current_thread() is not threading.main_thread():
            return original(object_list, timeout)
        start = time.perf_counter()
        try:
            return original(object_list, timeout)
        finally:
            into["writer_wait_seconds"] += time.perf_counter() - start

    multiprocessing.connection.wait = timed  # type: ignore[assignment]
    try:
        yield
    finally:
        multiprocessing.connection.wait = original


def _cpu() -> tuple[float, float]:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def ingest_file(backend: Backend, path: Path, prep: Prepared, jobs: int, label: str, keep: bool = False) -> dict[str, Any]:
    """One timed ``ingest_batch_file(..., jobs=jobs)`` into a fresh ledger: wall, validation, append, CPU of each process."""
    url = backend.fresh_url(label)
    ledger = backend.open_store(url)
    measured: dict[str, Any] = {"jobs": jobs}
    # What this process holds (the workload, earlier runs' results) frozen out of the collector's reach, as the command
    # freezes what its imports made (cli/main.py): a `benchledger ingest-batches` process holds none of it, and its
    # collections, and its forked workers' copies of every page they touch, would otherwise be charged to the run.
    gc.collect()
    gc.freeze()
    with validation_timed(measured), writer_waits_timed(measured):
        own0, children0 = _cpu()
        start = time.perf_counter()
        report = bulk.ingest_batch_file(ledger, str(path), jobs=jobs)
        elapsed = time.perf_counter() - start
        own1, children1 = _cpu()
    if not report.ok or report.appended + report.duplicates != prep.artifact_count:
        raise RuntimeError(f"ingest-batches --jobs {jobs} took {report.appended + report.duplicates} of {prep.artifact_count} artifacts: {report.errors}")
    measured.update(
        seconds=elapsed,
        events_per_s=prep.artifact_count / elapsed,
        append_seconds=elapsed - measured["validate_seconds"],
        cpu_parent=own1 - own0,
        cpu_children=children1 - children0,
        result=report.as_dict(),
    )
    if keep:
        measured["ledger"], measured["url"] = ledger, url
    else:
        ledger.close()
        backend.drop(url)
    return measured


def whole_process(backend: Backend, path: Path, jobs: int, label: str) -> float:
    """Seconds of ``benchledger ingest-batches --jobs JOBS FILE`` as a user runs it, a process of its own (start-up and
    the ledger's close included), into a ledger made empty before (``db upgrade``, not timed: one ingests into a ledger)."""
    url = cli_url(backend.fresh_url(label))
    benchledger = find_benchledger()
    env = {**os.environ, "NO_COLOR": "1"}
    timed_process([*benchledger, "--database-url", url, "db", "upgrade"], env)
    try:
        return timed_process([*benchledger, "--database-url", url, "ingest-batches", "--jobs", str(jobs), str(path)], env)
    finally:
        backend.drop(url)


def normalize_alone(prep: Prepared) -> float:
    """``parse_document`` + ``to_artifact`` of every document (the n of the serial ceiling, as ``benchmarks.run`` times it)."""
    gc.collect()
    start = time.perf_counter()
    for _goal, batch in prep.order:
        [to_artifact(parse_document(doc, "bench"), batch.kind) for doc in batch.documents]
    return time.perf_counter() - start


def stage_costs(backend: Backend, path: Path, prep: Prepared) -> dict[str, dict[str, float]]:
    """Seconds per stage (``wall`` and ``cpu``) of one ``--jobs 1`` run with every stage timed (:data:`STAGES`)."""
    url = backend.fresh_url("stages")
    ledger = backend.open_store(url)
    clock = ExclusiveClock()
    gc.collect()
    with clock.installed():
        report = bulk.ingest_batch_file(ledger, str(path), jobs=1)
    assert report.ok
    ledger.close()
    backend.drop(url)
    return {"wall": dict(clock.seconds), "cpu": dict(clock.cpu)}


def run_backend(backend: Backend, goals: int, seed: int, rounds: int, jobs: int, workdir: Path) -> dict[str, Any]:
    prep = prepare(wl.make_workload(wl.load_templates(), goals, seed))
    artifacts = prep.artifact_count
    path = Path(tempfile.mkstemp(prefix="bench-batches-", suffix=".ndjson", dir=workdir)[1])
    write_batch_lines(prep, path)
    log(f"[{backend.name}] {goals} goals, {artifacts} artifacts, {len(prep.order)} lines ({path.stat().st_size / 2**20:.1f} MiB)")
    runs: dict[int, list[dict[str, Any]]] = {1: [], jobs: []}
    kept = None
    try:
        for round_ in range(rounds):
            for n in (1, jobs) if round_ % 2 == 0 else (jobs, 1):
                keep = n == 1 and kept is None
                measured = ingest_file(backend, path, prep, n, f"jobs{n}_{round_}", keep=keep)
                if keep:
                    kept = measured
                runs[n].append(measured)
                log(
                    f"    --jobs {n}: {measured['events_per_s']:,.0f} artifacts/s (validate {measured['validate_seconds']:.2f} s, "
                    f"append {measured['append_seconds']:.2f} s, writer waiting {measured['writer_wait_seconds']:.2f} s; CPU parent {measured['cpu_parent']:.2f} s, children {measured['cpu_children']:.2f} s)"
                )
        processes: dict[int, list[float]] = {1: [], jobs: []}
        for round_ in range(rounds):
            for n in (1, jobs) if round_ % 2 == 0 else (jobs, 1):
                processes[n].append(whole_process(backend, path, n, f"process{n}_{round_}"))
                log(f"    benchledger ingest-batches --jobs {n} (a process of its own): {processes[n][-1]:.2f} s")
        assert kept is not None
        same = {json.dumps(m["result"], sort_keys=True) for n in runs for m in runs[n]}
        if len(same) != 1:
            raise RuntimeError(f"the runs reported different outcomes: {same}")
        fold = bench_fold_only(kept["ledger"])
        kept["ledger"].close()
        backend.drop(kept["url"])
        plain_url = backend.fresh_url("plain")
        plain = bench_plain_insert(plain_url, prep, bulk=True)
        backend.drop(plain_url)
        normalize_s = normalize_alone(prep)
        stages = stage_costs(backend, path, prep)
    finally:
        path.unlink(missing_ok=True)
    ceiling = serial_ceiling(normalize_s, fold["seconds"], plain["seconds"], artifacts)
    return {
        "goals": goals,
        "artifacts": artifacts,
        "lines": len(prep.order),
        "runs": {n: [{k: v for k, v in m.items() if k not in ("ledger", "url", "result")} for m in ms] for n, ms in runs.items()},
        "processes": processes,
        "ceiling": ceiling,
        "normalize_per_s": artifacts / normalize_s,
        "fold_per_s": fold["events_per_s"],
        "plain_per_s": plain["events_per_s"],
        "stages": stages,
    }


def _median(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(m[key] for m in runs)


def render(name: str, res: dict[str, Any], jobs: int) -> str:
    one, many = res["runs"][1], res["runs"][jobs]
    rate1, rate_n = _median(one, "events_per_s"), _median(many, "events_per_s")
    lines = [
        f"### {name}: {res['goals']} goals, {res['artifacts']} artifacts, {res['lines']} lines; {len(one)} runs each, medians",
        "",
        "| `ingest-batches` | artifacts/s | wall s | validate s | append s | writer waits s | CPU parent s | CPU workers s | CPU / wall | parent + workers / N, s | max(parent, all / N), s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    critical, overlapped = {}, {}
    for n, runs in ((1, one), (jobs, many)):
        wall = _median(runs, "seconds")
        cpu = _median(runs, "cpu_parent") + _median(runs, "cpu_children")
        critical[n] = _median(runs, "cpu_parent") + _median(runs, "cpu_children") / n
        overlapped[n] = max(_median(runs, "cpu_parent"), cpu / n)
        lines.append(
            f"| `--jobs {n}` | {_median(runs, 'events_per_s'):,.0f} | {wall:.2f} | {_median(runs, 'validate_seconds'):.2f} | "
            f"{_median(runs, 'append_seconds'):.2f} | {statistics.median(m.get('writer_wait_seconds', 0.0) for m in runs):.2f} | {_median(runs, 'cpu_parent'):.2f} | {_median(runs, 'cpu_children'):.2f} | {cpu / wall:.2f} | "
            f"{critical[n]:.2f} | {overlapped[n]:.2f} |"
        )
    ratio_jobs = rate_n / rate1
    ratio_ceiling = rate1 / res["ceiling"]
    lines += [
        "",
        "(writer waits: the wall time the writer spent blocked waiting for the fold workers, its idle time in the append; "
        "CPU / wall: the cores the run was given on average; parent + workers / N: its wall time on N idle cores if the "
        "parent waited whenever the workers work, each doing a 1/N share; max(parent, all / N): if nobody ever waited "
        "(the bound the pipelining of the fold tends to: the truth on idle cores is between the two).)",
        "",
        f"`--jobs {jobs}` / `--jobs 1`: **{ratio_jobs:.2f}×** {'✅' if ratio_jobs >= 1.6 else '❌'} (target ≥ 1.6; "
        f"on idle cores, by CPU time: {critical[1] / critical[jobs]:.2f}× to {overlapped[1] / overlapped[jobs]:.2f}×); "
        f"`--jobs 1` / serial ceiling {res['ceiling']:,.0f} artifacts/s (normalize {res['normalize_per_s']:,.0f}/s, "
        f"fold {res['fold_per_s']:,.0f} events/s, plain insert {res['plain_per_s']:,.0f}/s): "
        f"**{ratio_ceiling:.2f}×** {'✅' if ratio_ceiling >= 0.6 else '❌'} (target ≥ 0.6)",
        "",
        *_processes_line(res, jobs),
        "Stage costs of one more `--jobs 1` run (exclusive time, µs an artifact; CPU: this process's):",
        "",
        "| stage | wall µs / artifact | share | CPU µs / artifact | share |",
        "| --- | --- | --- | --- | --- |",
    ]
    wall, cpu = res["stages"]["wall"], res["stages"]["cpu"]
    total, total_cpu = sum(wall.values()), sum(cpu.values())
    for stage, spent in sorted(cpu.items(), key=lambda item: -item[1]):
        lines.append(
            f"| {stage} | {1e6 * wall[stage] / res['artifacts']:.0f} | {wall[stage] / total:.0%} | "
            f"{1e6 * spent / res['artifacts']:.0f} | {spent / total_cpu:.0%} |"
        )
    lines.append(
        f"| **total** (the instrumented run) | **{1e6 * total / res['artifacts']:.0f}** | | **{1e6 * total_cpu / res['artifacts']:.0f}** | |"
    )
    return "\n".join(lines) + "\n"


def _processes_line(res: dict[str, Any], jobs: int) -> list[str]:
    """The command as a user runs it (:func:`whole_process`), if this run measured it."""
    processes = res.get("processes")
    if not processes:
        return []
    one, many = (statistics.median(processes[n]) for n in (1, jobs))
    shown = "; ".join(f"`--jobs {n}` " + ", ".join(f"{s:.2f}" for s in processes[n]) + " s" for n in (1, jobs))
    return [
        f"`benchledger ingest-batches` as a process of its own (start-up and close included, into an empty ledger made "
        f"before): `--jobs 1` {one:.2f} s, `--jobs {jobs}` {many:.2f} s (medians; {shown}): **{one / many:.2f}×**",
        "",
    ]


def _heading(results: dict[str, Any]) -> str:
    def load(values: list[float]) -> str:
        return "/".join(f"{x:.1f}" for x in values)

    return (
        f"Run {results['when']}, {results['cpus']} CPUs; load average (1/5/15 min) {load(results['load_start'])} at start, "
        f"{load(results['load_end'])} at end.\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the quick workload of benchmarks.run (30 goals)")
    parser.add_argument("--goals", type=int, default=None, help="goals in the workload (default 30 quick, 250 full)")
    parser.add_argument("--backends", default="sqlite", help="comma-separated: sqlite, postgresql (default %(default)s)")
    parser.add_argument("--postgres-url", default=DEFAULT_PG)
    parser.add_argument("--rounds", type=int, default=3, help="runs of each --jobs (alternating order)")
    parser.add_argument("--jobs", type=int, default=2, help="the --jobs compared with --jobs 1 (default %(default)s)")
    parser.add_argument("--seed", type=int, default=20260101)
    parser.add_argument("--json", dest="json_out", default=None, help="also write the raw results as JSON here")
    parser.add_argument("--render", default=None, metavar="JSON", help="print the tables of a run saved with --json, run nothing")
    args = parser.parse_args(argv)
    if args.render:
        saved = json.loads(Path(args.render).read_text())
        print(_heading(saved))
        for name, res in saved["backends"].items():
            res["runs"] = {int(n): runs for n, runs in res["runs"].items()}
            res["processes"] = {int(n): times for n, times in res.get("processes", {}).items()}
            print(render(name, res, max(res["runs"])))
        return 0
    goals = args.goals or (30 if args.quick else 250)
    workdir = Path(tempfile.mkdtemp(prefix="bulk-jobs-"))
    results: dict[str, Any] = {
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cpus": len(os.sched_getaffinity(0)),
        "load_start": os.getloadavg(),
        "backends": {},
    }
    for name in [b.strip() for b in args.backends.split(",") if b.strip()]:
        backend: Backend = SQLiteBackend(workdir) if name == "sqlite" else PostgresBackend(args.postgres_url)
        try:
            results["backends"][backend.name] = run_backend(backend, goals, args.seed, args.rounds, args.jobs, workdir)
        finally:
            backend.cleanup()
    results["load_end"] = os.getloadavg()
    print(_heading(results))
    for name, res in results["backends"].items():
        print(render(name, res, args.jobs))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
