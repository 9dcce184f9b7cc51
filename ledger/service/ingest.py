"""The one write path: a unit of work (:class:`Ingest`) puts events, batch manifests and projections in one transaction.

Every command that appends evidence is one (or, ``ingest-batches``, one a
transaction): ``ingest`` and ``ingest --batch-per-directory`` (files read
inside the transaction), ``import-loopx`` (a run ledger's rows as they are, a
history's records as batches), a review's ``--goal``, ``retract`` and the
library's :func:`ingest`. What it promises, once for all: all or nothing; an
event already stored is not stored again (its identity:
:meth:`NewEvent.event_id`); a batch whose members an earlier batch already
groups is not recorded (:func:`grouped_before`); a dry run computes the outcome
and rolls back; the goals' projections are brought up to date in the same
transaction (``service.materialize``). What it reports: ``service.ingest_outcome``.

The store (``ledger.storage``) knows nothing of reviews and the reducers
(``projections``) nothing of storage; an ingest is where they meet.

Longer than 500 lines: the unit of work and the chunk writer it drives (:class:`_Writer`) share their state
(the events pending, each batch's manifest decided a chunk at a time); apart, each would reach into the other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

from benchledger.errors import InvalidInput, LedgerError
from benchledger.ledger.service.attempt_identity import REOBSERVED, AttemptPlacement, InvalidAttempt
from benchledger.ledger.service.goal_folds import GoalFolds
from benchledger.ledger.service.goal_names import refuse_unmeant_names
from benchledger.ledger.service.ingest_outcome import (
    NO_RUN_NOTE,
    BatchOutcome,
    IngestOutcome,
    MemberOutcome,
    stored_lifecycle_note,
    withdrawn_note,
)
from benchledger.ledger.service.intake.artifacts import Census, Refused, checked_kind, read_artifacts
from benchledger.ledger.service.intake.files import MAX_BATCH_ARTIFACTS
from benchledger.ledger.service.materialize import materialize_goals
from benchledger.ledger.storage.append import guard_receipt, unstorable_problems
from benchledger.ledger.storage.event_records import Appended, NewEvent, StoredEvent, StreamAppend
from benchledger.ledger.storage.guard import UnstorableContent, unprintable
from benchledger.ledger.storage.store import ChunkedAppend, Store
from benchledger.ledger.storage.transaction import Transaction
from benchledger.projections.artifacts import Artifact
from benchledger.projections.attempts import valid_attempt_id
from benchledger.projections.batch_manifest import BATCH_KIND, BATCH_SCHEMA, batch_manifest, claim_review_without_runs
from benchledger.projections.retraction import KIND as RETRACTION_KIND
from benchledger.projections.retraction import retracted_by

# Events a statement appends: many rows a statement, and a chunk of 4 MiB documents read from files
# stays well under the memory bound (docs/performance.md, "Memory"). A batch given as artifacts is held already and
# appended whole (its guard receipt covers it whole): a chunk ends after the batch that fills it.
CHUNK_ARTIFACTS = 500
# How a caller says a new goal is meant (what a refusal of a name close to an existing goal's, or a file's, advises).
NEW_GOAL_HOW = "pass --new-goal (library: new_goal=True)"


class NothingToIngest(InvalidInput):
    """A batch without artifacts: a persistent ledger keeps no empty batch (and so creates no goal for one)."""


# -- the events a batch appends --------------------------------------------------------------


def member_event(artifact: Artifact) -> NewEvent:
    """An artifact's event: one source document is one observation (keyed on its source hash, docs/hash-chain.md)."""
    schema = artifact.payload.get("schema_version") if isinstance(artifact.payload, dict) else None
    # (a raw lifecycle record's schema_version is any text: one holding a lone surrogate, which a review's throwaway
    # ledger reads as LoopX does, is no column's value, and the chain hash could not encode it)
    column = schema if isinstance(schema, str) and unprintable(schema) is None else None
    return NewEvent(artifact.kind, artifact.payload, column, artifact.source_sha256, keyed_on_source=True, origin=artifact.origin)


def manifest_member(event_id: str, kind: str, role: str | None) -> dict[str, Any]:
    """How a batch manifest names one member."""
    return {"event_id": event_id, "kind": kind, **({"role": role} if role else {})}


