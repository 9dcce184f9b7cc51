"""Folding a step of goals for replay and audit (and an ingest's rebuild) in bounded memory, compared with the stored rows.

A step is folded in this process or in a worker process (:mod:`benchledger.ledger.service.fold_jobs`), through the same code.
No fold holds a goal whole: events are read :data:`EVENTS_PER_PAGE` at a time
and the projector keeps only what the linking rules still read (the most recent
events by id; older ones are read again by id). Its rows are handed over a few
thousand at a time (:class:`projector.RowSink`) and compared with the stored rows
of the same keys (:class:`_Comparison`); in this process a replay writes what
differs as it is found. A row handed over again later (a run gated again by a
later learning ledger, the goal's current rows) replaces the earlier one, and
what a replay counts as changed is the last one against the row stored before
the replay, so a healthy ledger still counts (and keeps) no change.
"""

from __future__ import annotations

import hashlib
import operator
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from benchledger.ledger.read.runs import collector_paused
from benchledger.ledger.storage.canonical import canonical_json
from benchledger.ledger.storage.event_records import StoredEvent
from benchledger.ledger.storage.transaction import PROJECTION_ROW_COLUMNS, Transaction
from benchledger.projections import catalog
from benchledger.projections.projector import GoalProjector, ProjectionRow

# Goals folded per step (fold_jobs.steps_of): the reads and writes still go a few hundred goals per statement.
GOALS_PER_STEP = 200
# Events read per query.
EVENTS_PER_PAGE = 1_000
# Rows compared with the stored ones per round of reads.
ROWS_PER_COMPARISON = 2_000

RowKey = tuple[str, str, str]  # (projection, goal_id, key): the stored primary key
# What a replay remembers of a row it wrote over: the stored row's digest, or this when none was stored.
_NONE_STORED = b""


class FoldMode(Enum):
    """What :func:`fold_step` does with the rows of its goals' folds."""

    # A replay (or a rebuild) here: make the stored rows the fold's, writing what differs through the transaction as it is found.
    WRITE = "write"
    # A replay's worker: the same, but what differs is collected (:class:`FoldedStep`) for the caller to write.
    COLLECT = "collect"
    # An audit (here, or in a worker that reads the caller's snapshot): list what differs from the stored rows, and the goal's
    # stored counts; a goal whose events cannot be folded is reported, not raised.
    AUDIT = "audit"
    # An audit's worker whose snapshot may not be the caller's (fold_jobs): every row of each goal, for the caller to compare.
    AUDIT_ROWS = "audit-rows"

    @property
    def audit(self) -> bool:
        return self in (FoldMode.AUDIT, FoldMode.AUDIT_ROWS)


@dataclass
class FoldedGoal:
    """One goal folded from its first event: how many rows it makes, which are faulted, and what differs from the stored rows (or why it could not be folded)."""

    goal_id: str
    events: int
    row_count: int = 0
    faulted: list[dict[str, Any]] = field(default_factory=list)  # {"goal_id", "projection", "key", "error"} of each faulted row
    # audit: (key, the fold's row or None, the stored row or None) of each row that differs, by key
    differences: list[tuple[RowKey, dict[str, Any] | None, dict[str, Any] | None]] = field(default_factory=list)
    stored_counts: dict[str, int] = field(default_factory=dict)  # audit: the stored rows it holds, by projection
    counted: dict[str, int] = field(default_factory=dict)  # audit: its stored row counts (projection_counts), by projection
    failure: str | None = None
    rows: list[dict[str, Any]] = field(default_factory=list)  # an audit worker's rows, compared by the caller


@dataclass(frozen=True)
class FoldedStep:
    """A step of goals folded; for a replay, the rows still to write, the stored keys to delete and how many rows change."""

    folded: list[FoldedGoal]
    changed: list[dict[str, Any]]
    unwanted: list[RowKey]
    rows_changed: int


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


