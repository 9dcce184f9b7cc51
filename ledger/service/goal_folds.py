"""A transaction's goals folded: each resumed from its checkpoint (or continued from the writer's last fold of it) and fed
the transaction's new events, a chunk at a time, reading the ledger only through :class:`FoldReads`; in this process
(:class:`FoldsHere`) or in a fold worker (``service.fold_workers``), through the same code. ``service.materialize`` writes the rows."""

from __future__ import annotations

import contextlib
import json
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from benchledger.errors import CorruptEvent
from benchledger.ledger.service import folding
from benchledger.ledger.service.folding import row_record
from benchledger.ledger.storage.event_records import StoredEvent
from benchledger.ledger.storage.transaction import Transaction
from benchledger.projections import catalog, retraction
from benchledger.projections.batch_manifest import BATCH_KIND
from benchledger.projections.checkpoint import (
    CheckpointUnusable,
    EvidenceRef,
    checkpoint_fields,
    checkpoint_references,
    evidence_refs,
)
from benchledger.projections.projector import GoalProjector


class FoldAgainHere(Exception):  # noqa: N818 (not an error: what to do next)
    """Raised by :meth:`GoalFolds.fold` to roll the transaction back: a fold raised in a worker (rows of other goals may
    be written in the transaction already, and a fold again would read them), so the writer writes the transaction
    again, its goals folded here (:class:`FoldsHere`), which raises what one job raises (or, if the worker alone
    failed, writes what one job writes)."""


class GoalFolds(Protocol):
    """Where a writer's transactions have their goals folded, fed each chunk the writer appends (:class:`TransactionFolds`):
    in this process (:class:`FoldsHere`), or by worker processes while the writer appends the next chunk
    (``service.fold_workers``)."""

    def begin(self) -> None:
        """A transaction (or another attempt at one) begins: what an attempt that did not commit folded is forgotten."""

    def appended(self, tx: Transaction, first_new: Mapping[str, int], events: Sequence[StoredEvent]) -> None:
        """A chunk of the transaction appended: its events (position order), and each goal's first."""

    def fold(self, tx: Transaction, first_new: Mapping[str, int], new_events: Sequence[StoredEvent] | None) -> list[GoalRows]:
        """Every chunk is appended: the rows of the transaction's goals (``first_new``, see ``materialize_goals``) for the
        caller to write, in its order; those this has written in ``tx`` already (``write_goal_rows``) are left out.

        A fold that raised is folded again here, all of the transaction at once (:func:`fold_goals`, ``new_events``
        or the events read back), so the error is the same however the transaction was cut, or spread (or, by fold
        workers, which may have written rows already, :class:`FoldAgainHere` is raised).
        """
        ...

    def committed(self) -> None:
        """The transaction committed: its folds are the ones to continue."""


class FoldsHere:
    """:class:`GoalFolds` in this process, keeping the goals' projectors across transactions (:class:`KeptProjectors`)."""

    def __init__(self) -> None:
        self.kept = KeptProjectors()
        self._folds: TransactionFolds | None = None
        self._failed = False

    def begin(self) -> None:
        self.kept.begin()
        self._folds, self._failed = None, False

    def appended(self, tx: Transaction, first_new: Mapping[str, int], events: Sequence[StoredEvent]) -> None:
        if self._failed:
            return
        if self._folds is None:
            self._folds = TransactionFolds(TransactionReads(tx), self.kept)
        try:
            self._folds.add(first_new, events)
        except Exception:  # (raised again by the fold of the whole transaction at the end)  # noqa: BLE001
            self._failed = True

    def fold(self, tx: Transaction, first_new: Mapping[str, int], new_events: Sequence[StoredEvent] | None) -> list[GoalRows]:
        folds, self._folds = self._folds, None
        if self._failed or folds is None:
            return fold_goals(TransactionReads(tx), first_new, new_events, None)
        return folds.finish()

    def committed(self) -> None:
        self.kept.committed()