def manifest_event(members: list[dict[str, Any]], review: Mapping[str, Any] | None = None, attempt: str | None = None) -> NewEvent:
    """A batch's ``ingest_batch`` event, listing ``members`` (:func:`manifest_member`) in order; ``attempt``: the one it is named into."""
    origin = "the batch manifest" + (" (the review's flags are its $.review.options)" if review else "")
    return NewEvent(BATCH_KIND, batch_manifest(members, review, attempt), BATCH_SCHEMA, origin=origin)


def batch_events(goal_id: str, artifacts: Sequence[Artifact], attempt: str | None = None) -> list[NewEvent]:
    """The events a batch of new artifacts appends: its members, then its ``ingest_batch`` manifest."""
    members = [member_event(a) for a in artifacts]
    manifest = [manifest_member(new.event_id(goal_id), new.kind, a.role) for a, new in zip(artifacts, members)]
    return [*members, manifest_event(manifest, attempt=attempt)]


def checked_attempt(attempt: Any) -> str | None:
    """``attempt`` as an attempt id (``None``: the rule places the batch): its digits (``"2"``) or, as a library caller
    may give it, an ``int`` (``2``, as an ``ingest-batches`` line's ``"attempt": 2``); else :class:`InvalidAttempt`.
    (``--attempt`` is refused by the command line before it gets here: the wording is the library's.)"""
    named = str(attempt) if isinstance(attempt, int) and not isinstance(attempt, bool) else attempt
    if named is None or valid_attempt_id(named):
        return named
    raise InvalidAttempt(
        f"attempt {_shown(attempt)} is not an attempt id: a whole number from 1 to 999999999 (an int, or its digits as a "
        "str such as '2'); nothing was written"
    )


def _shown(value: Any) -> str:
    """``value`` as a refusal quotes it, cut short."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


@dataclass(frozen=True)
class CheckedBatch:
    """A batch judged ahead of its append (``ingest-batches`` validates a whole file first): its member events, what the
    store's guard refuses in it, and when nothing, the receipt that spares :class:`Ingest` judging it again."""

    members: list[NewEvent]
    problems: list[tuple[str, str]]
    receipt: bytes | None


def check_batch(goal_id: str, artifacts: Sequence[Artifact], *, source: str, attempt: str | None = None) -> CheckedBatch:
    """What the store's guard says of the batch :meth:`Ingest.add` would append (:func:`guard_receipt`)."""
    events = batch_events(goal_id, artifacts, attempt)
    problems, receipt = guard_receipt(StreamAppend(goal_id, events), source=source)
    return CheckedBatch(events[:-1], problems, receipt)


def grouped_before(tx: Transaction, goal_id: str, member_ids: Collection[str], newest_version: int) -> StoredEvent | None:
    """The earliest batch of ``goal_id`` that already lists every one of ``member_ids`` (all stored, the newest at stream
    version ``newest_version``), if any.

    Such a batch adds nothing, so it is not recorded: a file ingested again
    alone (a repeated comparison) would otherwise be a batch of its own, whose
    reviews, derived without the runs it was first grouped with, would become
    the goal's latest claim review and learning ledger. A batch sent by a
    review command is always recorded (its flags are the new observation).
    """
    wanted = set(member_ids)
    # The batch appended right after the newest member (its own manifest) is the earliest that can
    # list it: when it lists them all (a file or a group ingested again), no other batch is read.
    home = tx.read_goal(goal_id, kinds=(BATCH_KIND,), after_version=newest_version, limit=1)
    if home and wanted <= {member["event_id"] for member in home[0].payload["members"]}:
        return home[0]
    for batch in tx.read_goal(goal_id, kinds=(BATCH_KIND,)):
        if wanted <= {member["event_id"] for member in batch.payload["members"]}:
            return batch
    return None


# -- the unit of work ------------------------------------------------------------------------


@dataclass(frozen=True)
class _HeldBatch:
    goal_id: str
    artifacts: Sequence[Artifact]
    review: Mapping[str, Any] | None
    label: str | None
    source: str | None
    attempt: str | None
    members: Sequence[NewEvent] | None  # (the artifacts' events when built already, else built in the transaction)


@dataclass(frozen=True)
class _FilesBatch:
    goal_id: str
    files: Sequence[str]
    kind: str | None
    label: str | None
    progress: Callable[[Iterable[str]], Iterable[str]] | None
    attempt: str | None


@dataclass(frozen=True)
class _GivenEvents:
    goal_id: str
    events: Sequence[NewEvent]
    expected_version: int | None


