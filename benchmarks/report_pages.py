"""``benchledger report`` and ``serve`` on a goal of 10^4 attempts against one of 100 (issue 31 item 1: the report costs what it writes).

    .venv/bin/python -m benchmarks.report_pages                           # SQLite and PostgreSQL; builds the ledgers once (minutes)
    .venv/bin/python -m benchmarks.report_pages --backends sqlite --repeat 3

One ledger per backend holds two goals grown through the real path
(``benchmarks.growth.grow``: whole batches in transactions of about 500
artifacts): ``report-100`` (100 attempts) and ``report-10000`` (10^4 attempts,
about 44,000 events). It is kept for the next run: the SQLite file
``--sqlite`` and the PostgreSQL database ``benchledger_report_pages`` on the
server of ``--postgres-url`` (``--drop`` removes it at the end). Then, on each
backend, in one run:

1. **Pages written**, in this process: the goal's report site
   (``pages.write_site`` of a ``Site`` over that goal, as ``report --goal``
   builds it, without the audit: its cost is the ledger's, not the pages'),
   seconds per file written (the fastest of ``--write-repeat``); the target is the 10^4-attempt goal's ≤ 2× the
   100-attempt goal's.
2. **The whole command**: ``benchledger report --goal G`` as a process
   (start-up and the audit of G, which its index shows, included: since run 4 it runs in a
   child process while the pages are written, the index last; since run 5 it is the history-only
   audit, ``audit --history-only``), and ``report --goal G --full-audit`` (the full audit, projections refolded).
3. **``serve``**: the console script on a free port; once its background
   audit has finished, each goal's first page, ``batches-2.html``, the middle
   page and the last page of its comparisons table, fetched over HTTP ``--repeat`` times (median);
   the target is every page ≤ 2× its goal's first page.
4. The whole report of the 10^4-attempt goal against one ``serve`` page of it
   (its first page, the median; the costliest, since the other pages cost less
   than it): target ≤ 10×. ``serve`` keeps a goal's comparisons, pass rates and
   overview while the goal has no new event, so that median is a page whose
   every-run reads are kept; the first fetch of the page (which reads them) is shown beside it. Both reports, the
   default and ``--full-audit``, are set against both. Beside them, the pages alone (step 1) and the audit
   alone (``benchledger audit --goal G --jobs 1 [--history-only]`` as a process) against the same page.

``--sizes 100,3000`` builds smaller goals (the ratios show the same on a loaded machine, at a third of the cost).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from sqlalchemy import create_engine, text

from benchledger.cli.web import pages
from benchledger.ledger import api
from benchledger.ledger.storage.engine import normalize_url
from benchledger.ledger.storage.migrate import upgrade
from benchledger.ledger.storage.store import Store
from benchmarks.growth import grow
from benchmarks.harness import cli_url, find_benchledger, log
from benchmarks.serve_pages import free_port

SIZES = (100, 10_000)
PG_DATABASE = "benchledger_report_pages"
PAGE_TARGET, SERVE_TARGET, WHOLE_TARGET = 2.0, 2.0, 10.0  # issue 31 item 1


def goal_id(attempts: int) -> str:
    return f"report-{attempts}"


def build(url: str, seed: int, sizes: tuple[int, ...] = SIZES) -> None:
    ledger = Store.open(url, migrate=False)
    try:
        upgrade(ledger.engine)  # `benchledger db upgrade` (a new PostgreSQL database; a no-op when current)
        for attempts in sizes:
            if ledger.head(goal_id(attempts)) is None:
                started = time.perf_counter()
                events = grow(ledger, goal_id(attempts), attempts, seed + attempts)
                log(f"grew {goal_id(attempts)} ({events} events) in {time.perf_counter() - started:.0f} s")
        if ledger.dialect == "postgresql":  # statistics, as autovacuum would gather them (the test server runs without it)
            with ledger.engine.begin() as connection:
                connection.execute(text("ANALYZE"))
    finally:
        ledger.close()


def postgres_url(server_url: str, database: str = PG_DATABASE) -> str:
    admin = create_engine(normalize_url(server_url), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            if connection.execute(text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": database}).first() is None:
                connection.execute(text(f'CREATE DATABASE "{database}"'))
        return admin.url.set(database=database).render_as_string(hide_password=False)
    finally:
        admin.dispose()


def drop_postgres(server_url: str, database: str = PG_DATABASE) -> None:
    admin = create_engine(normalize_url(server_url), isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'))
    admin.dispose()


def page_kind(path: str) -> str:
    """What a written file is, for its cost: the files of one kind cost alike, whatever the goal's size (kinds differ tenfold)."""
    parts = path.split("/")
    if parts[0] != "goals":
        return "index and assets"
    if len(parts) == 3:
        return "goal's first page" if parts[2] == "index.html" else "later listing pages"
    return "review files"