@dataclass(frozen=True)
class _GoalEventsReadAgain:
    """A goal's stored events, read again by id or in order by a fold that does not hold them (:class:`projector.EarlierEvents`)."""

    # Not goal_folds.StoredGoalEvents: that keeps every event it reads for the rest of an ingest's transaction, which a
    # replay folding a large goal in bounded memory must not; and a fold from the goal's first event never asks for a comparison-batch row.

    tx: Transaction
    goal_id: str

    def by_id(self, event_ids: Iterable[str]) -> dict[str, StoredEvent]:
        return {i: e for i, e in self.tx.events_by_id(event_ids).items() if e.goal_id == self.goal_id}

    def latest_comparison_batch(self, comparison_id: str, before: int) -> StoredEvent | None:
        return None  # (never asked: a fold from the goal's first event saw every batch)

    def before(self, position: int) -> Iterator[StoredEvent]:
        return events_of(self.tx, [self.goal_id], position - 1)

    def attempt_evidence(self, attempt: str) -> None:
        return None  # (never asked: a fold from the goal's first event saw every attempt)


def events_of(read: Transaction, goals: Sequence[str], upto_position: int) -> Iterator[StoredEvent]:
    """The events of ``goals`` up to ``upto_position``, goal by goal (in the database's order of ids), each in stream order, a page at a time."""
    pending = list(goals)
    while pending:
        page = read.first_events_of_goals(pending[:GOALS_PER_STEP], upto_position=upto_position, limit=EVENTS_PER_PAGE)
        yield from page
        if len(page) < EVENTS_PER_PAGE:
            pending = pending[GOALS_PER_STEP:]
            continue
        read_whole = {event.goal_id for event in page}  # (all but the last, which may go on: the rest of it by its version index)
        last = page[-1]
        while len(page) == EVENTS_PER_PAGE:
            page = read.read_goal(last.goal_id, upto_position=upto_position, after_version=page[-1].stream_version, limit=EVENTS_PER_PAGE)
            yield from page
        pending = [goal for goal in pending if goal not in read_whole]


# Paused: a fold holds thousands of containers at a time (the recent events and their decoded payloads, the rows waiting
# for their comparison) and makes next to no reference cycles (a replay of 2x10^4 events left 364 objects of cyclic
# garbage), so the collections its allocations trigger walked them and found nothing: ~6% of replay's CPU
# (benchmarks/README.md, the fold alone). Whatever cycle a step makes is collected once the collector is back on.
@collector_paused
def fold_step(
    read: Transaction,
    goals: Sequence[str],
    upto_position: int,
    *,
    mode: FoldMode,
    projection: str | None = None,
) -> FoldedStep:
    """Read and fold ``goals`` (ascending ids) through ``read``; their rows are compared with the stored rows
    ``read`` sees, or returned (:attr:`FoldMode.AUDIT_ROWS`), and what differs is written, collected or listed (``mode``).

    An audit reports a goal whose events cannot be folded at all instead of
    raising (tampered events: a payload that is not JSON, ...). ``projection``
    keeps only that projection's rows.
    """
    comparison = None if mode is FoldMode.AUDIT_ROWS else _Comparison(read, projection=projection, mode=mode)
    folded: dict[str, FoldedGoal] = {goal: FoldedGoal(goal, 0) for goal in goals}
    stream = events_of(read, goals, upto_position)
    event = next(stream, None)
    while event is not None:
        goal = event.goal_id
        sink = _GoalRows(comparison, goal) if comparison is not None else _HeldRows(goal, projection)
        projector = GoalProjector(strict=False, earlier=_GoalEventsReadAgain(read, goal), sink=sink)
        try:
            while event is not None and event.goal_id == goal:
                projector.apply(event)
                event = next(stream, None)
            projector.finish()
        except Exception as exc:
            if not mode.audit:
                raise
            while event is not None and event.goal_id == goal:  # (the rest of the goal's events)
                event = next(stream, None)
            folded[goal] = FoldedGoal(goal, projector.event_count, failure=f"{type(exc).__name__}: {exc}")
            if comparison is not None:
                comparison.discard(goal)
            continue
        folded[goal].events = projector.event_count
        if comparison is None:
            folded[goal].rows = list(sink.held.values())
            folded[goal].row_count = len(sink.held)
        else:
            comparison.end(goal)
    if comparison is None:
        return FoldedStep(list(folded.values()), [], [], 0)
    for goal, outcome in folded.items():
        if not outcome.events and outcome.failure is None:
            comparison.end(goal)  # (no events, no rows: whatever is stored for it goes)
    comparison.settle(folded.values())
    return FoldedStep(list(folded.values()), list(comparison.changed.values()), comparison.unwanted, comparison.rows_changed)