class KeptProjectors:
    """The goal projectors one writer's committed transactions folded, to continue in its next ones (``ingest-batches``).

    A goal a run appends to in many transactions is then folded once, not
    resumed from its checkpoint in each (which reads the events it names and
    reduces the lifecycle and the reviews it derives again). A projector is
    continued only when the goal's first new event directly follows the last
    one it folded, i.e. nobody else appended to the goal since this writer's
    commit; it is taken out when used and kept again only once its transaction
    commits (a rolled-back fold would be ahead of the ledger). The least
    recently used beyond :attr:`limit` goals are dropped: one kept holds its
    fold state (the newest evidence of each lifecycle kind), not its events or rows.
    A fold worker keeps one for its goals, :class:`FoldsHere` one for all.
    """

    def __init__(self, limit: int = 256) -> None:
        self.limit = limit
        self._kept: OrderedDict[str, GoalProjector] = OrderedDict()
        self._folded: dict[str, GoalProjector] = {}

    def begin(self) -> None:
        self._folded = {}

    def take(self, goal_id: str) -> GoalProjector | None:
        return self._kept.pop(goal_id, None)

    def folded(self, goal_id: str, projector: GoalProjector) -> None:
        self._folded[goal_id] = projector

    def committed(self) -> None:
        for goal, projector in self._folded.items():
            self._kept[goal] = projector.continued(None)
        self._folded = {}
        while len(self._kept) > self.limit:
            self._kept.popitem(last=False)


class FoldReads(Protocol):
    """What a fold reads of the ledger (:class:`_TransactionEvents`): in the writer's transaction (:class:`TransactionReads`),
    or asked of the writer by a fold worker (``service.fold_workers``), which never reads the database itself: its
    snapshot would lack the transaction's uncommitted events. :data:`READS` names them."""

    def events_by_id(self, event_ids: list[str]) -> dict[str, StoredEvent]: ...

    def read_goal(self, goal_id: str, after_version: int, upto_position: int | None) -> list[StoredEvent]: ...

    def events_before(self, goal_id: str, position: int) -> Iterable[StoredEvent]: ...

    def goal_row(self, goal_ids: list[str], projection: str, key: str) -> dict[str, dict[str, Any]]: ...

    def goal_events_of_kind(self, goal_ids: list[str], kind: str) -> dict[str, list[StoredEvent]]: ...


class TransactionReads:
    """:class:`FoldReads` in the writer's transaction."""

    def __init__(self, tx: Transaction) -> None:
        self.tx = tx

    def events_by_id(self, event_ids: list[str]) -> dict[str, StoredEvent]:
        return self.tx.events_by_id(event_ids)

    def read_goal(self, goal_id: str, after_version: int, upto_position: int | None) -> list[StoredEvent]:
        return self.tx.read_goal(goal_id, after_version=after_version, upto_position=upto_position)

    def events_before(self, goal_id: str, position: int) -> Iterable[StoredEvent]:
        return folding.events_of(self.tx, [goal_id], position - 1)

    def goal_row(self, goal_ids: list[str], projection: str, key: str) -> dict[str, dict[str, Any]]:
        return self.tx.projection_row_of_goals(goal_ids, projection, key)

    def goal_events_of_kind(self, goal_ids: list[str], kind: str) -> dict[str, list[StoredEvent]]:
        return self.tx.goal_events_of_kind(goal_ids, kind)


READS = ("events_by_id", "read_goal", "events_before", "goal_row", "goal_events_of_kind")


@dataclass(frozen=True)
class GoalRows:
    """A goal's fold in one transaction: its rows as stored (:func:`row_record`); ``whole``: they are all its rows (a goal
    folded from its first event), so stored rows the fold no longer makes go."""

    goal_id: str
    rows: list[dict[str, Any]]
    whole: bool


def fold_goals(
    reads: FoldReads,
    first_new: Mapping[str, int],
    new_events: Sequence[StoredEvent] | None,
    projectors: KeptProjectors | None,
) -> list[GoalRows]:
    """The folds :func:`materialize_goals` writes, all of the transaction's events at once (:class:`TransactionFolds`)."""
    folds = TransactionFolds(reads, projectors)
    folds.add(first_new, new_events)
    return folds.finish()


