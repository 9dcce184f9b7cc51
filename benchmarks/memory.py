"""Peak memory of the intake commands at the documented limits, against the bounds docs/performance.md states.

    .venv/bin/python -m benchmarks.memory                      # 64 MiB ingest and ingest-batches, the largest batch, 3x10^5-event import-ndjson (SQLite)
    .venv/bin/python -m benchmarks.memory --full               # ... and import-ndjson of 10^6 events too (about ten minutes more)
    .venv/bin/python -m benchmarks.memory --quick              # 8 MiB and 10^5 events, a few minutes
    .venv/bin/python -m benchmarks.memory --ndjson-mib 64 --export-events 300000 1000000

Each command runs as its own process (the console script, as a user runs it);
its peak resident set size is the kernel's ``ru_maxrss`` of that child
(``os.wait4``). The baseline, measured in the same run, is the peak of
``benchledger goals`` on an empty ledger: the interpreter, the imports and an
open engine. A bound is ``baseline + fixed budget + 10 × the largest line``,
plus for ``ingest`` a per-document allowance (docs/performance.md, "Memory"); the run
prints each figure, its bound and whether it held, and exits 1 if one did not.

Inputs: the ingest NDJSON holds distinct ``benchmark_result_v0`` documents
(the conformance corpus's, one task id each) up to the size asked, ingested
as a job tree of directories of :data:`MAX_BATCH_ARTIFACTS` (a batch holds no
more); the ``ingest-batches`` file holds the same documents,
:data:`DOCUMENTS_PER_BATCH` a line and :data:`BATCHES_PER_GOAL` lines a goal (a
backlog of many goals). The largest batch is :data:`MAX_BATCH_ARTIFACTS` runs,
the kind whose reviews list every member (a run's entry in
``review-verifier-attribution`` is about 1.5 KB): one ``ingest-batches`` line
of them, the same as one ``ingest``, a tree of :data:`RUN_TREE_BATCHES` such
directories (one transaction), then ``show`` of that goal (its largest row);
and the line that took 2.2 GB before batches had a limit (issue #30.14),
:data:`HUGE_LINE_ARTIFACTS` runs, which is now refused. The export is built
from real goals ingested once and cloned by the store's own record builder
(``synthetic_ledger.clone_goal``), so it verifies like any export, trailer
included.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from benchledger.ledger.service.exchange import TRAILER_FORMAT, TRAILER_KEY
from benchledger.ledger.service.intake.files import MAX_BATCH_ARTIFACTS
from benchledger.ledger.storage import canonical
from benchledger.ledger.storage.verification import format_digest
from benchmarks import workload as wl
from benchmarks.harness import find_benchledger, log
from benchmarks.synthetic_ledger import build_templates, clone_goal

MIB = 1024 * 1024
# The bounds of docs/performance.md ("Memory"), over the baseline process.
IMPORT_FIXED_BUDGET = 256 * MIB
INGEST_FIXED_BUDGET = 128 * MIB
INGEST_PER_DOCUMENT = 6 * 1024
INGEST_PER_RUN = 20 * 1024  # (a run's instead: its rows in the reviews that list every run, held until the commit)
BATCHES_FIXED_BUDGET = 128 * MIB
SHOW_FIXED_BUDGET = 64 * MIB
DOCUMENTS_PER_BATCH = 50
BATCHES_PER_GOAL = 10
RUN_TREE_BATCHES = 4
HUGE_LINE_ARTIFACTS = 10**5
VALID = Path(__file__).resolve().parents[1] / "tests" / "hostile" / "valid"
RESULT = VALID / "result.json"


@dataclass
class Measured:
    command: str
    input_bytes: int
    items: int
    largest_line: int
    seconds: float
    peak: int
    bound: int

    @property
    def held(self) -> bool:
        return self.peak <= self.bound


def peak_rss(argv: list[str], *, exit_code: int = 0) -> tuple[int, float]:
    """Run ``argv`` (output discarded) and return its peak RSS in bytes and its wall time; it must exit ``exit_code``."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr = process.stderr.read().decode() if process.stderr else ""  # (read while it runs: a full pipe would block it)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != exit_code:
        raise RuntimeError(f"{' '.join(argv)} exited {process.returncode} (not {exit_code}): {stderr[-800:]}")
    return usage.ru_maxrss * 1024, elapsed


