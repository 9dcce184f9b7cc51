"""The projection fold alone against read + decode and `replay --jobs 1`, and where the fold spends its time (issue 31 item 4).

    .venv/bin/python -m benchmarks.fold_stages                      # a 2x10^4-event ledger of ordinary goals, 5 rounds
    .venv/bin/python -m benchmarks.fold_stages --events 100000 --rounds 3 --ledger /tmp/fold.sqlite

One SQLite ledger of clones of real goals (``benchmarks.synthetic_ledger``, as ``benchmarks.growth`` builds
for its replay; ``--ledger`` keeps it and reuses it on the next run). Measured in one process, rounds
interleaved so that a machine whose load moves moves all three, the best round of each, in **CPU
seconds of this process** (on a shared machine the wall clock mostly measures the other processes):

* the fold alone, as ``benchmarks.run`` measures it (every goal's events, read and decoded before
  the clock starts, folded by ``project_goal`` into rows serialized by ``row_record``);
* read + decode, as ``benchmarks.run`` measures it (``SELECT`` of the events table in position
  order, ``yield_per=2000``, ``json.loads`` of each payload);
* ``replay(ledger, jobs=1)`` (the first three rounds; it must change no row).

The events decoded for the fold are frozen out of the collector's reach (``gc.freeze``), as the CLI
freezes what its imports made: a replay process does not hold them.

Then one more fold with each stage timed (``perf_counter`` around the function; a stage called
inside another is counted for the outer one only), in microseconds an event: the reducers, the rows'
serialization, and parts of the linking rules (what is left is the rest of the linking rules and the
row objects); then one more replay with its own parts timed the same way (the Merkle log's rebuild, reading
and building the events, decoding their payloads, reading and comparing the stored rows, checking the row
counts and stream heads; what is left is the fold and the loop around it), and three of those parts alone
(the Merkle log's rebuild, the reads of the events and of the stored rows), in CPU seconds.

``--rows-digest`` prints instead the SHA-256 of every row of three folds of each goal (from its first event,
strict from its middle event as an ingest folds, and ``lifecycle_only`` as ``history`` does), to hold a change
of the fold to another checkout's rows byte for byte (run this file with each checkout's code).
"""

from __future__ import annotations

import argparse
import collections
import functools
import gc
import hashlib
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, select

from benchledger.ledger.service import folding
from benchledger.ledger.service.maintenance import replay
from benchledger.ledger.storage import canonical, merkle_log
from benchledger.ledger.storage.engine import normalize_url
from benchledger.ledger.storage.event_records import StoredEvent
from benchledger.ledger.storage.schema import events as events_table
from benchledger.ledger.storage.store import Store
from benchledger.ledger.storage.transaction import Transaction
from benchledger.projections import projector, review_module
from benchmarks import workload as wl
from benchmarks.synthetic_ledger import build_big_ledger, build_templates

REDUCERS = (
    "lifecycle-state",
    "review-verifier-attribution",
    "learning-ledger",
    "review-claim",
    "attempt-learning-gate",
    "review-runner-invariants",
    "review-adapter-kwargs",
)


def fold(goals: dict[str, list[StoredEvent]]) -> None:
    for goal, events in goals.items():
        for row in projector.project_goal(events, strict=False).rows.values():
            folding.row_record(goal, row)


def read_decode(url: str) -> None:
    engine = create_engine(normalize_url(url))
    with engine.connect() as connection:
        for row in connection.execution_options(yield_per=2000).execute(select(events_table).order_by(events_table.c.position)):
            json.loads(row.payload)
    engine.dispose()