class TransactionFolds:
    """The folds of one transaction's goals, fed its appended events a chunk at a time, finished once it has appended all.

    Reads the ledger through ``reads`` only, so a worker process can run it
    (``service.fold_workers``); ``projectors`` continues the folds of the
    writer's earlier transactions, and keeps these (:class:`KeptProjectors`).
    A goal's fold is set up when its first events come (continued, resumed
    from its checkpoint, or from its first event: :func:`materialize_goals`)
    and fed each later chunk's: the same calls, in the same order, as folding
    them all at once, so the rows are the same however the events were cut.
    A continued or resumed fold that a later chunk cannot continue (a
    retraction, a stored row that is not what the events say) is folded again
    at the end, from the goal's checkpoint, as one chunk would have been.
    """

    def __init__(self, reads: FoldReads, projectors: KeptProjectors | None) -> None:
        self.reads, self.projectors = reads, projectors
        self.known = _TransactionEvents(reads, ())
        self._folds: dict[str, _GoalFold] = {}

    def add(self, first_new: Mapping[str, int], new_events: Sequence[StoredEvent] | None) -> None:
        """A chunk's appended events, in position order, and ``first_new`` each goal's first; ``None``: the caller does not hold
        the events (a write of many chunks folded at its end, :func:`fold_goals`), read back when a fold needs them."""
        self.known.add(new_events)
        for goal in first_new:
            fold = self._folds.get(goal)
            if fold is not None:
                fold.add(self.known.chunk(goal))
        self._start({goal: position for goal, position in first_new.items() if goal not in self._folds})

    def _start(self, first_new: Mapping[str, int]) -> None:
        known, projectors = self.known, self.projectors
        continued: dict[str, GoalProjector | None] = {}
        for goal, emit_from in first_new.items():
            kept = projectors.take(goal) if projectors is not None else None
            if kept is not None:
                continued[goal] = _continued(known, goal, kept, emit_from)
        resumed = [goal for goal in first_new if continued.get(goal) is None]
        checkpoints = self.reads.goal_row(resumed, catalog.CHECKPOINT, catalog.CURRENT_KEY) if resumed else {}
        known.read_named(checkpoints.values())
        # (a checkpoint's retracted ids are checked against the goal's retractions: few events, one index range each)
        retractions = self.reads.goal_events_of_kind(list(checkpoints), retraction.KIND) if checkpoints else {}
        for goal, emit_from in first_new.items():
            projector = continued.get(goal)
            stage = _Stage.CONTINUED
            if projector is None:
                projector, stage = _resumed(known, goal, checkpoints.get(goal), emit_from, retractions.get(goal, ())), _Stage.RESUMED
            if projector is None:
                projector, stage = _whole(known, goal, emit_from), _Stage.WHOLE
            self._folds[goal] = _GoalFold(emit_from, projector, stage, list(known.chunk(goal)))

    def finish(self) -> list[GoalRows]:
        """Every goal's rows, in the order their first events came."""
        return list(self.finished())

    def finished(self) -> Iterator[GoalRows]:
        """:meth:`finish` a goal at a time (a fold worker hands the rows over as they are made)."""
        for goal, fold in self._folds.items():
            projector = fold.finished()
            if projector is None and fold.stage is _Stage.CONTINUED:  # (then resumed, or folded whole, as in _start)
                yield from fold_goals(self.reads, {goal: fold.first_new}, fold.events, None)
                continue
            if projector is None:
                projector = _whole(_TransactionEvents(self.reads, fold.events), goal, fold.first_new)
                projector.finish()
            if self.projectors is not None:
                self.projectors.folded(goal, projector)
            yield GoalRows(goal, [row_record(goal, row) for row in projector.rows.values()], projector.emits_all)


class _Stage(Enum):
    """How a goal's fold began in a transaction: what it falls back to when a later chunk cannot continue it."""

    CONTINUED = "continued"  # (a kept projector: resumed from the checkpoint instead)
    RESUMED = "resumed"  # (from the checkpoint: folded whole instead)
    WHOLE = "whole"  # (from the goal's first event: takes any event, a retraction too)


@dataclass
class _GoalFold:
    """A goal's fold in progress in a transaction: the events it was given, and whether it can go on (``projector``)."""

    first_new: int
    projector: GoalProjector | None
    stage: _Stage
    events: list[StoredEvent]

    def add(self, events: Sequence[StoredEvent]) -> None:
        self.events += events
        if self.projector is None:
            return
        if self.stage is _Stage.WHOLE:
            for event in events:
                self.projector.apply(event)
            return
        if any(retraction.retracted_by(event) for event in events):
            self.projector = None  # (a retraction changes rows of earlier events: see _resumed)
            return
        try:
            for event in events:
                self.projector.apply(event)
        except CheckpointUnusable:
            self.projector = None

    def finished(self) -> GoalProjector | None:
        if self.projector is None or self.stage is _Stage.WHOLE:
            if self.projector is not None:
                self.projector.finish()
            return self.projector
        try:
            self.projector.finish()
        except CheckpointUnusable:
            return None
        return self.projector


