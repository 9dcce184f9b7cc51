#!/usr/bin/env python
"""benchledger performance benchmark: one script, one seeded workload, every baseline in the same run.

    .venv/bin/python -m benchmarks.run --quick            # about a minute
    .venv/bin/python -m benchmarks.run                    # the full run (10^4, 10^5, 10^6-event ledgers)

See benchmarks/README.md for what is measured, how, and the latest results. This module holds the
options and the driver; the measurements live in contenders.py, the big ledgers in synthetic_ledger.py,
the table in report.py.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import workload as wl
from benchmarks.contenders import (
    HAVE_EVENTSOURCING,
    bench_benchledger_ingest,
    bench_eventsourcing,
    bench_fold_only,
    bench_ingest_batches,
    bench_one_artifact,
    bench_plain_insert,
    bench_read_decode,
    bench_replay,
    bench_store_only,
    measure_latency,
    prepare,
    serial_ceiling,
)
from benchmarks.harness import DEFAULT_PG, Backend, PostgresBackend, SQLiteBackend, find_loopx, log
from benchmarks.report import render, update_readme
from benchmarks.synthetic_ledger import build_big_ledger, build_templates, verify_goal

# ---------------------------------------------------------------------------------------------
# driver
# ---------------------------------------------------------------------------------------------


@dataclass
class Settings:
    quick: bool
    seed: int
    goals: int
    sizes: list[int]
    latency_reps: int
    process_reps: int
    templates: int
    audit_smallest: bool


def run_backend(backend: Backend, s: Settings, templates: wl.Templates, loopx: str | None, workdir: Path, profile_dir: Path | None) -> dict[str, Any]:
    res: dict[str, Any] = {}
    log(f"[{backend.name}] workload: {s.goals} goals (seed {s.seed})")
    goals = wl.make_workload(templates, s.goals, s.seed)
    prep = prepare(goals)
    res["workload"] = {
        "goals": len(goals),
        "batches": len(prep.order),
        "artifacts": prep.artifact_count,
        "stored_payload_bytes_median": statistics.median(prep.payload_bytes),
        "stored_payload_bytes_mean": round(statistics.mean(prep.payload_bytes)),
        "input_bytes_median": statistics.median(prep.raw_bytes),
    }

    # 2. ingest throughput: bulk transactions (the target), and one transaction per batch
    url = backend.fresh_url("bulk")
    ledger = backend.open_store(url)
    for mode, bulk in (("bulk", True), ("per_batch", False)):
        target_url = url if bulk else backend.fresh_url("per_batch")
        target = ledger if bulk else backend.open_store(target_url)
        log(f"[{backend.name}] {mode} ingest: benchledger ({prep.artifact_count} artifacts, {len(prep.order)} batches, "
            f"{len(prep.transactions(bulk))} transactions)")
        res[f"{mode}_benchledger"] = bench_benchledger_ingest(target, prep, bulk=bulk)
        log(f"    {res[f'{mode}_benchledger']['events_per_s']:.0f} events/s")
        log(f"[{backend.name}] {mode} ingest: plain SQLAlchemy Core insert")
        res[f"{mode}_plain"] = bench_plain_insert(url, prep, bulk=bulk)
        res[f"{mode}_eventsourcing"] = None
        if HAVE_EVENTSOURCING:
            log(f"[{backend.name}] {mode} ingest: eventsourcing")
            try:
                res[f"{mode}_eventsourcing"] = bench_eventsourcing(backend.eventsourcing_env(backend.fresh_url(f"es_{mode}")), prep, bulk=bulk)
            except Exception as exc:  # e.g. eventsourcing[postgres] (psycopg_pool) missing
                log(f"note: eventsourcing on {backend.name} unavailable ({type(exc).__name__}: {exc}); skipping that baseline")
        if not bulk:
            target.close()
            backend.drop(target_url)
    # the same bulk backlog through `ingest-batches` (--jobs 1, then 2), and the store alone (projections off), each into a fresh ledger
    for mode, label, measure in (
        ("ingest_batches", "ingest-batches", lambda target: bench_ingest_batches(target, prep, workdir)),
        ("ingest_batches_jobs2", "ingest-batches --jobs 2", lambda target: bench_ingest_batches(target, prep, workdir, jobs=2)),
        ("store_only", "store-only append (projections off)", lambda target: bench_store_only(target, prep)),
    ):
        log(f"[{backend.name}] bulk ingest: benchledger {label}")
        target_url = backend.fresh_url(mode)
        target = backend.open_store(target_url)
        res[mode] = measure(target)
        log(f"    {res[mode]['events_per_s']:.0f} events/s")
        target.close()
        backend.drop(target_url)
    if profile_dir is not None:  # a separate, profiled pass into another fresh ledger (timings above stay clean)
        purl = backend.fresh_url("bulkprof")
        pledger = backend.open_store(purl)
        bench_benchledger_ingest(pledger, prep, bulk=True, profile_dir=profile_dir)
        bench_replay(pledger, profile_dir)
        pledger.close()
        backend.drop(purl)
        purl = backend.fresh_url("batchesprof")
        pledger = backend.open_store(purl)
        bench_ingest_batches(pledger, prep, workdir, profile_dir)
        pledger.close()
        backend.drop(purl)

    # 3. replay
    log(f"[{backend.name}] replay ({ledger.event_count()} events)")
    res["replay_benchledger"] = bench_replay(ledger)
    res["replay_plain"] = bench_read_decode(url)
    res["fold_only"] = bench_fold_only(ledger)
    ledger.close()
    res["serial_ceiling"] = serial_ceiling(
        res["bulk_benchledger"]["normalize_seconds"], res["fold_only"]["seconds"], res["bulk_plain"]["seconds"], prep.artifact_count
    )

    # 1. one artifact, whole process (into the bulk ledger, an existing goal each time)
    log(f"[{backend.name}] one-artifact ingest as a process x{s.process_reps}")
    docs = wl.standalone_comparisons(templates, s.process_reps + 1, s.seed + 1)
    res["one_artifact"] = bench_one_artifact(url, goals, docs, loopx, workdir, s.process_reps, profile_dir)
    backend.drop(url)

    # 4. history/show latency
    tpls = build_templates(templates, s.templates, s.seed + 2)
    by_size = sorted(range(len(tpls)), key=lambda i: (len(tpls[i].events), i))
    measured_template = by_size[len(by_size) // 2]  # an ordinary goal: the median-sized one
    res["latency"] = {}
    for size in s.sizes:
        url = backend.fresh_url(f"n{size}")
        ledger = backend.open_store(url)
        log(f"[{backend.name}] building a {size}-event ledger")
        t0 = time.perf_counter()
        goal_id, written = build_big_ledger(ledger, tpls, size, measured_template)
        build_s = time.perf_counter() - t0
        verify_goal(ledger, goal_id)
        audited = None
        if s.audit_smallest and size == min(s.sizes):
            from benchledger.ledger.service.maintenance import audit

            audited = audit(ledger)["ok"]
            if not audited:
                raise RuntimeError("the built ledger does not pass benchledger audit")
        log(f"    built {written} events in {build_s:.1f}s; measuring {goal_id}")
        lat = measure_latency(ledger, goal_id, s.latency_reps, profile_dir if size == max(s.sizes) else None, f"{backend.name}_{size}")
        lat.update(events=written, build_s=build_s, goal=goal_id, audited=audited)
        res["latency"][str(size)] = lat
        log(f"    history p50 {lat['history']['p50_ms']:.2f} ms p99 {lat['history']['p99_ms']:.2f} ms; show p50 {lat['show']['p50_ms']:.2f} ms")
        ledger.close()
        backend.drop(url)
    return res


def parse_sizes(text_value: str) -> list[int]:
    return [int(float(x)) for x in text_value.split(",") if x.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small workload and 10^4/10^5-event ledgers: about a minute")
    parser.add_argument("--backends", default="sqlite,postgresql", help="comma-separated: sqlite, postgresql (default both)")
    parser.add_argument("--postgres-url", default=DEFAULT_PG, help="server to create scratch databases on (default %(default)s; env BENCHLEDGER_BENCH_POSTGRES_URL)")
    parser.add_argument("--loopx", default=None, help="path to the loopx executable (default: env BENCHLEDGER_LOOPX, then loopx on PATH)")
    parser.add_argument("--seed", type=int, default=20260101)
    parser.add_argument("--goals", type=int, default=None, help="goals in the bulk workload (default 30 quick, 250 full)")
    parser.add_argument("--sizes", default=None, help="ledger sizes for history/show (default 1e4,1e5 quick; 1e4,1e5,1e6 full)")
    parser.add_argument("--no-1e6", dest="no_million", action="store_true", help="full run without the 10^6-event ledger")
    parser.add_argument("--json", dest="json_out", default=None, help="also write the raw results as JSON here")
    parser.add_argument("--update-readme", action="store_true", help="replace the results section of benchmarks/README.md")
    parser.add_argument("--profile", default=None, metavar="DIR", help="cProfile the benchledger side (bulk ingest, replay, history at the largest size) into DIR")
    parser.add_argument("--workdir", default=None, help="where scratch SQLite files go (default: the system temp dir)")
    args = parser.parse_args(argv)

    if args.sizes:
        sizes = parse_sizes(args.sizes)
    elif args.quick:
        sizes = [10**4, 10**5]
    else:
        sizes = [10**4, 10**5] + ([] if args.no_million else [10**6])
    s = Settings(
        quick=args.quick,
        seed=args.seed,
        goals=args.goals or (30 if args.quick else 250),
        sizes=sizes,
        latency_reps=200 if args.quick else 1000,
        process_reps=5 if args.quick else 25,
        templates=24 if args.quick else 64,
        audit_smallest=not args.quick,
    )
    workdir = Path(args.workdir or tempfile.gettempdir())
    profile_dir = Path(args.profile) if args.profile else None
    loopx = find_loopx(args.loopx)
    started = time.perf_counter()
    import sqlalchemy

    loopx_version = None
    if loopx:
        proc = subprocess.run([loopx, "--version"], capture_output=True, text=True)
        loopx_version = (proc.stdout or proc.stderr).strip().split()[-1] if proc.returncode == 0 else "unknown"
    else:
        log("note: LoopX not found (--loopx / BENCHLEDGER_LOOPX / PATH): skipping that baseline")
    if not HAVE_EVENTSOURCING:
        log("note: the eventsourcing library is not installed: skipping that baseline (pip install eventsourcing)")
    es_version = None
    if HAVE_EVENTSOURCING:
        from importlib.metadata import version

        es_version = version("eventsourcing")

    templates = wl.load_templates()
    results: dict[str, Any] = {
        "meta": {
            "when": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "mode": "quick" if s.quick else "full",
            "seed": s.seed,
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "sqlalchemy": sqlalchemy.__version__,
            "eventsourcing": es_version,
            "loopx": loopx_version,
            "sizes": s.sizes,
            "loadavg_start": os.getloadavg()[0],
        },
        "backends": {},
    }
    for name in [b.strip() for b in args.backends.split(",") if b.strip()]:
        if name == "sqlite":
            backend: Backend = SQLiteBackend(workdir)
        elif name in ("postgresql", "postgres"):
            try:
                backend = PostgresBackend(args.postgres_url)
            except Exception as exc:
                log(f"note: PostgreSQL at {args.postgres_url} is unreachable ({type(exc).__name__}); skipping it")
                continue
        else:
            raise SystemExit(f"unknown backend {name!r}")
        try:
            results["backends"][backend.name] = run_backend(backend, s, templates, loopx, workdir, profile_dir)
        finally:
            backend.cleanup()
    results["meta"]["total_s"] = time.perf_counter() - started
    results["meta"]["loadavg_end"] = os.getloadavg()[0]
    table = render(results)
    print(table)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=2))
    if args.update_readme:
        update_readme(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