def rows_digest(goals: dict[str, list[StoredEvent]]) -> tuple[int, str]:
    """How many rows (or refusals) the three folds of each goal make, and the SHA-256 of them all, in order."""
    digest, count = hashlib.sha256(), 0
    for goal, events in sorted(goals.items()):
        middle = events[len(events) // 2].position
        for options in ({"strict": False}, {"strict": True, "emit_from": middle}, {"strict": False, "lifecycle_only": True}):
            try:
                rows = [folding.row_record(goal, row) for row in projector.project_goal(events, **options).rows.values()]  # type: ignore[arg-type]
            except Exception as exc:  # noqa: BLE001 - a fold's refusal is part of what it makes
                rows = [{"refused": f"{type(exc).__name__}: {exc}"}]
            for row in rows:
                digest.update(json.dumps(row, sort_keys=True).encode() + b"\n")
            count += len(rows)
    return count, digest.hexdigest()


def replay_unchanged(ledger: Store) -> None:
    """``replay --jobs 1``, which must find every row as the fold makes it (the ledger's rows are a fold's)."""
    report = replay(ledger, jobs=1)
    if report["rows_changed"] or report["faulted"]:
        raise RuntimeError(f"replay changed {report['rows_changed']} rows, faulted {len(report['faulted'])}")


def cpu_seconds(work: Callable[[], Any]) -> float:
    gc.collect()
    start = time.process_time()
    work()
    return time.process_time() - start


def stages(work: Callable[[], Any], timings: list[tuple[Any, str, str]]) -> tuple[float, collections.Counter[str]]:
    """``work`` done once with each function of ``timings`` (owner, attribute, stage) timed; the wrappers are removed after."""
    seconds: collections.Counter[str] = collections.Counter()
    inside = [False]
    patched: list[tuple[Any, str, Any]] = []

    def timed(owner: Any, attribute: str, stage: str) -> None:
        function = getattr(owner, attribute)

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if inside[0]:
                return function(*args, **kwargs)
            inside[0] = True
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                seconds[stage] += time.perf_counter() - start
                inside[0] = False

        patched.append((owner, attribute, function))
        setattr(owner, attribute, wrapper)

    for owner, attribute, stage in timings:
        timed(owner, attribute, stage)
    try:
        start = time.perf_counter()
        work()
        total = time.perf_counter() - start
    finally:
        for owner, attribute, function in reversed(patched):
            setattr(owner, attribute, function)
    return total, seconds


def fold_timings() -> list[tuple[Any, str, str]]:
    """The fold's stages: its reducers, the rows' serialization, parts of the linking rules."""
    return [
        *((review_module(name), "reduce", name) for name in REDUCERS),
        (review_module("lifecycle-state"), "step_summary", "lifecycle-state step summaries"),
        (review_module("lifecycle-state"), "held_summary", "lifecycle-state step summaries"),
        (projector.GoalProjector, "_summary_key", "lifecycle-state step summaries"),
        (projector, "normalize", "derived reviews normalized"),
        (folding, "canonical_json", "rows serialized (canonical JSON)"),
        (projector, "lifecycle_summary", "lifecycle summary and changes of a step"),
        (projector, "changes", "lifecycle summary and changes of a step"),
        # The linking rules' own parts (what a reducer they call costs is counted for them).
        (projector._Lookahead, "push", "linking: events held for their attempt"),
        (projector.GoalProjector, "_place", "linking: events placed in attempts"),
        (projector.GoalProjector, "_members", "linking: batch members found"),
    ]


def replay_timings() -> list[tuple[Any, str, str]]:
    """What ``replay --jobs 1`` does beyond the fold (the fold itself, not timed, is in what is left)."""
    return [
        (merkle_log, "rebuild", "replay: Merkle log rebuilt"),
        (Transaction, "first_events_of_goals", "replay: events read and built"),
        (Transaction, "read_goal", "replay: events read and built"),
        (canonical, "parse_json", "replay: payloads decoded"),
        (folding._Comparison, "flush", "replay: stored rows read and compared"),
        (Transaction, "write_projection_rows_diff", "replay: goals' row counts checked"),
        (Transaction, "rebuild_heads", "replay: stream heads checked"),
    ]


def replay_parts_alone(ledger: Store, rounds: int) -> dict[str, float]:
    """Replay's Merkle log rebuild and its reads of the events and of the stored rows, each alone over the whole ledger
    (the fold's steps of goals), CPU seconds, the best of ``rounds``."""
    best: dict[str, float] = {}
    with ledger.transaction(write=True) as tx:
        goals = sorted(head["goal_id"] for head in tx.heads())
        last = tx.last_position()
        steps = [goals[start : start + folding.GOALS_PER_STEP] for start in range(0, len(goals), folding.GOALS_PER_STEP)]
        parts: dict[str, Callable[[], Any]] = {
            "Merkle log rebuilt": lambda: merkle_log.rebuild(tx),
            "events read and built": lambda: [list(folding.events_of(tx, step, last)) for step in steps],
            "stored rows read": lambda: [tx.stored_rows_of_goals(step, projection=None, goals_per_read=folding.GOALS_PER_STEP) for step in steps],
        }
        for _ in range(rounds):
            for name, work in parts.items():
                best[name] = min(best.get(name, float("inf")), cpu_seconds(work))
    return best


def print_stages(title: str, events: int, total: float, seconds: collections.Counter[str], rest: str) -> None:
    print(f"\n{title}: {total * 1e6 / events:.1f} us an event (the timing adds its own)")
    for stage, spent in seconds.most_common():
        print(f"  {stage:45s} {spent * 1e6 / events:6.1f} us  {spent / total:6.1%}")
    left = total - sum(seconds.values())
    print(f"  {rest:45s} {left * 1e6 / events:6.1f} us  {left / total:6.1%}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=20_000, help="events of the ledger built (default 2x10^4)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--rows-digest", action="store_true", help="print the SHA-256 of the rows of three folds of each goal, and stop")
    parser.add_argument("--ledger", type=Path, default=None, help="SQLite file of the ledger: built when absent, reused when present")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="benchledger-fold-") as scratch:
        path = args.ledger or Path(scratch) / "fold.sqlite"
        url = f"sqlite:///{path}"
        fresh = not path.exists()
        ledger = Store.open(url)
        if fresh:
            build_big_ledger(ledger, build_templates(wl.load_templates(), 24, args.seed), args.events, 0)
        goals: dict[str, list[StoredEvent]] = {}
        for stored in ledger.read_all():
            goals.setdefault(stored.goal_id, []).append(stored)
            stored.payload  # noqa: B018 - decoded once here (a cached property), outside the timed part
        events = sum(map(len, goals.values()))
        if args.rows_digest:
            count, digest = rows_digest(goals)
            print(f"{events:,} events, {len(goals):,} goals: {count:,} rows, SHA-256 {digest}")
            ledger.close()
            return 0
        # The events held for the fold are frozen (the collector's permanent generation), as the CLI freezes what its imports
        # made: else each collection a replay triggers walks 2x10^4 decoded payloads that no replay process holds.
        gc.collect()
        gc.freeze()
        best = {"fold": float("inf"), "read": float("inf"), "replay": float("inf")}
        for round_ in range(args.rounds):
            best["fold"] = min(best["fold"], cpu_seconds(lambda: fold(goals)))
            best["read"] = min(best["read"], cpu_seconds(lambda: read_decode(url)))
            if round_ < 3:
                best["replay"] = min(best["replay"], cpu_seconds(lambda: replay_unchanged(ledger)))
        rate = {name: events / seconds for name, seconds in best.items()}
        print(f"{events:,} events, {len(goals):,} goals; best of {args.rounds} rounds (replay: of 3), CPU time of this process")
        print("| measurement | events/s | ratio |")
        print("| --- | --- | --- |")
        print(f"| read + json.loads | {rate['read']:,.0f} | |")
        print(f"| fold alone | {rate['fold']:,.0f} | {rate['fold'] / rate['read']:.3f}x read + decode (target >= 0.4) |")
        print(f"| `replay --jobs 1` | {rate['replay']:,.0f} | {rate['replay'] / rate['fold']:.3f}x the fold alone (target >= 0.7) |")
        print_stages("One fold, stages timed", events, *stages(lambda: fold(goals), fold_timings()), "linking rules, rows, the rest")
        print_stages("One `replay --jobs 1`, its own parts timed", events, *stages(lambda: replay_unchanged(ledger), replay_timings()), "the fold and the rest")
        print(f"\nReplay's parts alone, CPU, best of {args.rounds} rounds:")
        for name, seconds in replay_parts_alone(ledger, args.rounds).items():
            print(f"  {name:45s} {seconds * 1e6 / events:6.1f} us an event")
        ledger.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