def _whole(known: _TransactionEvents, goal: str, first_new: int) -> GoalProjector:
    """``goal`` folded from its first event (its new events those from ``first_new``), but for :meth:`~GoalProjector.finish`.

    A goal without a usable checkpoint that held events before this append was last written by an older benchledger (or
    tampered with): its stored rows may lack lifecycle steps or be of older versions, so every row is recomputed and
    replaced (the upgrade costs that goal's past once). A goal whose events are all new has no stored row to replace: its
    new rows are all.
    """
    events = known.after(goal, 0)
    fresh = bool(events) and events[0].position >= first_new
    projector = GoalProjector(strict=True, emit_from=first_new if fresh else 0)
    for event in events:
        projector.apply(event)
    return projector


def _fold_new(projector: GoalProjector, events: Sequence[StoredEvent]) -> GoalProjector:
    """:meth:`GoalProjector.fold_new` but for its :meth:`~GoalProjector.finish`, which comes once the transaction's last chunk is folded."""
    if events:
        projector.emit_from = events[0].position  # (so never :attr:`emits_all`: the earlier rows stay)
    for event in events:
        projector.apply(event)
    return projector


class _TransactionEvents:
    """The events the folds of one append's transaction read, each read once for all its goals.

    Events never change, so one read in the transaction holds for all of it:
    the events the transaction appended (when the caller holds them), then by
    id those the goals' checkpoints name and the members of those that are
    batches (read for every goal at once), then whatever else a fold asks for.
    """

    def __init__(self, reads: FoldReads, new_events: Sequence[StoredEvent]) -> None:
        self.reads = reads
        self.by_id: dict[str, StoredEvent] = {}
        self._new: dict[str, list[StoredEvent]] = {}
        self._chunk: dict[str, list[StoredEvent]] = {}
        self._upto: int | None = None  # (the last position handed over: later ones are appended, not yet folded)
        self.add(new_events)

    def add(self, new_events: Sequence[StoredEvent] | None) -> None:
        """Events the transaction appended (in position order), or ``None``: the rest are read back when asked for."""
        self._chunk = {}
        if new_events is None:
            self._upto = None
            return
        for event in new_events:  # (each goal's in stream order)
            self.by_id[event.event_id] = event
            self._new.setdefault(event.goal_id, []).append(event)
            self._chunk.setdefault(event.goal_id, []).append(event)
        if new_events:
            self._upto = new_events[-1].position

    def chunk(self, goal_id: str) -> list[StoredEvent]:
        """``goal_id``'s events of the last :meth:`add`."""
        return self._chunk.get(goal_id, [])

    def read_named(self, checkpoints: Iterable[Mapping[str, Any]]) -> None:
        """Read the events ``checkpoints`` (stored rows) name, and the members of those that are batches, in two reads."""
        named = [i for row in checkpoints if row["status"] == "ok" for i in checkpoint_references(_json_value(row["payload"]))]
        members: list[str] = []
        for batch in (e for e in self.read(named).values() if e.kind == BATCH_KIND):
            with contextlib.suppress(CorruptEvent):  # (read ahead only: a fold that needs it says what is wrong)
                listed = batch.payload.get("members") if isinstance(batch.payload, dict) else None
                members += [m["event_id"] for m in listed or () if isinstance(m, dict) and isinstance(m.get("event_id"), str)]
        self.read(members)

    def read(self, event_ids: Iterable[str]) -> dict[str, StoredEvent]:
        """Those of ``event_ids`` the ledger holds, by id (each read from the database once)."""
        wanted = list(dict.fromkeys(event_ids))
        unread = [i for i in wanted if i not in self.by_id]
        if unread:
            self.by_id.update(self.reads.events_by_id(unread))
        return {i: self.by_id[i] for i in wanted if i in self.by_id}

    def after(self, goal_id: str, version: int) -> list[StoredEvent]:
        """``goal_id``'s events after stream version ``version``: the appended ones when they are exactly those."""
        new = self._new.get(goal_id)
        if new and new[0].stream_version == version + 1:
            return list(new)
        return self.reads.read_goal(goal_id, version, self._upto)


