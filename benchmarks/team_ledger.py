"""A team ledger of 10^5 and 10^6 events on PostgreSQL (issue 31 item 6): what each command costs as a whole process.

    .venv/bin/python -m benchmarks.team_ledger --sizes 1e4          # a quick check of the script (a minute or two)
    .venv/bin/python -m benchmarks.team_ledger                      # 10^5 and 10^6 events, one run (about an hour on 2 shared cores)
    .venv/bin/python -m benchmarks.team_ledger --sizes 1e5 --keep   # keep the database (its URL is printed)

Options: ``--postgres-url`` (default ``$BENCHLEDGER_BENCH_POSTGRES_URL``, else
``$BENCHLEDGER_TEST_POSTGRES_URL``), ``--sizes``, ``--repeat`` (the bounded
commands, default 5), ``--heavy-repeat`` (the commands that read the whole ledger
or its runs, default 3), ``--jobs`` (of ``audit`` and ``replay``, default 2),
``--only`` (some commands only, comma-separated, named as the table names them, ``serve`` for its two rows),
``--templates``, ``--seed``, ``--json FILE``, ``--keep``.

**The ledger.** For each size, a database of its own on the server
(``CREATE DATABASE bench_team_<pid>_<events>``, migrated to head, dropped at the
end unless ``--keep``; no other database is touched), filled by
``synthetic_ledger.build_big_ledger``: ``--templates`` goals of the seeded
workload (benchmarks/workload.py: a preflight, a launch, 4-10 attempts of
baseline run + treatment run + comparison, post-launch records, some learning
ledgers and claim reviews) are ingested through the real path, then cloned under
new goal ids and positions by the store's own record builder, in waves of 100
goals whose batches interleave, written with ``COPY``, their stream heads,
projection rows, row counts and Merkle log included, then ``ANALYZE``d. So the
ledger holds many goals of a few attempts each, the runs ``runs --summary``
counts and the comparisons ``compare`` pairs, and it audits clean. Building is
timed and printed.

**What is measured**, each command a whole process (``python -m benchledger
--database-url URL ...``, start to exit, output discarded), the median of
``--repeat`` runs (``--heavy-repeat`` for the heavy ones), the commands
interleaved round by round so drift in the machine's load hits each alike:
``ingest`` of one attempt (the three documents of a new attempt, a different
ordinary goal and fresh documents each time), ``history --limit 50`` and ``show``
of an ordinary goal in the middle of the ledger, ``goals``, ``runs --summary``,
``compare``, ``audit --jobs N``, ``replay --jobs N``, ``export``, and ``serve``'s
index: the server started, the index fetched once over HTTP (start-up included:
``serve`` computes the index's comparisons before it listens) and then fetched
``--repeat`` times more (the median is the warm page). ``python -m benchledger
--version`` is the floor every process pays. Peak RSS (``ru_maxrss``) of each
command's slowest round is printed too.

Then one table: each command at each size, the ratio of the largest size to the
smallest, and the growth class that ratio reads as for 10x the events (flat:
< 1.5x; sub-linear (log): < 5x; linear: >= 5x), and per-event rates of the
commands that read every event (audit, replay, export).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from benchledger.ledger.storage.store import Store
from benchmarks import workload as wl
from benchmarks.harness import DEFAULT_PG, PostgresBackend, cli_url, log
from benchmarks.memory import peak_rss
from benchmarks.synthetic_ledger import build_big_ledger, build_templates, verify_goal

MIB = 1024 * 1024
BENCHLEDGER = [sys.executable, "-m", "benchledger"]
HEAVY = ("runs --summary", "compare", "serve index (start + first fetch)", "audit", "replay", "export")
PER_EVENT = ("audit", "replay", "export")
FLOOR = "--version (the floor)"


def growth_class(ratio: float, scale: float) -> str:
    """What a cost ratio reads as for ``scale`` times the events (module docstring)."""
    if ratio < 1.5:
        return "flat"
    if ratio < scale / 2:
        return "sub-linear (log)"
    return "linear"


def attempt_files(folder: Path, count: int, seed: int) -> list[list[Path]]:
    """``count`` new attempts (baseline run, treatment run, comparison), each as three files in ``folder``."""
    goal = wl.make_goal(wl.load_templates(), "team-new-attempts", random.Random(seed), attempts=count)
    attempts = [batch for batch in goal.batches if batch.kind is None and len(batch.documents) == 3][:count]
    out = []
    for i, batch in enumerate(attempts):
        paths = []
        for j, document in enumerate(batch.documents):
            path = folder / f"attempt-{i:03d}-{j}.json"
            path.write_bytes(document)
            paths.append(path)
        out.append(paths)
    return out


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def fetch(url: str) -> float:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=3600) as response:
        response.read()
    return time.perf_counter() - started


def serve_index(url: str, repeat: int) -> tuple[float, list[float]]:
    """Seconds from starting ``serve`` to its index fetched once, then the seconds of ``repeat`` more fetches."""
    port = free_port()
    started = time.perf_counter()
    server = subprocess.Popen(
        [*BENCHLEDGER, "--database-url", url, "serve", "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        if not server.stdout.readline():  # "serving ... at http://127.0.0.1:PORT/": it listens
            raise RuntimeError("serve exited before it listened")
        first = fetch(f"http://127.0.0.1:{port}/")
        cold = time.perf_counter() - started
        return cold, [fetch(f"http://127.0.0.1:{port}/") for _ in range(repeat)] or [first]
    finally:
        server.terminate()
        server.wait()


def measure(url: str, goals: list[str], measured: str, attempts: list[list[Path]], args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """The seconds (each round) and the peak RSS (of the slowest round) of every command on the ledger at ``url``."""
    db = [*BENCHLEDGER, "--database-url", url]
    commands: dict[str, list[str]] = {
        FLOOR: [*BENCHLEDGER, "--version"],
        "history --limit 50": [*db, "history", "--goal", measured, "--limit", "50"],
        "show": [*db, "show", "--goal", measured],
        "goals": [*db, "goals"],
        "runs --summary": [*db, "runs", "--summary"],
        "compare": [*db, "compare"],
        "audit": [*db, "audit", "--jobs", str(args.jobs)],
        "replay": [*db, "replay", "--jobs", str(args.jobs)],
        "export": [*db, "export"],
    }
    found: dict[str, dict[str, Any]] = {name: {"seconds": [], "rss": 0} for name in [*commands, "ingest (one attempt)", *HEAVY]}
    warm: list[float] = []
    rounds = max(args.repeat, args.heavy_repeat)
    # warm the page cache and the interpreter's files once (not counted)
    for name in (FLOOR, "history --limit 50", "show"):
        peak_rss(commands[name])
    step = max(1, len(goals) // (rounds + 1))
    for r in range(rounds):
        heavy = r < args.heavy_repeat
        log(f"  round {r + 1} of {rounds}{'' if heavy else ' (bounded commands only)'}")
        runs: list[tuple[str, list[str]]] = [
            ("ingest (one attempt)", [*db, "ingest", "--goal", goals[(r + 1) * step], *map(str, attempts[r])]),
            *((name, argv) for name, argv in commands.items() if heavy or name not in HEAVY),
        ]
        runs = [(name, argv) for name, argv in runs if args.only is None or name in args.only or name == FLOOR]
        for name, argv in runs:
            rss, seconds = peak_rss(argv)
            entry = found[name]
            if seconds >= max(entry["seconds"], default=0):
                entry["rss"] = rss
            entry["seconds"].append(seconds)
        if heavy and (args.only is None or "serve" in args.only):
            cold, fetches = serve_index(url, args.repeat)
            found["serve index (start + first fetch)"]["seconds"].append(cold)
            warm += fetches
    found["serve index (warm fetch)"] = {"seconds": warm, "rss": 0}
    return {name: {**entry, "median": statistics.median(entry["seconds"])} for name, entry in found.items() if entry["seconds"]}


def build(url: str, events: int, args: argparse.Namespace) -> dict[str, Any]:
    """Fill the migrated, empty ledger at ``url`` with about ``events`` events (module docstring); what a measurement needs of it."""
    started = time.perf_counter()
    templates = build_templates(wl.load_templates(), args.templates, args.seed)
    ledger = Store.open(url, migrate=False)
    try:
        cloned = time.perf_counter()
        measured, written = build_big_ledger(ledger, templates, events, measured_template=0)
        done = time.perf_counter()
        verify_goal(ledger, measured)
        goals = sorted(head["goal_id"] for head in ledger.heads())
        return {
            "events": ledger.event_count(), "goals": goals, "measured_goal": measured,
            "templates_s": cloned - started, "build_s": done - cloned, "written": written,
        }
    finally:
        ledger.close()


def one_size(backend: PostgresBackend, events: int, args: argparse.Namespace, attempts: list[list[Path]]) -> dict[str, Any]:
    """Build and measure one ledger. Both run in children: this process stays small, so the peak RSS of the commands
    it starts is theirs (Linux carries a process's high-water mark over fork and exec)."""
    url = backend.fresh_url(str(events))
    try:
        backend.open_store(url).close()  # migrated to head, as `benchledger db upgrade` leaves it
        me = [sys.executable, "-m", "benchmarks.team_ledger", "--templates", str(args.templates), "--seed", str(args.seed)]
        built = json.loads(subprocess.run([*me, "--build-only", url, str(events)], check=True, capture_output=True, text=True).stdout)
        log(f"built {built['events']:,} events in {len(built['goals']):,} goals: {built['build_s']:.0f} s "
            f"({built['written'] / built['build_s']:,.0f} events/s) after {built['templates_s']:.0f} s ingesting the templates; measuring")
        results = measure(cli_url(url), built["goals"], built["measured_goal"], attempts, args)
        size = {**built, "goals": len(built["goals"]), "commands": results}
        if args.keep:
            log(f"kept {cli_url(url)}")
        return size
    finally:
        if not args.keep:
            backend.drop(url)


def report(sizes: list[dict[str, Any]], args: argparse.Namespace) -> None:
    first, last = sizes[0], sizes[-1]
    scale = last["events"] / first["events"]
    heads = " | ".join(f"{s['events']:,} events ({s['goals']:,} goals)" for s in sizes)
    floor = FLOOR
    print(f"| command (whole process, median; peak RSS) | {heads} | ratio | ratio above the floor | growth for {scale:.0f}x the events |")
    print("| --- |" + " --- |" * (len(sizes) + 3))
    for name in first["commands"]:
        cells = []
        for s in sizes:
            entry = s["commands"][name]
            rss = f"; {entry['rss'] / MIB:,.0f} MiB" if entry["rss"] else ""
            cells.append(f"{entry['median']:,.3f} s (n={len(entry['seconds'])}{rss})")
        ratio = last["commands"][name]["median"] / first["commands"][name]["median"]
        above = (last["commands"][name]["median"] - last["commands"][floor]["median"]) / max(
            first["commands"][name]["median"] - first["commands"][floor]["median"], 1e-3)
        if name == floor or name.endswith("(warm fetch)"):  # (a fetch pays no process start)
            above_cell = "—"
        else:
            above_cell = f"{above:.2f}x"
        growth = "—" if name == floor else growth_class(ratio, scale)
        print(f"| `{name}` | {' | '.join(cells)} | {ratio:.2f}x | {above_cell} | {growth} |")
    print()
    for s in sizes:
        rates = ", ".join(f"{name} {s['events'] / s['commands'][name]['median']:,.0f}" for name in PER_EVENT if name in s["commands"])
        print(f"{s['events']:,} events: built in {s['build_s']:.0f} s (after {s['templates_s']:.0f} s ingesting the templates); events per second, whole process: {rates}")
    if args.json:
        args.json.write_text(json.dumps(sizes, indent=2) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--postgres-url", default=DEFAULT_PG, help="the server (a database of its own is created on it per size)")
    parser.add_argument("--sizes", default="1e5,1e6", help="ledger sizes in events, comma-separated (default 1e5,1e6)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of each bounded command (the median is kept)")
    parser.add_argument("--heavy-repeat", type=int, default=3, help="timed runs of runs --summary, compare, serve, audit, replay, export")
    parser.add_argument("--jobs", type=int, default=2, help="audit and replay --jobs")
    parser.add_argument("--templates", type=int, default=64, help="real goals ingested once and cloned")
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--keep", action="store_true", help="keep the databases (their URLs are printed)")
    parser.add_argument("--only", type=lambda names: set(names.split(",")),
                        help="measure only these commands (comma-separated names as the table prints them, or serve)")
    parser.add_argument("--json", type=Path, help="also write the figures there")
    parser.add_argument("--build-only", nargs=2, metavar=("URL", "EVENTS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.build_only:
        print(json.dumps(build(args.build_only[0], int(args.build_only[1]), args)))
        return 0
    sizes = sorted(int(float(s)) for s in args.sizes.split(","))
    log(f"load average {os.getloadavg()}")
    backend = PostgresBackend(args.postgres_url)
    backend.prefix = f"bench_team_{os.getpid()}"
    results = []
    with tempfile.TemporaryDirectory(prefix="team-ledger-") as folder:
        attempts = attempt_files(Path(folder), len(sizes) * max(args.repeat, args.heavy_repeat), args.seed + 1)
        try:
            for i, events in enumerate(sizes):
                reps = max(args.repeat, args.heavy_repeat)
                results.append(one_size(backend, events, args, attempts[i * reps : (i + 1) * reps]))
        finally:
            if not args.keep:
                backend.cleanup()
            else:
                backend.admin.dispose()
    log(f"load average {os.getloadavg()}")
    report(results, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