class _GoalRows:
    """A goal's fold handing its rows to the step's comparison (:class:`projector.RowSink`)."""

    def __init__(self, comparison: _Comparison, goal: str) -> None:
        self.comparison, self.goal = comparison, goal

    def rows(self, rows: Mapping[tuple[str, str], ProjectionRow]) -> None:
        self.comparison.add(self.goal, (row_record(self.goal, row) for row in rows.values()))

    def withdrawn(self) -> None:
        self.comparison.withdraw(self.goal)


class _HeldRows:
    """A goal's rows kept as records (an audit worker's, sent to the caller to compare; the goal is not large)."""

    def __init__(self, goal: str, projection: str | None) -> None:
        self.goal, self.projection = goal, projection
        self.held: dict[tuple[str, str], dict[str, Any]] = {}

    def rows(self, rows: Mapping[tuple[str, str], ProjectionRow]) -> None:
        self.held.update((key, row_record(self.goal, row)) for key, row in rows.items() if self.projection in (None, row.projection))

    def withdrawn(self) -> None:
        self.held = {key: row for key, row in self.held.items() if key[0] == catalog.STEP}


def _digest(stored: tuple[Any, ...] | None) -> bytes:
    return _NONE_STORED if stored is None else hashlib.blake2b(repr(stored).encode(), digest_size=16).digest()


# A record's values as a tuple in column order, as a stored row reads (an itemgetter: every row of a replay is compared).
_values: Callable[[Mapping[str, Any]], tuple[Any, ...]] = operator.itemgetter(*PROJECTION_ROW_COLUMNS)