@dataclass(frozen=True)
class StoredGoalEvents:
    """A goal's stored events, read on demand by a fold resumed from a checkpoint (:class:`projector.EarlierEvents`)."""

    # Not folding._GoalEventsReadAgain: an ingest's goals share one read of their events (few: kept for the transaction),
    # and a fold resumed from a checkpoint has not seen the goal's earlier batches, so it asks the stored comparison-batch row.

    events: _TransactionEvents
    goal_id: str

    def by_id(self, event_ids: Iterable[str]) -> dict[str, StoredEvent]:
        return {i: e for i, e in self.events.read(event_ids).items() if e.goal_id == self.goal_id}

    def latest_comparison_batch(self, comparison_id: str, before: int) -> StoredEvent | None:
        key = catalog.comparison_key(comparison_id)
        row = self.events.reads.goal_row([self.goal_id], catalog.COMPARISON_INDEX, key).get(self.goal_id)
        if row is None or row["status"] != "ok":
            return None
        batch_id = _json_field(row["payload"], "batch_id")
        batch = self.by_id([batch_id]).get(batch_id) if isinstance(batch_id, str) else None
        if batch is None or batch.position >= before or batch.kind != BATCH_KIND:
            raise CheckpointUnusable(f"the {catalog.COMPARISON_INDEX} row {key} names no earlier batch of the goal")
        return batch

    def before(self, position: int) -> Iterator[StoredEvent]:
        return iter(self.events.reads.events_before(self.goal_id, position))

    def attempt_evidence(self, attempt: str) -> dict[str, EvidenceRef] | None:
        """The goal's ``attempt-evidence`` row of ``attempt`` (one row read by key), if it holds one; one that does not read is
        :class:`CheckpointUnusable` (the ingest folds the goal whole)."""
        row = self.events.reads.goal_row([self.goal_id], catalog.ATTEMPT_EVIDENCE, attempt).get(self.goal_id)
        if row is None:
            return None
        if row["status"] != "ok" or row["projection_version"] != catalog.ATTEMPT_EVIDENCE_VERSION:
            raise CheckpointUnusable(f"the {catalog.ATTEMPT_EVIDENCE} row {attempt} is not one of this version")
        return evidence_refs(_json_field(row["payload"], "latest"))


def _json_value(text: str | None) -> Any:
    try:
        return json.loads(text or "null")
    except ValueError:
        return None


def _json_field(text: str | None, name: str) -> Any:
    value = _json_value(text)
    return value.get(name) if isinstance(value, dict) else None


def _resumed(
    events: _TransactionEvents, goal: str, checkpoint: Mapping[str, Any] | None, first_new: int, retractions: Iterable[StoredEvent]
) -> GoalProjector | None:
    """``goal``'s projector resumed from its stored checkpoint row and fed the events after it; ``None`` if it cannot be.

    ``retractions`` are the goal's retraction events: the ids the checkpoint says are retracted must be
    exactly theirs up to its version (an edited list would hide evidence, or show retracted evidence, from now on).
    """
    if checkpoint is None or checkpoint["status"] != "ok" or checkpoint["projection_version"] != catalog.CHECKPOINT_VERSION:
        return None
    try:
        payload = json.loads(checkpoint["payload"])
        projector = GoalProjector.resume(payload, strict=True, earlier=StoredGoalEvents(events, goal))
    except (CheckpointUnusable, ValueError):
        return None
    if checkpoint_fields(payload)[2] != retraction.retracted_ids(e for e in retractions if e.stream_version <= projector.last_version):
        return None  # the checkpoint disagrees with the goal's retractions (tampered): not one to continue
    new = events.after(goal, projector.last_version)
    if not new or new[0].position > first_new or new[0].stream_version != projector.last_version + 1:
        return None  # the checkpoint claims a later state than the goal's (tampered): not one to continue
    if any(retraction.retracted_by(event) for event in new):
        return None  # a retraction changes rows of earlier events: the goal is folded whole
    try:
        return _fold_new(projector, new)
    except CheckpointUnusable:
        return None  # a stored row the fold resumed from is not what the events say: fold the goal whole


def _continued(events: _TransactionEvents, goal: str, projector: GoalProjector, first_new: int) -> GoalProjector | None:
    """``projector`` (kept from this writer's last fold of ``goal``) fed the goal's new events; ``None`` unless it folded the event just before them."""
    new = events.after(goal, projector.last_version)
    if not new or new[0].position != first_new or any(retraction.retracted_by(event) for event in new):
        return None  # another writer appended to the goal since (or a retraction: the goal is folded whole)
    try:
        return _fold_new(projector.continued(StoredGoalEvents(events, goal)), new)
    except CheckpointUnusable:
        return None  # a stored comparison-batch row is not what the events say: resumed, or folded whole