def pages_written(url: str, goal: str) -> tuple[float, int, dict[str, tuple[float, int]]]:
    """Seconds to write the goal's site in this process (no audit), how many files, and (seconds, files) per :func:`page_kind`."""
    ledger = api.open(url)
    try:
        with ledger.snapshot() as view, tempfile.TemporaryDirectory() as folder:
            site = pages.Site(view, [goal], lambda: None, written=True)
            kinds: dict[str, tuple[float, int]] = {}
            render = site.render

            def timed(path: str) -> pages.Page | None:
                started = time.perf_counter()
                page = render(path)
                seconds, files = kinds.get(page_kind(path), (0.0, 0))
                kinds[page_kind(path)] = (seconds + time.perf_counter() - started, files + 1)
                return page

            site.render = timed  # type: ignore[method-assign]
            started = time.perf_counter()
            written = pages.write_site(site, Path(folder) / "site")
            return time.perf_counter() - started, written, kinds
    finally:
        ledger.close()


def whole_report(url: str, goal: str, *options: str) -> float:
    """``benchledger report --goal G [options]`` as a process (default: the history-only audit on its index; ``--full-audit``)."""
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        subprocess.run(
            [*find_benchledger(), "--database-url", cli_url(url), "report", "--goal", goal, *options, "--output", f"{folder}/site"],
            check=True, stdout=subprocess.DEVNULL,
        )
        return time.perf_counter() - started


def goal_audit(url: str, goal: str, *options: str) -> float:
    """``benchledger audit --goal G --jobs 1 [--history-only]`` as a process: the audit ``report --goal G [--full-audit]`` shows."""
    started = time.perf_counter()
    subprocess.run(
        [*find_benchledger(), "--database-url", cli_url(url), "audit", "--goal", goal, "--jobs", "1", *options], check=True, stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


def fetch(url: str) -> float:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=600) as response:
        response.read()
    return time.perf_counter() - started