class Ingest:
    """One write: batches (of artifacts, or of files to read) and events as they are, in one transaction.

    ``Ingest(ledger, source)`` registers what to write (:meth:`add`,
    :meth:`add_files`, :meth:`add_events`: nothing is read or written yet);
    :meth:`commit` opens the write transaction, appends everything in order
    :data:`CHUNK_ARTIFACTS` events at a time (files are read as it goes, so an
    input is never held whole), each batch's manifest after its members, brings
    the projections of the goals it changed up to date (``materialize``: every
    persistent ledger; a reducer that raises aborts the write) and commits.
    Anything refused (a document that does not read, what the store's guard
    refuses) writes nothing: the outcome names every refusal once all is read
    (:meth:`IngestOutcome.raise_if_refused` raises them). ``dry_run`` computes
    the outcome and rolls back.
    ``receipts``: the guard's, for batches it judged already
    (:func:`check_batch`); ``folds``: where the goals are folded, each chunk
    as it is appended, continuing this writer's earlier units (:class:`GoalFolds`);
    ``chunk_artifacts``: the events a chunk reaches (default :data:`CHUNK_ARTIFACTS`); ``inputs``: what the refusal of files
    holding no artifact calls them (default: the files); ``skip_unknown``: files'
    documents of unknown kind are left out and listed (``IngestOutcome.skipped``), not refused.

    As a context manager it commits when the block ends without an exception (the outcome is then
    :attr:`outcome`), raising :class:`UnstorableContent` if the write was refused.
    """

    def __init__(
        self,
        ledger: Store,
        source: str,
        *,
        dry_run: bool = False,
        materialize: bool = True,
        receipts: Collection[bytes] = (),
        folds: GoalFolds | None = None,
        chunk_artifacts: int | None = None,
        inputs: str | None = None,
        skip_unknown: bool = False,
    ) -> None:
        self.ledger, self.source, self.dry_run, self.materialize = ledger, source, dry_run, materialize
        self.receipts, self.folds, self.inputs, self.skip_unknown = receipts, folds, inputs, skip_unknown
        self.chunk_artifacts = chunk_artifacts or CHUNK_ARTIFACTS
        self.outcome: IngestOutcome | None = None
        self._items: list[_HeldBatch | _FilesBatch | _GivenEvents] = []
        self._meant: set[str] = set()  # goals said to be meant new (``new_goal``)
        self._written: IngestOutcome | None = None  # (the outcome of the transaction about to commit)

    def add(
        self,
        goal_id: str,
        artifacts: Sequence[Artifact],
        *,
        review: Mapping[str, Any] | None = None,
        label: str | None = None,
        source: str | None = None,
        new_goal: bool = False,
        attempt: str | None = None,
        members: Sequence[NewEvent] | None = None,
    ) -> None:
        """A batch of ``artifacts`` (in argument order) for ``goal_id``; ``review``: the review command that sent it, with its flags;
        ``source``: the label stored with its events when it is not the unit's (an ``ingest-batches`` line's own);
        ``members``: the artifacts' events (:func:`member_event` of each), when the caller built them ahead of the transaction.
        ``attempt`` (here and in :meth:`add_files`): the attempt of the goal the batch joins (docs/linking.md, "Naming
        the attempt"); ``None``: the attempt rule places it. One that is no attempt id, or that would skip attempt numbers
        (the goal has attempts 1 and 2: 4 skips 3), raises :class:`InvalidAttempt`.

        ``new_goal`` (here and in :meth:`add_files`, :meth:`add_events`): a goal the ledger lacks is meant, even one
        whose name is close to an existing goal's or a file's (``service.goal_names``: otherwise refused as a likely mistake).
        """
        self._register(_HeldBatch(goal_id, artifacts, review, label, source, checked_attempt(attempt), members), new_goal)

    def add_files(
        self,
        goal_id: str,
        files: Sequence[str],
        *,
        kind: str | None = None,
        label: str | None = None,
        progress: Callable[[Iterable[str]], Iterable[str]] | None = None,
        new_goal: bool = False,
        attempt: str | None = None,
    ) -> None:
        """A batch of the documents of ``files``, read and normalized (as ``kind`` when they declare none) in the transaction.

        A ``kind`` that is no artifact kind raises :class:`NotAKind` here, before anything is read.
        A document whose schema contradicts ``kind`` raises :class:`KindContradicted` once all are read; files
        holding no document make no batch. ``progress`` wraps the list of files each time it is read.
        """
        self._register(_FilesBatch(goal_id, files, checked_kind(kind), label, progress, checked_attempt(attempt)), new_goal)

    def add_events(self, goal_id: str, events: Sequence[NewEvent], *, expected_version: int | None = None, new_goal: bool = False) -> None:
        """``events`` appended to ``goal_id`` as they are, no manifest (an import's rows, a retraction); ``expected_version``:
        the version the goal must be at (else :class:`VersionConflict`)."""
        self._register(_GivenEvents(goal_id, events, expected_version), new_goal)

    def _register(self, item: _HeldBatch | _FilesBatch | _GivenEvents, new_goal: bool) -> None:
        if self.outcome is not None:
            raise LedgerError("this ingest is committed: what to write next needs an Ingest of its own")
        self._items.append(item)
        if new_goal:
            self._meant.add(item.goal_id)

    def commit(self) -> IngestOutcome:
        """Write everything added, in one transaction (see the class); the outcome says what was written."""
        if self.outcome is not None:
            raise LedgerError("this ingest is committed already")
        if self.ledger.persistent:
            empty = sorted({item.goal_id for item in self._items if isinstance(item, _HeldBatch) and not item.artifacts})
            if empty:
                raise NothingToIngest(f"no artifact to ingest into {', '.join(map(repr, empty))}; nothing was written")
        committed_before = Store.writes_committed
        try:
            self.outcome = self.ledger.writing(self._write)
        except _RolledBack as stop:
            self.outcome = stop.outcome
        except KeyboardInterrupt:
            if Store.writes_committed != committed_before:  # (it came as the write committed: what was written stays, and is said)
                self.outcome = self._written
            raise
        else:
            if self.folds is not None:
                self.folds.committed()
        return self.outcome

    def __enter__(self) -> Ingest:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None and self.outcome is None:
            self.commit().raise_if_refused()

    def _write(self, session: ChunkedAppend) -> IngestOutcome:
        """One attempt at the transaction (:meth:`Store.writing` starts over while another SQLite writer holds the lock)."""
        if self.folds is not None:
            self.folds.begin()
        if self.ledger.persistent:  # (before anything is read: a likely mistake in a goal's name refuses the write)
            refuse_unmeant_names(session.tx, [item.goal_id for item in self._items], self._meant, how_meant=NEW_GOAL_HOW)
        writer = _Writer(self, session)
        census = Census(self.skip_unknown)
        for item in self._items:
            if isinstance(item, _GivenEvents):
                given = writer.own(_Given(item.goal_id, item.expected_version, self.source))
                for new in item.events:
                    writer.event(given, new)
            elif isinstance(item, _HeldBatch):
                batch = writer.own(_Batch(item.goal_id, item.label, item.review, item.source or self.source, item.attempt))
                # (a limit of what a ledger keeps, as its guard is: a stateless review reads as many inputs as LoopX does)
                if self.ledger.guarded and len(item.artifacts) > MAX_BATCH_ARTIFACTS:
                    writer.refuse(item.label or item.goal_id, f"the batch holds {len(item.artifacts)} artifacts, more than {MAX_BATCH_ARTIFACTS}, the limit of one batch")
                    continue
                for artifact, new in zip(item.artifacts, item.members or map(member_event, item.artifacts)):
                    writer.member(batch, artifact, new, streamed=False)
                writer.close(batch, keep_empty=True)
            else:
                batch = writer.own(_Batch(item.goal_id, item.label, None, self.source, item.attempt))
                for read in read_artifacts(item.progress(item.files) if item.progress else item.files, item.kind, census):
                    if isinstance(read, Refused):
                        writer.refuse(read.source, read.reason)
                    else:
                        writer.member(batch, read, member_event(read), streamed=True)
                writer.close(batch, keep_empty=False)
        writer.flush()
        census.refuse_contradicted()
        writer.refusals = census.advised(writer.refusals)
        goal_ids = {item.goal_id for item in self._items}
        goal_id = next(iter(goal_ids)) if len(goal_ids) == 1 else None
        if writer.refusals:
            raise _RolledBack(IngestOutcome((), dry_run=self.dry_run, goal_id=goal_id, errors=tuple(writer.refusals)))
        outcome = dataclasses.replace(
            writer.outcome(self.dry_run, goal_id), skipped=tuple(census.skipped), taken_once=tuple(census.taken_once)
        )
        files = [item for item in self._items if isinstance(item, _FilesBatch)]
        if files and not outcome.batches and not outcome.events:  # (so is a dry run: it would write nothing either)
            named = self.inputs or ", ".join(file for item in files for file in item.files) or "the inputs"
            left_out = f"; --skip-unknown left out {len(census.skipped)} document(s)" if census.skipped else ""
            raise NothingToIngest(
                f"{named}: no artifact to ingest (a folder is read for *.json, *.ndjson and *.jsonl, gzipped or not, or what "
                f"--include matches{left_out}); nothing was written{_goals_untouched(session.tx, [item.goal_id for item in files])}"
            )
        if self.dry_run:
            raise _RolledBack(outcome)
        if self.materialize and writer.first_new:
            materialize_goals(session.tx, writer.first_new, writer.new_events, self.folds)
        self._written = outcome
        return outcome


