"""Folding many goals for replay and audit, in this process or in worker processes.

A goal's fold is independent of every other goal's, so ``replay --jobs N`` and
``audit --jobs N`` hand steps of goals to N worker processes. Each worker opens
the ledger's database itself and reads its own goals' events (only events up to
the position the caller's snapshot ends at: positions follow commit order, so
those are exactly the events the caller sees). For a replay it also compares
them with its goals' stored rows (the replay holds the append lock, and only
this step writes these goals' rows, so what the worker reads is what the
replay's transaction holds) and returns only what differs; the caller alone
writes, all steps in its one transaction. For an audit it returns the rows and
the caller compares them with the rows of its own snapshot. A ledger no other
process can open (the throwaway in-memory one) and a one-job run fold in this
process, through the same code.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchledger.ledger.canonical import canonical_json
from benchledger.ledger.store import Ledger, StoredEvent, Transaction
from benchledger.projections.linking import ProjectionRow, project_goal

# Goals folded per step: bounds memory on a large ledger while the reads and
# writes still go a few hundred goals per statement.
GOALS_PER_STEP = 200
# With workers, a step also stops at this many events, so that a few large goals
# are spread over the workers instead of landing in one step.
EVENTS_PER_STEP = 2_000


@dataclass(frozen=True)
class FoldedGoal:
    """One goal folded from its first event: its rows as stored (unless compared where it was folded), or why it could not be folded."""

    goal_id: str
    events: int
    rows: list[dict[str, Any]]
    row_count: int
    faulted: list[dict[str, Any]]  # {"goal_id", "projection", "key", "error"} of each faulted row
    failure: str | None = None


@dataclass(frozen=True)
class FoldedStep:
    """A step of goals folded; with ``compare``, the rows that differ from the stored ones and the stored keys no row has."""

    folded: list[FoldedGoal]
    changed: list[dict[str, Any]]
    unwanted: list[tuple[Any, ...]]


def row_record(goal_id: str, row: ProjectionRow) -> dict[str, Any]:
    """A projection row as stored (payload in canonical JSON)."""
    return {
        "projection": row.projection,
        "goal_id": goal_id,
        "key": row.key,
        "projection_version": row.version,
        "status": row.status,
        "payload": None if row.payload is None else canonical_json(row.payload),
        "error": row.error,
        "position": row.position,
    }


def fold_goals(
    events_of: Mapping[str, Sequence[StoredEvent]], *, projection: str | None = None, keep_failures: bool = False
) -> list[FoldedGoal]:
    """Fold each goal's events in full (a reducer that raises marks its row faulted).

    ``projection`` keeps only that projection's rows. ``keep_failures``
    (audit) reports a goal whose events cannot be folded at all (tampered
    events: a payload that is not JSON, ...) instead of raising.
    """
    folded = []
    for goal, events in events_of.items():
        try:
            projector = project_goal(events, strict=False)
        except Exception as exc:
            if not keep_failures:
                raise
            folded.append(FoldedGoal(goal, len(events), [], 0, [], f"{type(exc).__name__}: {exc}"))
            continue
        rows = [row_record(goal, row) for row in projector.rows.values() if projection is None or row.projection == projection]
        faulted = [{"goal_id": goal, "projection": r["projection"], "key": r["key"], "error": r["error"]} for r in rows if r["error"] is not None]
        folded.append(FoldedGoal(goal, len(projector.events), rows, len(rows), faulted))
    return folded


def fold_step(
    read: Transaction,
    goals: list[str],
    upto_position: int,
    *,
    projection: str | None = None,
    keep_failures: bool = False,
    compare: bool = False,
) -> FoldedStep:
    """Read and fold ``goals`` through ``read``; with ``compare``, diff their rows against the stored ones (rows then not kept)."""
    folded = fold_goals(_events_upto(read.read_goals(goals), upto_position), projection=projection, keep_failures=keep_failures)
    if not compare:
        return FoldedStep(folded, [], [])
    changed, unwanted = read.projection_rows_diff(goals, [row for goal in folded for row in goal.rows], projection=projection)
    return FoldedStep([dataclasses.replace(goal, rows=[]) for goal in folded], changed, unwanted)


def steps_of(heads: Sequence[Mapping[str, Any]], *, jobs: int) -> list[list[str]]:
    """The goals of ``heads`` (stream heads, in order) in steps of at most :data:`GOALS_PER_STEP` (and, with workers, events)."""
    steps: list[list[str]] = []
    step: list[str] = []
    size = 0
    for head in heads:
        if step and (len(step) >= GOALS_PER_STEP or (jobs > 1 and size + head["last_version"] > EVENTS_PER_STEP)):
            steps.append(step)
            step, size = [], 0
        step.append(head["goal_id"])
        size += head["last_version"]
    return [*steps, step] if step else steps


def folded_steps(
    ledger: Ledger,
    read: Transaction,
    steps: Sequence[list[str]],
    *,
    jobs: int,
    upto_position: int,
    **options: Any,
) -> Iterator[FoldedStep]:
    """Each step of goals folded (:func:`fold_step`, ``options`` passed on), in order; by ``jobs`` worker processes, or here through ``read``."""
    if jobs <= 1 or len(steps) <= 1 or not ledger.persistent:
        for step in steps:
            yield fold_step(read, step, upto_position, **options)
        return
    # Imported here: an ingest folds its goals in this process and need not load the process machinery.
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    url = ledger.engine.url.render_as_string(hide_password=False)
    context = multiprocessing.get_context("spawn")  # a worker shares no connection (nor lock) with this process
    with ProcessPoolExecutor(max_workers=min(jobs, len(steps)), mp_context=context, initializer=_open_worker, initargs=(url,)) as pool:
        pending: deque = deque()
        for step in steps:
            pending.append(pool.submit(_fold_in_worker, step, upto_position, options))
            if len(pending) >= 2 * jobs:  # (bounded: the caller holds a few steps, not the ledger)
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def _events_upto(events_of: Mapping[str, list[StoredEvent]], position: int) -> dict[str, list[StoredEvent]]:
    return {goal: [e for e in events if e.position <= position] for goal, events in events_of.items()}


_worker_ledger: Ledger | None = None


def _open_worker(url: str) -> None:
    global _worker_ledger
    _worker_ledger = Ledger.open(url, migrate=False)


def _fold_in_worker(goals: list[str], upto_position: int, options: Mapping[str, Any]) -> FoldedStep:
    assert _worker_ledger is not None, "the pool's initializer opens the ledger"
    with _worker_ledger.reading() as connection:
        return fold_step(Transaction(connection), goals, upto_position, **options)