def serve_pages(url: str, page_counts: dict[str, int], repeat: int) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """Median seconds of each measured page of each goal, over HTTP, after the server's background audit finished; and each
    goal's first page as first fetched (its comparisons and chart series read: what the server keeps after it)."""
    port = free_port()
    server = subprocess.Popen(
        [*find_benchledger(), "--database-url", cli_url(url), "serve", "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        server.stdout.readline()  # "serving ... at http://127.0.0.1:PORT/": it listens
        base = f"http://127.0.0.1:{port}/"
        deadline = time.monotonic() + 1800
        while time.monotonic() < deadline:  # the audit shares the machine with the pages until it is done
            with urllib.request.urlopen(base, timeout=600) as response:
                if b"running\xe2\x80\xa6" not in response.read():
                    break
            time.sleep(2)
        measured: dict[str, dict[str, float]] = {}
        first_fetch: dict[str, float] = {}
        for goal, count in page_counts.items():
            names = {"first page": "index.html"}
            for number in sorted({2, (count + 1) // 2, count} - {1}):
                if number <= count:
                    names[f"batches-{number}"] = f"batches-{number}.html"
            measured[goal] = {}
            for label, name in names.items():
                page = f"{base}goals/{goal}/{name}"
                cold = fetch(page)  # the first fetch warms what the server keeps (templates, the goal's overview, its comparisons)
                first_fetch.setdefault(goal, cold)
                measured[goal][label] = statistics.median(fetch(page) for _ in range(repeat))
        return measured, first_fetch
    finally:
        server.terminate()
        server.wait()


def measure(backend: str, url: str, repeat: int, write_repeat: int, sizes: tuple[int, ...]) -> dict:
    row: dict = {"backend": backend, "goals": {}}
    counts = {}
    pages_written(url, goal_id(sizes[0]))  # once unmeasured: the templates compiled, plotly imported, for both goals alike
    for attempts in sizes:
        goal = goal_id(attempts)
        seconds, files, kinds = min(pages_written(url, goal) for _ in range(write_repeat))
        whole = whole_report(url, goal)
        whole_full = whole_report(url, goal, "--full-audit")
        ledger = api.open(url)
        try:
            views = ledger.report_views()
            counts[goal] = max(1, -(-views.goal_overview(goal, pass_rates=False)["comparisons"] // views.batches_page_size))
        finally:
            ledger.close()
        row["goals"][goal] = {
            "write_s": seconds, "files": files, "per_file_ms": seconds / files * 1000, "whole_s": whole, "whole_full_s": whole_full,
            "pages": counts[goal],
            "kinds": {kind: (spent / count * 1000, count) for kind, (spent, count) in kinds.items()},
        }
        log(f"{backend} {goal}: {files} files in {seconds:.2f} s (whole command {whole:.1f} s, with --full-audit {whole_full:.1f} s)")
    row["audit_s"] = goal_audit(url, goal_id(sizes[-1]), "--history-only")
    row["full_audit_s"] = goal_audit(url, goal_id(sizes[-1]))
    log(f"{backend}: audit of {goal_id(sizes[-1])} {row['audit_s']:.1f} s history only, {row['full_audit_s']:.1f} s full")
    row["serve"], row["serve_first_fetch"] = serve_pages(url, counts, repeat)
    return row


def held(ok: bool) -> str:
    return "✅" if ok else "❌ MISSED"


def print_results(rows: list[dict], sizes: tuple[int, ...]) -> None:
    small, big = goal_id(sizes[0]), goal_id(sizes[1])
    print(
        "| backend | goal | files written | write (no audit) | per file | whole `report --goal` | with `--full-audit` "
        "| serve: first page / batches-2 / middle / last (median) | first page, first fetch |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        for goal, g in row["goals"].items():
            served = " / ".join(f"{label} {seconds * 1000:.0f} ms" for label, seconds in row["serve"][goal].items())
            print(
                f"| {row['backend']} | {goal} | {g['files']} | {g['write_s']:.2f} s | {g['per_file_ms']:.1f} ms | {g['whole_s']:.1f} s "
                f"| {g['whole_full_s']:.1f} s | {served} | {row['serve_first_fetch'][goal]:.2f} s |"
            )
    print()
    print(f"| backend | kind of file | ms per file (files), {small} | ms per file (files), {big} | ratio (≤ 2× for the kinds a goal has more of) |")
    print("| --- | --- | --- | --- | --- |")
    for row in rows:
        for kind in sorted(row["goals"][big]["kinds"]):
            (a, n), (b, m) = row["goals"][small]["kinds"].get(kind, (0.0, 0)), row["goals"][big]["kinds"][kind]
            print(f"| {row['backend']} | {kind} | {a:.1f} ({n}) | {b:.1f} ({m}) | {b / a:.2f}× |" if n else f"| {row['backend']} | {kind} | — | {b:.1f} ({m}) | — |")
    print()
    print(
        f"| backend | per file, {sizes[1]} / {sizes[0]} attempts (≤ 2×) | slowest serve page / its first page (≤ 2×) "
        "| whole `report --goal` of the big goal / its first serve page, median (≤ 10×) | the same / that page's first fetch "
        "| with `--full-audit` / the median page | with `--full-audit` / the first fetch | its pages alone (no audit) / the median page "
        "| its audit alone: history only, full | whole report / (pages alone + history-only audit alone) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        per_file = row["goals"][big]["per_file_ms"] / row["goals"][small]["per_file_ms"]
        serve_ratio = max(max(p.values()) / p["first page"] for p in row["serve"].values())
        first, first_fetch = row["serve"][big]["first page"], row["serve_first_fetch"][big]
        whole, whole_full = row["goals"][big]["whole_s"], row["goals"][big]["whole_full_s"]
        print(
            f"| {row['backend']} | {per_file:.2f}× {held(per_file <= PAGE_TARGET)} | {serve_ratio:.2f}× {held(serve_ratio <= SERVE_TARGET)} "
            f"| {whole / first:.1f}× {held(whole / first <= WHOLE_TARGET)} ({whole:.1f} s / {first:.2f} s) "
            f"| {whole / first_fetch:.1f}× {held(whole / first_fetch <= WHOLE_TARGET)} ({first_fetch:.2f} s) "
            f"| {whole_full / first:.1f}× {held(whole_full / first <= WHOLE_TARGET)} ({whole_full:.1f} s) "
            f"| {whole_full / first_fetch:.1f}× {held(whole_full / first_fetch <= WHOLE_TARGET)} "
            f"| {row['goals'][big]['write_s'] / first:.1f}× | {row['audit_s']:.1f} s, {row['full_audit_s']:.1f} s "
            f"| {whole / (row['goals'][big]['write_s'] + row['audit_s']):.2f} |"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--sqlite", type=Path, default=Path("/tmp/benchledger-report-pages.sqlite"), help="the SQLite ledger (reused when it exists)")
    parser.add_argument(
        "--postgres-url",
        default=os.environ.get("BENCHLEDGER_BENCH_POSTGRES_URL") or os.environ.get("BENCHLEDGER_TEST_POSTGRES_URL") or "postgresql://postgres@127.0.0.1:5432/test",
        help=f"a server on which database {PG_DATABASE} is created (reused when it exists)",
    )
    parser.add_argument("--pg-database", default=PG_DATABASE, help="the PostgreSQL database's name")
    parser.add_argument("--drop", action="store_true", help="drop that database at the end")
    parser.add_argument(
        "--sizes", default=",".join(map(str, SIZES)),
        help="the two goals' attempts, small,big (a loaded machine: 100,3000 shows the same ratios at a third of the cost)",
    )
    parser.add_argument("--repeat", type=int, default=5, help="fetches of each serve page (median)")
    parser.add_argument("--write-repeat", type=int, default=3, help="writes of each goal's site in process (the fastest)")
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--build-only", action="store_true", help="build (or complete) the ledgers, measure nothing")
    args = parser.parse_args(argv)
    urls = {}
    sizes = tuple(int(size) for size in args.sizes.split(","))
    for backend in args.backends.split(","):
        urls[backend] = f"sqlite:///{args.sqlite}" if backend == "sqlite" else postgres_url(args.postgres_url, args.pg_database)
        build(urls[backend], args.seed, sizes)
    if args.build_only:
        return 0
    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    rows = [measure(backend, url, args.repeat, args.write_repeat, sizes) for backend, url in urls.items()]
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print()
    print_results(rows, sizes)
    if args.drop and "postgresql" in urls:
        drop_postgres(args.postgres_url, args.pg_database)
    return 0


if __name__ == "__main__":
    sys.exit(main())