def _goals_untouched(tx: Transaction, goal_ids: Sequence[str]) -> str:
    """What a write that wrote nothing says of its goals: a goal the ledger lacks "was not created"; one it holds is unchanged."""
    named = sorted(set(goal_ids))
    held = tx.heads_of(named)
    new, old = [repr(g) for g in named if g not in held], [repr(g) for g in named if g in held]
    said = ([f"goal {', '.join(new)} was not created"] if new else []) + ([f"goal {', '.join(old)} is unchanged"] if old else [])
    return "".join(f", {part}" for part in said)


class _RolledBack(Exception):
    """Raised inside the write transaction to roll it back (a dry run, a refusal) with the outcome it computed."""

    def __init__(self, outcome: IngestOutcome) -> None:
        self.outcome = outcome


@dataclass(eq=False)
class _Batch:
    """A batch being written: its members' outcomes as their chunks are appended, then its manifest's (``batch``)."""

    goal_id: str
    label: str | None
    review: Mapping[str, Any] | None
    source: str  # the label stored with its events
    attempt: str | None  # the attempt it is named into (None: the rule places it)
    members: list[MemberOutcome] = field(default_factory=list)
    read: int = 0  # members added (appended or pending)
    batch: MemberOutcome | None = None
    manifest: NewEvent | None = None
    covered: bool = False  # an earlier batch groups all its members: it has no manifest (:func:`grouped_before`) ...
    covered_by: _Batch | None = None  # ... one given its manifest in the same chunk, whose outcome it takes
    dropped: bool = False  # files that held no document: no batch