def write_ndjson(path: Path, size: int) -> tuple[int, int]:
    """Distinct result documents up to ``size`` bytes; returns (documents, largest line)."""
    base = json.loads(RESULT.read_text(encoding="utf-8"))
    base.pop("raw_log_path", None)  # (a local path: refused by ingest, on purpose)
    count = largest = written = 0
    with path.open("w", encoding="utf-8") as out:
        while True:
            line = json.dumps({**base, "task_id": f"task-{count:08d}"}, separators=(",", ":")) + "\n"
            if written + len(line) > size:
                return count, largest
            out.write(line)
            written += len(line)
            count += 1
            largest = max(largest, len(line))


def write_tree(source: Path, root: Path, per_batch: int) -> tuple[int, int]:
    """The NDJSON's lines as a job tree, ``per_batch`` a directory (one NDJSON file each); returns (batches, largest line)."""
    batches = largest = 0
    with source.open(encoding="utf-8") as documents:
        while lines := [line for _, line in zip(range(per_batch), documents)]:
            folder = root / f"job-{batches:05d}"
            folder.mkdir(parents=True)
            (folder / "documents.ndjson").write_text("".join(lines), encoding="utf-8")
            batches += 1
            largest = max(largest, *(len(line) for line in lines))
    return batches, largest


def runs(count: int, first: int = 0) -> list[dict]:
    """``count`` distinct runs (the valid corpus's two, one job name each): the kind every run-listing review grows with."""
    templates = [json.loads((VALID / name).read_text(encoding="utf-8")) for name in ("run-1.json", "run-2.json")]
    return [{**templates[n % 2], "job_name": f"job-{n:08d}"} for n in range(first, first + count)]


def write_lines(path: Path, lines: list[object]) -> int:
    """``lines`` as compact JSON lines; returns the largest."""
    texts = [json.dumps(line, separators=(",", ":")) + "\n" for line in lines]
    path.write_text("".join(texts), encoding="utf-8")
    return max(len(text) for text in texts)


def largest_row(database: Path) -> int:
    """The largest stored projection row's payload, in bytes (what ``show`` reads whole)."""
    with sqlite3.connect(database) as connection:
        return int(connection.execute("SELECT max(length(payload)) FROM projection_rows").fetchone()[0])


def write_batches(source: Path, path: Path) -> tuple[int, int]:
    """The NDJSON's documents as ``ingest-batches`` lines; returns (batches, largest line)."""
    batches = largest = 0
    with source.open(encoding="utf-8") as documents, path.open("w", encoding="utf-8") as out:
        while chunk := [json.loads(line) for _, line in zip(range(DOCUMENTS_PER_BATCH), documents)]:
            line = json.dumps({"goal_id": f"goal-{batches // BATCHES_PER_GOAL:06d}", "kind": None, "artifacts": chunk}, separators=(",", ":")) + "\n"
            out.write(line)
            batches += 1
            largest = max(largest, len(line))
    return batches, largest


def write_export(path: Path, target_events: int, seed: int) -> tuple[int, int]:
    """An export of about ``target_events`` events (cloned real goals, contiguous positions), trailer last."""
    templates = build_templates(wl.load_templates(), 12, seed)
    running, position, largest, goal = canonical.GENESIS_HASH, 0, 0, 0
    with path.open("w", encoding="utf-8") as out:
        while position < target_events:
            tpl = templates[goal % len(templates)]
            positions = list(range(position + 1, position + 1 + len(tpl.events)))
            stamps = [f"2026-01-01T00:00:00.{p:06d}Z" if p < 10**6 else f"2026-01-02T00:00:00.{p % 10**6:06d}Z" for p in positions]
            records, _rows, _head = clone_goal(tpl, f"goal-{goal:07d}", positions, stamps)
            for record in records:
                line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
                out.write(line)
                largest = max(largest, len(line))
                running = canonical.digest_step(running, record["chain_hash"])
            position += len(records)
            goal += 1
        trailer = {TRAILER_KEY: TRAILER_FORMAT, "goal_id": None, "events": position, "last_position": position,
                   "digest": format_digest(position, running)}
        out.write(json.dumps(trailer, separators=(",", ":")) + "\n")
    return position, largest