class _Comparison:
    """The rows of a step's folds, compared with the stored rows ``read`` sees, a few thousand at a time.

    Rows wait in :attr:`buffer` (by goal, then by key: a row handed over again
    replaces the earlier one there; :attr:`waiting` counts them) until :data:`ROWS_PER_COMPARISON` of them do. A
    goal whose fold ended with all its rows still waiting is compared whole:
    one read of its stored rows, as many goals per read as wait. A goal
    whose rows were compared while it was still being folded (a large goal)
    is compared key by key, and its stored keys are read once more at its
    end to find those the fold no longer makes. For such a goal each key
    compared has a state: ``None`` when the row stored before the replay is
    what the fold made last (for an audit, always: it writes nothing), or the
    digest of that stored row when the replay wrote over it; a row handed
    over again is compared with that digest, not with what is stored now.
    """

    def __init__(self, read: Transaction, *, projection: str | None, mode: FoldMode) -> None:
        self.read, self.projection = read, projection
        self.audit, self.write = mode.audit, mode is FoldMode.WRITE
        self.buffer: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
        self.waiting = 0
        self.ended: set[str] = set()
        self.states: dict[str, dict[tuple[str, str], bytes | None]] = {}  # goal -> (projection, key) -> state
        self.withdrawn_written: dict[str, dict[tuple[str, str], bytes]] = {}
        self.faulted: dict[str, dict[tuple[str, str], str]] = {}
        self.differing: dict[str, dict[tuple[str, str], tuple[dict[str, Any] | None, dict[str, Any] | None]]] = {}
        self.counts: dict[str, int] = {}
        self.stored_counts: dict[str, Counter[str]] = {}
        self.changed: dict[RowKey, dict[str, Any]] = {}
        self.unwanted: list[RowKey] = []
        self.rows_changed = 0

    # -- what the folds hand over ---------------------------------------------

    def add(self, goal: str, records: Iterable[dict[str, Any]]) -> None:
        rows = self.buffer.get(goal)
        if rows is None:
            self.buffer[goal] = rows = {}
        before = len(rows)
        for record in records:
            if self.projection in (None, record["projection"]):
                rows[(record["projection"], record["key"])] = record
        self.waiting += len(rows) - before
        if not rows:
            del self.buffer[goal]
        # (compared as soon as a goal's fold ends; only a goal of many rows is compared before it ends)
        if self.waiting >= 4 * ROWS_PER_COMPARISON:
            self.flush()

    def withdraw(self, goal: str) -> None:
        """Every row of ``goal`` handed over so far but its lifecycle steps is gone (a retraction)."""
        rows = self.buffer.get(goal)
        if rows is not None:
            steps = {key: row for key, row in rows.items() if key[0] == catalog.STEP}
            self.waiting -= len(rows) - len(steps)
            if steps:
                self.buffer[goal] = steps
            else:
                del self.buffer[goal]
        states = self.states.get(goal)
        if states is None:
            return
        for key in [key for key in states if key[0] != catalog.STEP]:
            state = states.pop(key)
            if state is not None and self.write:
                self.withdrawn_written.setdefault(goal, {})[key] = state
            elif state is not None:  # (collected, not yet written: the caller's rows are still those stored before)
                self.changed.pop((key[0], goal, key[1]), None)
            self.faulted.get(goal, {}).pop(key, None)
            self.differing.get(goal, {}).pop(key, None)

    def end(self, goal: str) -> None:
        """``goal``'s fold handed over its last row."""
        self.ended.add(goal)
        if goal in self.states or self.waiting >= ROWS_PER_COMPARISON:
            self.flush()

    def discard(self, goal: str) -> None:
        """``goal`` could not be folded (an audit reports that instead): nothing of it is compared."""
        self.waiting -= len(self.buffer.pop(goal, {}))
        for held in (self.states, self.withdrawn_written, self.faulted, self.differing, self.stored_counts):
            held.pop(goal, None)

    def settle(self, folded: Iterable[FoldedGoal]) -> None:
        """Compare every row still waiting, then give each goal folded (not failed) its row count, faulted rows, and (audit) differences by key,
        stored rows by projection and stored counts."""
        self.flush()
        for outcome in folded:
            if outcome.failure is None:
                goal = outcome.goal_id
                outcome.faulted = [{"goal_id": goal, "projection": p, "key": k, "error": error} for (p, k), error in self.faulted.pop(goal, {}).items()]
                differing = self.differing.pop(goal, {})
                outcome.differences = [((p, goal, k), want, have) for (p, k), (want, have) in sorted(differing.items())]
                outcome.row_count, outcome.stored_counts = self.counts.pop(goal, 0), dict(self.stored_counts.pop(goal, {}))
                if self.audit:  # (read where the rows were: a worker's audit sends the counts with the differences)
                    outcome.counted = self.read.projection_counts(goal)

    # -- comparing ---------------------------------------------------------------

    def flush(self) -> None:
        """Compare every waiting row; finish the goals whose fold ended."""
        by_goal, self.buffer, self.waiting = self.buffer, {}, 0
        whole = [goal for goal in self.ended if goal not in self.states]
        stored = self.read.stored_rows_of_goals(whole, projection=self.projection, goals_per_read=GOALS_PER_STEP)
        for goal in whole:
            self._compare_whole(goal, by_goal.pop(goal, {}), stored.get(goal, {}))
        for goal, rows in by_goal.items():
            self._compare_keys(goal, rows)
        for goal in [goal for goal in self.states if goal in self.ended]:
            self._finish_keyed(goal)
        self.ended = set()

    def _compare_whole(self, goal: str, rows: dict[tuple[str, str], dict[str, Any]], stored: dict[tuple[str, str], tuple[Any, ...]]) -> None:
        """A goal's final rows against all its stored rows (read at once)."""
        if self.audit:
            self.stored_counts[goal] = Counter(projection for projection, _ in stored)
        changed = []
        for key, record in rows.items():
            have = stored.pop(key, None)
            if have != _values(record):
                changed.append(record)
                self._differs(goal, key, record, have)
            if record["error"] is not None:
                self.faulted.setdefault(goal, {})[key] = record["error"]
        unwanted = [(projection, goal, key) for projection, key in stored]
        for key, have in stored.items():
            self._differs(goal, key, None, have)
        self.counts[goal] = len(rows)
        self._write(changed)
        self._delete(unwanted)
        self.rows_changed += len(changed) + len(unwanted)

    def _compare_keys(self, goal: str, rows: dict[tuple[str, str], dict[str, Any]]) -> None:
        """Rows of a goal compared while it is still folded: each with the row stored before (see the class docstring)."""
        states = self.states.setdefault(goal, {})
        withdrawn = self.withdrawn_written.get(goal, {})
        for key in rows.keys() & withdrawn.keys():
            states[key] = withdrawn.pop(key)
        stored = self.read.stored_rows_of_keys(goal, [key for key in rows if states.get(key) is None])
        faulted = self.faulted.setdefault(goal, {})
        written, restored = [], []
        for key, record in rows.items():
            if record["error"] is not None:
                faulted[key] = record["error"]
            else:
                faulted.pop(key, None)
            values = _values(record)
            state = states.get(key)
            if state is None:  # what is stored is what was stored before: compare with it
                have = stored.get(key)
                if have == values:
                    states[key] = None
                    self._differs(goal, key, None, None)
                    continue
                states[key] = None if self.audit else _digest(have)
                self._differs(goal, key, record, have)
                written.append(record)
            elif _digest(values) == state:  # back to the row stored before the replay
                states[key] = None
                restored.append(record)
            else:
                written.append(record)
        self._write(written)
        if self.write:
            self._write(restored)
        else:
            for record in restored:
                self.changed.pop((record["projection"], goal, record["key"]), None)

    def _finish_keyed(self, goal: str) -> None:
        """A goal compared key by key whose fold ended: its stored keys the fold no longer makes go; count what changed."""
        states = self.states.pop(goal)
        withdrawn = self.withdrawn_written.pop(goal, {})
        unwanted, changes = [], sum(1 for state in states.values() if state is not None)
        held = self.stored_counts.setdefault(goal, Counter()) if self.audit else Counter()
        for projection, key, position in self.read.stored_row_keys(goal, projection=self.projection, per_fetch=EVENTS_PER_PAGE):
            held[projection] += 1
            if (projection, key) in states:
                continue
            unwanted.append((projection, goal, key))
            # (a row this replay wrote, then withdrew, changes something only if a row was stored before)
            changes += withdrawn.get((projection, key)) != _NONE_STORED
            self._differs(goal, (projection, key), None, {"projection": projection, "goal_id": goal, "key": key, "position": position})
        self.counts[goal] = len(states)
        self._delete(unwanted)
        self.rows_changed += changes

    def _differs(self, goal: str, key: tuple[str, str], want: dict[str, Any] | None, have: tuple[Any, ...] | dict[str, Any] | None) -> None:
        """(audit) Remember that the row ``key`` of ``goal`` differs from the stored one; ``want`` and ``have`` both None: it no longer does."""
        if not self.audit:
            return
        differing = self.differing.setdefault(goal, {})
        if want is None and have is None:
            differing.pop(key, None)
        else:
            differing[key] = (want, dict(zip(PROJECTION_ROW_COLUMNS, have)) if isinstance(have, tuple) else have)

    def _write(self, records: list[dict[str, Any]]) -> None:
        if self.audit or not records:
            return
        if self.write:
            self.read.upsert_projection_rows(records)
        else:
            self.changed.update(((r["projection"], r["goal_id"], r["key"]), r) for r in records)

    def _delete(self, keys: list[RowKey]) -> None:
        if self.audit or not keys:
            return
        if self.write:
            self.read.delete_projection_rows(keys)  # (the caller recounts the goals' rows)
        else:
            self.unwanted.extend(keys)


def compare_rows(read: Transaction, step: FoldedStep, *, projection: str | None) -> FoldedStep:
    """A step folded in :attr:`FoldMode.AUDIT_ROWS` (an audit's worker) with its rows compared with the stored rows
    ``read`` sees, as :attr:`FoldMode.AUDIT` compares them."""
    comparison = _Comparison(read, projection=projection, mode=FoldMode.AUDIT)
    for goal in step.folded:
        if goal.failure is None:
            comparison.add(goal.goal_id, goal.rows)
            comparison.end(goal.goal_id)
            goal.rows = []  # (compared: not held while the audit goes on)
    comparison.settle(step.folded)
    return step