@dataclass(eq=False)
class _Given:
    """Events given as they are: their outcomes, and the version the goal must be at before the first of them."""

    goal_id: str
    expected_version: int | None
    source: str
    events: list[MemberOutcome] = field(default_factory=list)


# What waits to be appended, in order: a batch's member (with its artifact), an event given as it is (no
# artifact), or a batch's manifest slot (no event yet: it names the members by the ids they are stored under).
_Pending = tuple[_Batch | _Given, NewEvent | None, Artifact | None]
_Owner = TypeVar("_Owner", _Batch, _Given)


class _Listed(NamedTuple):
    """A member as its batch's manifest names it, and whether it is stored already (at which stream version)."""

    event_id: str
    duplicate: bool
    stream_version: int | None
    kind: str
    role: str | None


class _Writer:
    """The appends of one attempt at an :class:`Ingest` transaction, a chunk at a time.

    A batch's manifest is appended in the same statement as its last members:
    one read first says which of them are stored, and under which id
    (:meth:`_stored`). After the first refusal nothing more is appended (the
    transaction will roll back), but every later chunk is still checked by the
    store's guard, so the refusal names every problem, as if all were held.
    """

    def __init__(self, unit: Ingest, session: ChunkedAppend) -> None:
        self.unit, self.session = unit, session
        self.refusals: list[tuple[str, str]] = []
        self.first_new: dict[str, int] = {}
        # The events appended, handed to the folds (not read back) while they are one chunk: a larger write holds none.
        self.new_events: list[StoredEvent] | None = []
        self._owners: list[_Batch | _Given] = []
        self._pending: list[_Pending] = []
        self._pending_events = 0
        self._chunks = 0
        self._attempts = AttemptPlacement(session.tx)

    def own(self, owner: _Owner) -> _Owner:
        self._owners.append(owner)
        return owner

    def member(self, batch: _Batch, artifact: Artifact, new: NewEvent, *, streamed: bool) -> None:
        """A member of ``batch`` (``new``: its event); a chunk may end after it only if it was read from a file (a held batch is appended whole)."""
        batch.read += 1
        self._add((batch, new, artifact), may_end_chunk=streamed)

    def event(self, given: _Given, new: NewEvent) -> None:
        self._add((given, new, None), may_end_chunk=True)

    def close(self, batch: _Batch, *, keep_empty: bool) -> None:
        """Every member of ``batch`` is added: its manifest is next (files that held no document are no batch)."""
        if batch.read or keep_empty:
            self._add((batch, None, None), may_end_chunk=True)
        else:
            batch.dropped = True

    def refuse(self, source: str, reason: str) -> None:
        self.flush()  # (what was read before it is checked before it)
        self.refusals.append((source, reason))

    def _add(self, entry: _Pending, *, may_end_chunk: bool) -> None:
        self._pending.append(entry)
        self._pending_events += entry[1] is not None
        if may_end_chunk and self._pending_events >= self.unit.chunk_artifacts:
            self.flush()

    def flush(self) -> None:
        pending, self._pending, self._pending_events = self._pending, [], 0
        if not pending:
            return
        if self.refusals:  # (the transaction will roll back: only checked)
            for source, events in _by_source([(owner, new) for owner, new, _ in pending if new is not None]):
                self.refusals += unstorable_problems(_runs(events), source=source)
            return
        pending = self._in_attempts(pending)
        stored_as = self._manifests(pending)
        appending: list[tuple[_Batch | _Given, NewEvent]] = []
        for owner, new, _ in pending:
            if isinstance(owner, _Batch) and owner.covered:
                continue  # (every member is stored and an earlier batch groups them: nothing to append)
            if new is None:  # (a manifest's slot: the manifest is decided)
                assert isinstance(owner, _Batch) and owner.manifest is not None
                new = owner.manifest
            appending.append((owner, new))
        try:
            outcomes = [
                outcome
                for source, events in _by_source(appending)
                for outcome in self.session.append(_runs(events), source=source, receipts=self.unit.receipts)
            ]
        except UnstorableContent as refused:
            self.refusals += refused.problems
            return
        self._chunks += bool(appending)
        if self._chunks > 1:
            self.new_events = None
        appended = (a for outcome in outcomes for a in outcome)
        stored_now: dict[str, StoredEvent] = {}
        chunk_first_new: dict[str, int] = {}
        chunk_events: list[StoredEvent] = []
        for index, (owner, new, artifact) in enumerate(pending):
            if isinstance(owner, _Batch) and owner.covered:
                if artifact is not None:  # (stored already, or by an event ahead of it here: not appended again)
                    name, stored = stored_as[index]
                    owner.members.append(MemberOutcome.of(Appended(stored or stored_now[name], "duplicate"), artifact.origin, artifact.role))
                elif owner.covered_by is not None and owner.covered_by.batch is not None:
                    owner.batch = dataclasses.replace(owner.covered_by.batch, status="duplicate")
                continue
            outcome = next(appended)
            stored_now[outcome.event.event_id] = outcome.event
            if outcome.status == "appended":
                self.first_new.setdefault(outcome.event.goal_id, outcome.event.position)
                chunk_first_new.setdefault(outcome.event.goal_id, outcome.event.position)
                chunk_events.append(outcome.event)
                if self.new_events is not None:
                    self.new_events.append(outcome.event)
            if isinstance(owner, _Given):
                owner.events.append(MemberOutcome.of(outcome, new.origin if new is not None else None))
            elif artifact is None:
                owner.batch = MemberOutcome.of(outcome, None)
            else:
                owner.members.append(MemberOutcome.of(outcome, artifact.origin, artifact.role))
        if chunk_events and self.unit.materialize and self.unit.folds is not None:  # (folded while the next chunk is appended)
            self.unit.folds.appended(self.session.tx, chunk_first_new, chunk_events)

    def _in_attempts(self, pending: list[_Pending]) -> list[_Pending]:
        """``pending`` with each event as its attempt observes it (``service.attempt_identity``: the same bytes in a new attempt)."""
        placed = iter(
            self._attempts.events(
                (owner.goal_id, new, artifact is not None, owner.attempt if isinstance(owner, _Batch) else None)
                for owner, new, artifact in pending
                if new is not None
            )
        )
        return [(owner, None if new is None else next(placed), artifact) for owner, new, artifact in pending]

    def _manifests(self, pending: list[_Pending]) -> dict[int, tuple[str, StoredEvent | None]]:
        """The manifest of each batch whose slot is in ``pending`` (``manifest``), unless an earlier batch groups its members (``covered``).

        Returns, for each pending member of those batches (by index), the id
        it is stored under (an older ledger's content-only id when it holds
        the observation so: :meth:`NewEvent.earlier_id`) and the stored event, if any.
        """
        closing = {id(owner) for owner, new, _ in pending if new is None}
        if not closing:
            return {}
        found = self._stored([(owner, new) for owner, new, _ in pending if new is not None and id(owner) in closing])
        stored_as: dict[int, tuple[str, StoredEvent | None]] = {}
        ahead: set[str] = set()  # ids of the events before this one here: stored by the time it is appended
        listed: dict[int, list[_Listed]] = {}  # a closing batch's members pending here
        kept: dict[str, list[tuple[set[str], _Batch]]] = {}  # goal -> batches given a manifest here, with their members' ids
        for index, (owner, new, artifact) in enumerate(pending):
            if new is None:
                assert isinstance(owner, _Batch)
                earlier = [_Listed(m.event_id, m.status == "duplicate", m.stream_version, m.kind, m.role) for m in owner.members]
                self._decide(owner, earlier + listed.get(id(owner), []), kept)
                continue
            own = new.event_id(owner.goal_id)
            if id(owner) in closing and artifact is not None:
                name, stored = stored_as[index] = self._stored_as(new, owner.goal_id, found)
                version = stored.stream_version if stored is not None else None
                listed.setdefault(id(owner), []).append(_Listed(name, stored is not None or own in ahead, version, new.kind, artifact.role))
            ahead.add(own)
        return stored_as

    def _decide(self, batch: _Batch, members: list[_Listed], kept: dict[str, list[tuple[set[str], _Batch]]]) -> None:
        """``batch``'s manifest naming ``members``, unless a batch given one earlier here, or one stored, lists them all."""
        ids = [m.event_id for m in members]
        if ids and batch.review is None and all(m.duplicate for m in members):
            batch.covered_by = next((other for group, other in kept.get(batch.goal_id, ()) if set(ids) <= group), None)
            versions = [m.stream_version for m in members]
            if batch.covered_by is None and None not in versions:
                earlier = grouped_before(self.session.tx, batch.goal_id, ids, max(v for v in versions if v is not None))
                if earlier is not None:
                    batch.batch = MemberOutcome.of(Appended(earlier, "duplicate"), None)
            batch.covered = batch.covered_by is not None or batch.batch is not None
        if not batch.covered:
            batch.manifest = manifest_event([manifest_member(m.event_id, m.kind, m.role) for m in members], batch.review, batch.attempt)
            kept.setdefault(batch.goal_id, []).append((set(ids), batch))

    def _stored(self, members: list[tuple[_Batch | _Given, NewEvent]]) -> dict[str, StoredEvent]:
        """One read: which members are stored (of a batch that may regroup stored ones), and under which id (an older
        ledger's content-only id); made before the members' append, so that their manifest joins them in it."""
        persistent = self.unit.ledger.persistent
        wanted = []
        for batch, new in members:
            if isinstance(batch, _Batch) and batch.review is None:
                wanted.append(new.event_id(batch.goal_id))
            earlier = new.earlier_id(batch.goal_id) if persistent else None  # (a fresh in-memory ledger holds none)
            if earlier:
                wanted.append(earlier)
        return self.session.tx.events_by_id(wanted) if wanted else {}

    @staticmethod
    def _stored_as(new: NewEvent, goal_id: str, found: Mapping[str, StoredEvent]) -> tuple[str, StoredEvent | None]:
        """The id ``new`` is stored under in ``goal_id`` (as the store's duplicate check finds it) and that event, if stored."""
        own = new.event_id(goal_id)
        if own in found:
            return own, found[own]
        earlier = new.earlier_id(goal_id)
        stored = found.get(earlier) if earlier is not None else None
        if earlier is not None and stored is not None and new.same_observation(stored):
            return earlier, stored
        return own, None

    def outcome(self, dry_run: bool, goal_id: str | None) -> IngestOutcome:
        batches, events = [], []
        withdrawn: dict[str, dict[str, StoredEvent]] = {}  # (per goal: each retracted id's retraction, read once)
        for owner in self._owners:
            if isinstance(owner, _Given):
                events += owner.events
            elif not owner.dropped:
                assert owner.batch is not None
                kinds = [m.kind for m in owner.members]
                notes = (NO_RUN_NOTE,) if owner.batch.status == "appended" and claim_review_without_runs(kinds) else ()
                notes += self._stored_lifecycle_notes(owner)
                notes += self._withdrawn_notes(owner, withdrawn)
                batches.append(BatchOutcome(owner.goal_id, tuple(owner.members), owner.batch, owner.label, notes))
        added = [b.goal_id for b in batches if b.batch.status == "appended"]
        added += [o.goal_id for o in self._owners if isinstance(o, _Given) and any(e.status == "appended" for e in o.events)]
        archived = tuple(sorted(self.session.tx.archived_goals(added))) if added else ()
        return IngestOutcome(tuple(batches), tuple(events), dry_run, goal_id, archived_goals=archived)

    def _stored_lifecycle_notes(self, batch: _Batch) -> tuple[str, ...]:
        """A batch the rule placed that adds nothing but holds lifecycle records: they may be a new attempt's (a launch
        fixture has no id), which only ``--attempt`` can tell; say how."""
        stored = sorted({m.kind for m in batch.members if m.status == "duplicate" and m.kind in REOBSERVED})
        if batch.attempt is not None or not stored or any(m.status == "appended" for m in batch.members):
            return ()
        next_attempt = self._attempts.next_attempt(batch.goal_id)
        return () if next_attempt is None else (stored_lifecycle_note(stored, next_attempt),)


    def _withdrawn_notes(self, batch: _Batch, withdrawn: dict[str, dict[str, StoredEvent]]) -> tuple[str, ...]:
        """Members stored already that a retraction withdrew: sending them again brings nothing back (a retraction is
        final, docs/linking.md), which a report of "duplicate" alone left unsaid."""
        stored = [m for m in batch.members if m.status == "duplicate"]
        if not stored:
            return ()
        if batch.goal_id not in withdrawn:
            retractions = self.session.tx.read_goal(batch.goal_id, kinds=(RETRACTION_KIND,))
            withdrawn[batch.goal_id] = {event_id: r for r in retractions for event_id in retracted_by(r)}
        by = withdrawn[batch.goal_id]
        return tuple(
            withdrawn_note(m.source, m.position, by[m.event_id].position, by[m.event_id].payload.get("reason"))
            for m in stored
            if m.event_id in by
        )