def largest_batch(benchledger: list[str], work: Path, baseline: int) -> list[Measured]:
    """The largest batch there may be (:data:`MAX_BATCH_ARTIFACTS` runs) on each way in, the goal it leaves read by
    ``show``, a tree of such batches, and the line past the limit that is refused."""
    results = []
    line = {"goal_id": "largest", "kind": None, "artifacts": runs(MAX_BATCH_ARTIFACTS)}
    batches_file = work / "largest.ndjson"
    largest = write_lines(batches_file, [line])
    database = work / "largest.sqlite"
    log(f"ingest-batches of one line of {MAX_BATCH_ARTIFACTS} runs ({largest / MIB:.1f} MiB) ...")
    peak, seconds = peak_rss([*benchledger, "--database-url", f"sqlite:///{database}", "ingest-batches", "--format", "json", str(batches_file)])
    results.append(Measured("ingest-batches (the largest batch: 1 line of runs)", largest, MAX_BATCH_ARTIFACTS, largest, seconds, peak,
                            baseline + BATCHES_FIXED_BUDGET + 10 * largest))
    row = largest_row(database)
    log(f"show of that goal (its largest row: {row / MIB:.1f} MiB) ...")
    peak, seconds = peak_rss([*benchledger, "--database-url", f"sqlite:///{database}", "show", "--goal", "largest", "--format", "json"])
    results.append(Measured("show (the largest batch's goal; 'largest line': its largest row)", row, 1, row, seconds, peak,
                            baseline + SHOW_FIXED_BUDGET + 10 * row))
    # the same count of the smallest runs there are: the most review entries for the bytes of a line
    smallest = [{"schema_version": "benchmark_run_v0", "job_name": f"j{n}"} for n in range(MAX_BATCH_ARTIFACTS)]
    largest = write_lines(batches_file, [{"goal_id": "smallest", "kind": None, "artifacts": smallest}])
    log(f"ingest-batches of one line of {MAX_BATCH_ARTIFACTS} minimal runs ({largest / MIB:.1f} MiB) ...")
    peak, seconds = peak_rss([*benchledger, "--database-url", f"sqlite:///{work / 'smallest.sqlite'}", "ingest-batches", str(batches_file)])
    results.append(Measured("ingest-batches (the largest batch: 1 line of minimal runs)", largest, MAX_BATCH_ARTIFACTS, largest, seconds, peak,
                            baseline + BATCHES_FIXED_BUDGET + 10 * largest))

    ndjson = work / "runs.ndjson"
    largest = write_lines(ndjson, line["artifacts"])
    log(f"ingest of {MAX_BATCH_ARTIFACTS} runs as one batch ...")
    peak, seconds = peak_rss([*benchledger, "--database-url", f"sqlite:///{work / 'runs.sqlite'}", "ingest", "--goal", "g", "--format", "json", str(ndjson)])
    results.append(Measured("ingest (the largest batch: runs)", ndjson.stat().st_size, MAX_BATCH_ARTIFACTS, largest, seconds, peak,
                            baseline + INGEST_FIXED_BUDGET + 10 * largest + INGEST_PER_RUN * MAX_BATCH_ARTIFACTS))
    tree, size = work / "run-tree", 0
    for batch in range(RUN_TREE_BATCHES):
        (tree / f"job-{batch}").mkdir(parents=True)
        largest = write_lines(tree / f"job-{batch}" / "runs.ndjson", runs(MAX_BATCH_ARTIFACTS, batch * MAX_BATCH_ARTIFACTS))
        size += (tree / f"job-{batch}" / "runs.ndjson").stat().st_size
    count = RUN_TREE_BATCHES * MAX_BATCH_ARTIFACTS
    log(f"ingest of a tree of {RUN_TREE_BATCHES} such batches ...")
    peak, seconds = peak_rss([*benchledger, "--database-url", f"sqlite:///{work / 'run-tree.sqlite'}", "ingest", "--goal", "g", "--format", "json",
                              "--batch-per-directory", str(tree)])
    results.append(Measured(f"ingest (a tree of {RUN_TREE_BATCHES} largest batches of runs)", size, count, largest, seconds, peak,
                            baseline + INGEST_FIXED_BUDGET + 10 * largest + INGEST_PER_RUN * count))

    huge = work / "huge.ndjson"
    largest = write_lines(huge, [{"goal_id": "huge", "kind": None, "artifacts": runs(HUGE_LINE_ARTIFACTS)}])
    log(f"ingest-batches of one line of {HUGE_LINE_ARTIFACTS} runs ({largest / MIB:.1f} MiB), past the limit: refused ...")
    peak, seconds = peak_rss([*benchledger, "--database-url", f"sqlite:///{work / 'huge.sqlite'}", "ingest-batches", str(huge)], exit_code=1)
    results.append(Measured("ingest-batches (a line past the limit: refused)", largest, HUGE_LINE_ARTIFACTS, largest, seconds, peak,
                            baseline + BATCHES_FIXED_BUDGET + 10 * largest))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="8 MiB NDJSON and 10^5 events")
    parser.add_argument("--full", action="store_true", help="import-ndjson of 3x10^5 and 10^6 events")
    parser.add_argument("--ndjson-mib", type=float, default=None, help="size of the ingested NDJSON (default 64, the limit)")
    parser.add_argument("--export-events", type=int, nargs="+", default=None, help="events in each imported export (default 3x10^5)")
    parser.add_argument("--seed", type=int, default=20260101)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args(argv)
    ndjson_mib = args.ndjson_mib or (8 if args.quick else 64)
    export_sizes = args.export_events or ([10**5] if args.quick else [3 * 10**5, 10**6] if args.full else [3 * 10**5])
    benchledger = find_benchledger()
    with tempfile.TemporaryDirectory(dir=args.workdir) as scratch:
        work = Path(scratch)
        empty = f"sqlite:///{work / 'empty.sqlite'}"
        peak_rss([*benchledger, "--database-url", empty, "db", "upgrade"])  # (a read of no ledger is refused: one is made first)
        baseline, _ = peak_rss([*benchledger, "--database-url", empty, "goals"])
        log(f"baseline (goals on an empty ledger): {baseline / MIB:.0f} MiB")
        results = []

        ndjson = work / "input.ndjson"
        documents, largest = write_ndjson(ndjson, int(ndjson_mib * MIB))
        tree = work / "tree"
        batches, largest = write_tree(ndjson, tree, MAX_BATCH_ARTIFACTS)
        log(f"ingest of {ndjson.stat().st_size / MIB:.1f} MiB, {documents} documents in {batches} directories ...")
        peak, seconds = peak_rss([*benchledger, "--database-url", f"sqlite:///{work / 'ingest.sqlite'}", "ingest", "--goal", "g",
                                  "--format", "json", "--batch-per-directory", str(tree)])
        bound = baseline + INGEST_FIXED_BUDGET + 10 * largest + INGEST_PER_DOCUMENT * documents
        results.append(Measured(f"ingest (a tree, {batches} batches)", ndjson.stat().st_size, documents, largest, seconds, peak, bound))
        subprocess.run(["rm", "-r", str(tree)], check=True)

        batches_file = work / "batches.ndjson"
        batches, largest = write_batches(ndjson, batches_file)
        ndjson.unlink()
        log(f"ingest-batches of {batches_file.stat().st_size / MIB:.1f} MiB, {batches} batches of {DOCUMENTS_PER_BATCH} ...")
        peak, seconds = peak_rss([*benchledger, "--database-url", f"sqlite:///{work / 'batches.sqlite'}", "ingest-batches",
                                  "--format", "json", str(batches_file)])
        bound = baseline + BATCHES_FIXED_BUDGET + 10 * largest
        results.append(Measured("ingest-batches", batches_file.stat().st_size, documents, largest, seconds, peak, bound))
        batches_file.unlink()

        results += largest_batch(benchledger, work, baseline)

        for export_events in export_sizes:
            export = work / "export.ndjson"
            events, largest = write_export(export, export_events, args.seed)
            log(f"import-ndjson of {export.stat().st_size / MIB:.0f} MiB, {events} events ...")
            target = work / f"import-{events}.sqlite"
            peak, seconds = peak_rss([*benchledger, "--database-url", f"sqlite:///{target}", "import-ndjson", str(export)])
            results.append(Measured("import-ndjson", export.stat().st_size, events, largest, seconds, peak, baseline + IMPORT_FIXED_BUDGET + 10 * largest))
            export.unlink()
            target.unlink()

    print("| command | input | documents / events | largest line | time | peak RSS | over baseline | bound | held |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        print(
            f"| {r.command} | {r.input_bytes / MIB:.1f} MiB | {r.items:,} | {r.largest_line:,} B | {r.seconds:.0f} s | "
            f"{r.peak / MIB:.0f} MiB | {(r.peak - baseline) / MIB:.0f} MiB | {r.bound / MIB:.0f} MiB | {'✅' if r.held else '❌'} |"
        )
    print(f"\nbaseline: `benchledger goals` on an empty ledger, {baseline / MIB:.0f} MiB peak (same run, SQLite)")
    return 0 if all(r.held for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