def _by_source(events: list[tuple[_Batch | _Given, NewEvent]]) -> list[tuple[str, list[tuple[_Batch | _Given, NewEvent]]]]:
    """``events`` cut where their owners' source changes (an append stores one source), order kept."""
    groups: list[tuple[str, list[tuple[_Batch | _Given, NewEvent]]]] = []
    for owner, new in events:
        if not groups or groups[-1][0] != owner.source:
            groups.append((owner.source, []))
        groups[-1][1].append((owner, new))
    return groups


def _runs(events: Sequence[tuple[_Batch | _Given, NewEvent]]) -> list[StreamAppend]:
    """``events`` as appends, one per run of consecutive events of the same owner (stream order kept); a goal's expected
    version goes with the first of its events given as they are."""
    appends: list[StreamAppend] = []
    run: list[NewEvent] = []
    for index, (owner, new) in enumerate(events):
        run.append(new)
        if index + 1 == len(events) or events[index + 1][0] is not owner:
            expected = None
            if isinstance(owner, _Given):
                expected, owner.expected_version = owner.expected_version, None
            appends.append(StreamAppend(owner.goal_id, run, expected))
            run = []
    return appends


def ingest(
    ledger: Store,
    goal_id: str,
    artifacts: Sequence[Artifact],
    *,
    source: str,
    review: Mapping[str, Any] | None = None,
    dry_run: bool = False,
    materialize: bool = True,
    new_goal: bool = False,
    attempt: str | None = None,
) -> BatchOutcome:
    """Append ``artifacts`` and their batch manifest to ``goal_id`` in one transaction (one :class:`Ingest`); what the
    store's guard refuses raises :class:`UnstorableContent`, nothing written."""
    unit = Ingest(ledger, source, dry_run=dry_run, materialize=materialize)
    unit.add(goal_id, artifacts, review=review, new_goal=new_goal, attempt=attempt)
    (batch,) = unit.commit().raise_if_refused().batches
    return batch
