"""The projector: which events feed which review (benchledger's linking rules, docs/linking.md), folded.

Pure functions from a goal's events (in stream order) to the rows of its
materialized projections and to its lifecycle history. Nothing here touches a
database: the service room (ledger/service) reads the events and stores what this returns.
The rows are named in :mod:`~benchledger.projections.catalog`; a batch's
members are read through :mod:`~benchledger.projections.batch_manifest`; an
ingest resumes from the state :mod:`~benchledger.projections.checkpoint` records.

The rules follow how LoopX users chain the review commands:

* a batch's runs + comparison -> ``review-claim`` -> ``learning-ledger``
  (one row per batch that holds a comparison);
* a batch's runs -> ``review-verifier-attribution`` (one row per batch with runs);
* each run -> ``review-runner-invariants`` (default expectations) and
  ``attempt-learning-gate`` (with the learning ledger written for that attempt:
  the one of the latest batch that lists the run with a learning ledger, derived
  from the batch's comparison or ingested in it; none until such a batch);
* each adapter invocation -> ``review-adapter-kwargs`` (default flags);
* a batch ingested by a review command (``benchledger benchmark X --goal``)
  -> review X with the flags it was given (this is how ``baseline-failure-gate``
  gets the operator's gate flags);
* every event is placed in an attempt of its goal (``projections.attempts``: by
  the rule, or the attempt its batch's manifest names, :class:`_Lookahead`);
  an attempt's latest preflight / launch / post-launch / run / comparison /
  claim review / learning ledger -> its ``attempt-lifecycle-state`` (one row
  per attempt, with its ``attempt-evidence``: where that evidence is), and the
  latest attempt's -> ``lifecycle-state`` (one row, ``current``);
* the lifecycle of each event's attempt after it, and that attempt, where either differs from
  after the previous event -> ``lifecycle-step`` (one row per change, keyed by
  the event's position: what ``history`` reads);
* a ``retraction`` makes the events it names absent from its position on
  (``projections.retraction``): the goal is folded again without them.

A claim review or learning ledger can be ingested (LoopX's own
``benchmark_claim_review_v0`` / ``benchmark_learning_ledger_v0``) or derived
from a batch. The next review reads the most recent one by ledger position; a
derived one takes its batch's position (after the batch's members).

Longer than 500 lines: the linking rules are one fold over one state (the open attempt's evidence, the attempt rule,
gates waiting for a ledger, comparison batches, steps, the checkpoint); apart, each rule would reach into the others' state.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from benchledger.errors import CHECK_FAILED, BenchledgerError
from benchledger.projections import attempts, learning_ledger, lifecycle_state, retraction, review_module
from benchledger.projections.artifacts import KINDS as ARTIFACT_KINDS
from benchledger.projections.artifacts.kinds import normalize
from benchledger.projections.batch_manifest import BATCH_KIND, batch_inputs, holds_comparison
from benchledger.projections.catalog import (
    ADAPTER,
    ATTEMPT,
    ATTEMPT_EVIDENCE,
    ATTEMPT_EVIDENCE_VERSION,
    ATTEMPT_LIFECYCLE,
    ATTEMPT_LIFECYCLE_VERSION,
    BATCH_LINKS,
    BATCH_LINKS_VERSION,
    CHECKPOINT,
    CHECKPOINT_VERSION,
    CLAIM,
    COMPARISON_INDEX,
    COMPARISON_INDEX_VERSION,
    CURRENT_KEY,
    LEARNING,
    LIFECYCLE,
    LIFECYCLE_KINDS,
    RUNNER,
    STEP,
    STEP_VERSION,
    SUMMARY,
    SUMMARY_VERSION,
    VERIFIER,
    comparison_key,
    step_key,
)
from benchledger.projections.checkpoint import (
    CheckpointUnusable,
    EvidenceRef,
    checkpoint_attempts,
    checkpoint_fields,
    checkpoint_last_attempt,
    checkpoint_payload,
    evidence_payload,
)
from benchledger.projections.history import changes, lifecycle_summary

# The reviews whose rows the lifecycle reads (a batch's derived claim review and learning ledger).
LIFECYCLE_READS = frozenset({LIFECYCLE, CLAIM, LEARNING, STEP, ATTEMPT_LIFECYCLE})
# The kinds a derived review of a batch can stand for (claim review, learning ledger).
DERIVED = {"claim-review": CLAIM, "learning-ledger": LEARNING}


class EventLike(retraction.EventLike, Protocol):
    """An event of the goal, as the fold reads it (the ledger's stored events, read only): what retraction reads, and its place in the stream."""

    @property
    def stream_version(self) -> int: ...


@dataclass(frozen=True)
class ProjectionRow:
    """One materialized review: its payload, or the reducer's error when it faulted."""

    projection: str
    key: str
    version: int
    position: int
    payload: dict[str, Any] | None = None
    error: str | None = None

    @property
    def status(self) -> str:
        return "faulted" if self.error is not None else "ok"


class ProjectionFault(BenchledgerError):
    """A reducer raised on the goal's events (the events are kept out: a check said no)."""

    exit_code = CHECK_FAILED

    def __init__(self, projection: str, key: str, position: int, cause: BaseException) -> None:
        super().__init__(f"projection {projection} ({key}) failed at position {position}: {type(cause).__name__}: {cause}")
        self.projection, self.key, self.position = projection, key, position


@functools.cache
def _default_options(name: str) -> tuple[tuple[str, Any], ...]:
    return tuple(review_module(name).DEFAULT_OPTIONS.items())


def default_options(name: str) -> dict[str, Any]:
    return dict(_default_options(name))


def _once(compute: Callable[[], Any]) -> Callable[[], Any]:
    """``compute`` evaluated on first use only."""
    result: list[Any] = []

    def value() -> Any:
        if not result:
            result.append(compute())
        return result[0]

    return value


class EarlierEvents(Protocol):
    """A goal's events before those a fold holds, read on demand (the application reads them from the store)."""

    def by_id(self, event_ids: Iterable[str]) -> Mapping[str, EventLike]:
        """Those of ``event_ids`` that are events of the goal."""
        ...

    def latest_comparison_batch(self, comparison_id: str, before: int) -> EventLike | None:
        """The goal's latest batch before position ``before`` that lists a comparison named ``comparison_id`` (its ``comparison-batch`` row)."""
        ...

    def before(self, position: int) -> Iterable[EventLike]:
        """The goal's events before ``position``, in stream order (what a retraction folds again)."""
        ...

    def attempt_evidence(self, attempt: str) -> Mapping[str, EvidenceRef] | None:
        """Where the goal's attempt ``attempt`` holds its newest evidence of each kind (its ``attempt-evidence`` row), if it was opened."""
        ...


class RowSink(Protocol):
    """Where a fold that does not hold its rows (replay, audit) hands them over, a few at a time."""

    def rows(self, rows: Mapping[tuple[str, str], ProjectionRow]) -> None:
        """The rows made since the last call; a row whose key was handed over before replaces that one."""
        ...

    def withdrawn(self) -> None:
        """Every row handed over so far, lifecycle steps excepted, no longer exists (a retraction): those the fold still makes are handed over again."""
        ...


# With ``earlier``: events a projector keeps by id (two generations of this many), and rows it holds before handing them to its sink.
RECENT_EVENTS = 1000
ROWS_PER_HANDOVER = 2000


class _Lookahead:
    """Events held back until it is known which attempt they join: the events a batch appends come just before its
    manifest, and a manifest that names an attempt (``ingest --attempt``) places them in it.

    An artifact is held until the next event that is no artifact: a manifest releases the held events, those it
    lists (and itself) in the attempt it names, the others where the rule places them; any other event releases
    them all to the rule. At most :data:`LOOKAHEAD` are held (a batch appends no more members than that).
    """

    def __init__(self) -> None:
        self.held: list[EventLike] = []

    def push(self, event: EventLike) -> list[tuple[EventLike, str | None]]:
        """The events (with the attempt named for each, if any) that ``event`` releases, in stream order."""
        if event.kind in ARTIFACT_KINDS:
            self.held.append(event)
            return [(self.held.pop(0), None)] if len(self.held) > LOOKAHEAD else []
        named = attempts.named_attempt(event.payload) if event.kind == BATCH_KIND else None
        listed = {m.get("event_id") for m in event.payload.get("members", ()) if isinstance(m, dict)} if named is not None else set()
        released = [(held, named if held.event_id in listed else None) for held in self.held]
        self.held = []
        return [*released, (event, named)]

    def drain(self) -> list[tuple[EventLike, str | None]]:
        """Every event held, placed by the rule (no manifest followed them)."""
        released: list[tuple[EventLike, str | None]] = [(event, None) for event in self.held]
        self.held = []
        return released


# The most events :class:`_Lookahead` holds: a batch's members (ledger/service/intake: 5,000 at most) and a few more.
LOOKAHEAD = 5000


@dataclass(frozen=True)
class Evidence:
    """The newest evidence of one lifecycle kind: where it is (an event, or the batch it is derived from), its payload,
    and what a lifecycle step's summary reads of it (``lifecycle_state.summary_read``; both worked out on first use)."""

    stream_version: int
    ref: tuple[str, str]  # ("event_id" | "batch_id", id)
    payload: Callable[[], Any]
    summary_read: Callable[[], Any]


class GoalProjector:
    """Folds a goal's events, in stream order, into its projections and lifecycle history.

    ``strict`` makes a raising reducer raise :class:`ProjectionFault` (ingest);
    otherwise the row is kept as faulted (replay, audit), so a broken view is
    never silently empty.

    An ingest folds only its new events: :meth:`resume` restores the fold
    state from the goal's ``projector-checkpoint`` row, and ``lookup`` fetches
    the few earlier events the new ones read (a re-listed member of a new
    batch, the newest evidence of a lifecycle kind) by id. :attr:`rows` then
    holds just the rows the new events create or change, plus the new
    checkpoint. Replay and audit fold every event through the same code.

    ``emit_from`` is the fallback when no checkpoint can be resumed from: all
    events are folded, those before ``emit_from`` only to rebuild the state
    the new events read (lazily), and rows are produced for the new ones only.

    After every event the lifecycle is compared with the lifecycle after the
    previous event; where it differs a ``lifecycle-step`` row records it (its
    summary and what changed, or the reducer's error). The first emitted
    event of an ingest compares with the lifecycle before it, reduced once.
    A step needs only the lifecycle's summary (``lifecycle_state.step_summary``,
    worked out again only when an input changed); the whole state is reduced
    for the rows of an attempt and the current row, once each.
    ``lifecycle_only`` (``history`` of a goal stored before step rows existed)
    reduces only what the steps need.

    A projector given ``earlier`` holds no more of the goal than the linking
    rules still read: the last :data:`RECENT_EVENTS` or so events by id (a
    batch's members are mostly the events just before it; older ones are
    read again by id), and with a ``sink`` (replay, audit) not its rows either:
    they are handed over every :data:`ROWS_PER_HANDOVER` rows, so a fold of
    any goal from its first event takes bounded memory.

    A retraction folds the goal's earlier events again without what it
    retracts (retractions are rare); their lifecycle steps stay (they are
    history). A new retraction (at or after ``emit_from``) changes rows of
    earlier events, so from it on everything is emitted (:attr:`emits_all`)
    and the caller replaces the goal's stored rows, its steps excepted. That
    needs every earlier event: an ingest that appends a retraction does not
    resume from the checkpoint, it folds the goal whole.
    """

    def __init__(
        self,
        *,
        strict: bool,
        emit_from: int = 0,
        lifecycle_only: bool = False,
        earlier: EarlierEvents | None = None,
        sink: RowSink | None = None,
    ) -> None:
        self.strict = strict
        self.emit_from = emit_from
        self.lifecycle_only = lifecycle_only
        # The lifecycle after the previous event, (summary, error, attempt); None before the first step is known.
        self._step: tuple[dict[str, Any] | None, str | None, str | None] | None = None
        # The last lifecycle that did not fault: what a step's changes are measured against.
        self._step_baseline: dict[str, Any] | None = None
        self.rows: dict[tuple[str, str], ProjectionRow] = {}
        self._sink = sink
        # The events folded by id: all of them, or (with ``earlier``) the most recent ones, in two generations.
        self._by_id: dict[str, EventLike] = {}
        self._older: dict[str, EventLike] = {}
        self._earlier = earlier
        # Whether this fold began at the goal's first event (so it saw every batch), not at a checkpoint.
        self._from_first = True
        # comparison_id -> the id of the latest batch of this fold that lists a comparison so named
        self._comparison_batches: dict[str, str] = {}
        # Where the attempt rule stands, and the position of the context's last event folded here (None: none yet).
        self._attempts = attempts.Attempts()
        self._attempt_last_position: int | None = None
        # The attempt whose evidence ``_latest`` holds (the open one, but while a batch named into an earlier one is
        # folded: then the open attempt's evidence and last position wait in ``_open_aside``).
        self._context: str | None = None
        self._open_aside: tuple[dict[str, Evidence], int | None] | None = None
        # Where the evidence of each attempt left in this fold is (what a batch named into it later adds to).
        self._closed_refs: dict[str, dict[str, EvidenceRef]] = {}
        self._lookahead = _Lookahead()
        # The attempt of the last event folded when :meth:`finish` left it for the open one (what the checkpoint records).
        self._last_context: str | None = None
        # kind -> the context attempt's newest evidence of that kind
        self._latest: dict[str, Evidence] = {}
        self._lifecycle_inputs_version = 0
        # (inputs version, lifecycle state or its summary, the reducer's error) as of the last reduce of each
        self._lifecycle_cache: tuple[int, dict[str, Any] | None, str | None] | None = None
        self._summary_cache: tuple[int, dict[str, Any] | None, str | None] | None = None
        self._inputs_cache: tuple[int, dict[str, list[Any]]] | None = None
        # Ids of the runs of this fold no batch has yet linked to a learning ledger: gated without one at the end.
        self._ungated: dict[str, None] = {}
        self._retracted: set[str] = set()
        # The stream version of the goal's last event folded or resumed from, and the position of the last folded.
        self.last_version = 0
        self._last_position: int | None = None
        self.event_count = 0
        # Every event folded, kept for a retraction to fold them again, unless ``earlier`` can read them again.
        self.events: list[EventLike] = []

    @property
    def emits_all(self) -> bool:
        """Whether :attr:`rows` holds every row of the goal but lifecycle steps: other stored rows no longer exist."""
        return self.emit_from == 0

    @classmethod
    def resume(cls, checkpoint: Any, *, strict: bool, earlier: EarlierEvents) -> GoalProjector:
        """A projector in the state ``checkpoint`` (a ``projector-checkpoint`` payload) records.

        Raises :class:`CheckpointUnusable` unless the checkpoint is of this
        code's versions, well formed, and every event it names is in the goal
        where it says (a checkpoint is never trusted to be right; one that
        cannot be read is simply not used).
        """
        projector = cls(strict=strict, earlier=earlier)
        projector._from_first = False
        stream_version, latest, projector._retracted = checkpoint_fields(checkpoint)
        projector._attempts = checkpoint_attempts(checkpoint)
        projector._context = projector._attempts.open
        projector._restore(latest, stream_version)
        projector.last_version = stream_version
        projector._reenter(checkpoint_last_attempt(checkpoint))
        return projector

    def _reenter(self, last: str | None) -> None:
        """Back in the context of the goal's last event, an earlier attempt a batch named (``last``), as the fold was before
        :meth:`finish` left it: the next event's lifecycle step compares with that attempt's, as a fold from the first event does."""
        if last is not None and last != self._attempts.open and last != self._context:
            self._enter_earlier(last)

    def _restore(self, latest: Mapping[str, EvidenceRef], upto_version: int) -> None:
        """Remember the evidence ``latest`` names (a checkpoint's, an attempt's), each checked to be what it says, or :class:`CheckpointUnusable`."""
        found = self._events_by_id([ref[1] for _, ref in latest.values()], before=self._last_position or 0, any_position=True)
        for kind, (at, (field, ref_id)) in latest.items():
            event = found.get(ref_id)
            if event is None or event.stream_version != at or at > upto_version:
                raise CheckpointUnusable(f"{kind}: event {ref_id} is not the goal's event {at}")
            if field == "event_id" and event.kind == kind:
                self._remember_event(kind, event)
            elif field == "batch_id" and kind in DERIVED and event.kind == BATCH_KIND and holds_comparison(event.payload):
                self._remember_derived(kind, event)
            else:
                raise CheckpointUnusable(f"{kind}: event {ref_id} is not a {kind} or a batch that derives one")

    def continued(self, earlier: EarlierEvents | None) -> GoalProjector:
        """This projector, after :meth:`finish`, in the state :meth:`resume` from the checkpoint it made would give.

        What a resumed projector holds of the past is its fold state (evidence,
        the lifecycle, comparison batches, retracted ids); its rows are stored
        already and the events it held are read again through ``earlier`` when
        a new one names them, so both go (``earlier`` is ``None`` while the
        projector waits between transactions: it reads nothing then). The step
        before the next event is taken again from the lifecycle, as a resumed
        fold takes it (the last non-faulted one is a fold's own, not the checkpoint's).
        """
        self.rows, self.events, self._by_id, self._older = {}, [], {}, {}
        self._attempt_last_position = None
        self._earlier = earlier
        self._step = None
        if earlier is not None:  # (reads that attempt's evidence: only once there is something to read it from)
            self._reenter(self._last_context)
        return self

    def fold_new(self, events: Sequence[EventLike]) -> GoalProjector:
        """Fold the goal's events after the checkpoint this projector resumed from: every one is new, none before is folded."""
        if events:
            self.emit_from = events[0].position  # (so never :attr:`emits_all`: the earlier rows stay)
        return self.fold(events)

    # -- folding -------------------------------------------------------------

    def fold(self, events: Sequence[EventLike]) -> GoalProjector:
        for event in events:
            self.apply(event)
        self.finish()
        return self

    def apply(self, event: EventLike) -> None:
        """Fold ``event`` (or hold it until its attempt is known: :class:`_Lookahead`)."""
        for released, named in self._lookahead.push(event):
            self._apply(released, named)

    def _apply(self, event: EventLike, named: str | None) -> None:
        emitting = event.position >= self.emit_from
        if emitting and self._step is None and self.last_version:
            # The first event this fold emits for: the lifecycle before it (folded, or resumed
            # from the checkpoint) is what its step compares with.
            previous = self._last_position if self._last_position is not None else event.position
            self._step = self._lifecycle_step_state(previous)
            self._step_baseline = self._step[0]
        if self._earlier is None:
            self.events.append(event)
        self._hold(event)
        self.event_count += 1
        self.last_version, self._last_position = event.stream_version, event.position
        retracted = retraction.retracted_by(event)
        if retracted:
            self._retract(event, retracted)
        self._place(event, named)
        if event.kind != retraction.KIND and event.event_id not in self._retracted:
            self._project(event, emitting)
        if emitting:
            self._record_step(event.position)
        self._hand_over()

    def _hold(self, event: EventLike) -> None:
        self._by_id[event.event_id] = event
        if self._earlier is not None and len(self._by_id) >= RECENT_EVENTS:
            self._older, self._by_id = self._by_id, {}

    def _events_by_id(self, event_ids: Sequence[str], before: int, *, any_position: bool = False) -> dict[str, EventLike]:
        """Those of ``event_ids`` that are events of the goal folded here, or (read again) before position ``before``
        (``any_position``: wherever they are, as a stored reference names them)."""
        found = {}
        for i in event_ids:
            event = self._by_id.get(i) or self._older.get(i)
            if event is not None:
                found[i] = event
        unseen = [i for i in event_ids if i not in found]
        if unseen and self._earlier is not None:
            found.update((i, e) for i, e in self._earlier.by_id(unseen).items() if any_position or e.position < before)
        return found

    def _hand_over(self, *, everything: bool = False) -> None:
        """Hand the rows made so far to the sink, if any, once there are many (``everything``: at the end)."""
        if self._sink is not None and self.rows and (everything or len(self.rows) >= ROWS_PER_HANDOVER):
            self._sink.rows(self.rows)
            self.rows = {}

    def _retract(self, event: EventLike, event_ids: list[str]) -> None:
        """Fold the events before ``event`` again, without the ones retracted by it or earlier."""
        self._retracted.update(event_ids)
        if event.position >= self.emit_from:
            self.emit_from = 0
        self.rows = {key: row for key, row in self.rows.items() if key[0] == STEP}
        if self._sink is not None:
            self._sink.withdrawn()
        self._latest, self._ungated, self._comparison_batches = {}, {}, {}
        self._attempts, self._attempt_last_position = attempts.Attempts(), None
        self._context, self._open_aside, self._closed_refs = None, None, {}
        self._lifecycle_inputs_version += 1
        lookahead = _Lookahead()
        for earlier in self.events[:-1] if self._earlier is None else self._earlier.before(event.position):
            if self._earlier is not None:
                self._hold(earlier)
            for released, named in lookahead.push(earlier):
                self._refold(released, named)
        for released, named in lookahead.drain():
            self._refold(released, named)

    def _refold(self, event: EventLike, named: str | None) -> None:
        """Fold an event before a retraction again (without the retracted ones)."""
        self._place(event, named)
        if event.kind != retraction.KIND and event.event_id not in self._retracted:
            self._project(event, event.position >= self.emit_from)
            self._hand_over()

    def _place(self, event: EventLike, named: str | None = None) -> None:
        """Place ``event`` in its attempt, ``named`` or the rule's (retracted or not: an attempt is part of the event's place in the ledger).

        An event that opens the next attempt closes the open one, whose
        lifecycle is then final (its row written), and starts from no evidence.
        An event named into an earlier attempt is folded with that attempt's
        evidence (its rows written once the fold leaves it); the open attempt's waits.
        """
        opened = self._attempts.open
        if named is None:
            self._attempts = attempts.place(self._attempts, event.kind)
        else:
            self._attempts = attempts.place_named(self._attempts, event.kind, named)
        target = named if named is not None else self._attempts.open
        if target != self._context:
            self._leave_earlier()
        if self._attempts.open != opened:
            if opened is not None:
                self._record_attempt(opened)
            self._latest = {}
            self._lifecycle_inputs_version += 1
            self._context = self._attempts.open
        elif target is not None and target != self._context:
            self._enter_earlier(target)
        self._attempt_last_position = event.position

    def _enter_earlier(self, attempt: str) -> None:
        """Fold with ``attempt``'s evidence (an attempt before the open one, named by a batch) until :meth:`_leave_earlier`."""
        self._open_aside = (self._latest, self._attempt_last_position)
        self._latest, self._attempt_last_position, self._context = {}, None, attempt
        self._lifecycle_inputs_version += 1
        refs = self._closed_refs.get(attempt)
        if refs is None and not self._from_first and self._earlier is not None:
            # (a fold resumed from a checkpoint has not seen the earlier attempts: their attempt-evidence rows name their evidence)
            refs = dict(self._earlier.attempt_evidence(attempt) or {})
        self._restore(refs or {}, self.last_version)

    def _leave_earlier(self) -> None:
        """Back to the open attempt's evidence, once the events named into an earlier attempt are folded (its rows written)."""
        if self._open_aside is None:
            return
        assert self._context is not None
        self._record_attempt(self._context)
        (self._latest, self._attempt_last_position), self._open_aside = self._open_aside, None
        self._context = self._attempts.open
        self._lifecycle_inputs_version += 1

    def _project(self, event: EventLike, emitting: bool) -> None:
        """What one piece of evidence (not retracted) adds to the goal's projections."""
        if event.kind == BATCH_KIND:
            self._apply_batch(event, emitting)
        else:
            if event.kind in LIFECYCLE_KINDS:
                self._remember_event(event.kind, event)
            if event.kind == "run" and emitting:
                self._ungated[event.event_id] = None
                self._reduce(RUNNER, event.event_id, event.position, {"run": [event.payload]}, default_options(RUNNER))
            elif event.kind == "adapter-invocation" and emitting:
                self._reduce(ADAPTER, event.event_id, event.position, {"adapter-invocation": [event.payload]}, default_options(ADAPTER))

    def finish(self) -> None:
        """The rows that depend on the whole fold: gates of unlinked runs, the current lifecycle, the summary, the checkpoint.

        A run that no batch of this fold linked to a learning ledger is gated
        without one, at its own position (a later batch that links it gates it
        again). The lifecycle is reduced once, for the goal's last event,
        whenever that event is new.
        """
        for released, named in self._lookahead.drain():
            self._apply(released, named)
        self._last_context = self._context
        self._leave_earlier()
        ungated = list(self._ungated)
        for start in range(0, len(ungated), RECENT_EVENTS):
            ids = ungated[start : start + RECENT_EVENTS]
            runs = self._events_by_id(ids, before=(self._last_position or 0) + 1)
            for run in map(runs.__getitem__, ids):
                self._reduce(ATTEMPT, run.event_id, run.position, {"run": [run.payload]}, default_options(ATTEMPT))
            self._hand_over()
        self._ungated.clear()
        if self._last_position is not None and self._last_position >= self.emit_from:
            self._record_current(self._last_position)
        self._hand_over(everything=True)

    def _members(self, batch: EventLike) -> tuple[dict[str, EventLike], list[str]]:
        """A batch's member events by id that are not retracted (earlier events of the goal), and the ids it lists that the goal does not hold."""
        ids = list(dict.fromkeys(m["event_id"] for m in batch.payload["members"]))
        members = self._events_by_id(ids, batch.position)
        return {i: e for i, e in members.items() if i not in self._retracted}, [i for i in ids if i not in members]

    def _unretracted(self, manifest: Mapping[str, Any]) -> Mapping[str, Any]:
        """``manifest`` without its retracted members (a retracted member is no input of the batch's reviews)."""
        kept = [m for m in manifest["members"] if m["event_id"] not in self._retracted]
        return manifest if len(kept) == len(manifest["members"]) else {**manifest, "members": kept}

    def _apply_batch(self, batch: EventLike, emitting: bool) -> None:
        manifest = batch.payload
        members, missing = self._members(batch)
        if missing:
            # Only a damaged ledger lists members the goal does not hold: the
            # batch's reviews cannot be computed, and that must show, not crash.
            cause = LookupError(f"batch lists events this goal does not hold: {', '.join(missing)}")
            if self.strict:
                raise ProjectionFault(BATCH_LINKS, batch.event_id, batch.position, cause)
            self.rows[(BATCH_LINKS, batch.event_id)] = ProjectionRow(
                BATCH_LINKS, batch.event_id, BATCH_LINKS_VERSION, batch.position, error=f"{type(cause).__name__}: {cause}"
            )
            return
        manifest = self._unretracted(manifest)
        if manifest is not batch.payload and not manifest["members"]:
            return  # every member retracted: the batch has no input left
        has_comparison = holds_comparison(manifest)
        for event in members.values():
            name = _comparison_id(event) if event.kind == "comparison" else None
            if name is not None:
                self._comparison_batches[name] = batch.event_id
                if emitting:
                    key = comparison_key(name)
                    payload = {"comparison_id": name, "batch_id": batch.event_id}
                    self.rows[(COMPARISON_INDEX, key)] = ProjectionRow(COMPARISON_INDEX, key, COMPARISON_INDEX_VERSION, batch.position, payload=payload)
        if not emitting:
            # Already projected: only what later reviews may read of it, computed if they do.
            if has_comparison:
                for kind in DERIVED:
                    self._remember_derived(kind, batch, members)
            return
        inputs = batch_inputs(manifest, members)
        ledger = None
        if has_comparison:
            claim = self._reduce(CLAIM, batch.event_id, batch.position, inputs, default_options(CLAIM))
            # (the learning ledger starts from the claim review of the same comparison and runs: this one, handed over)
            reduce_learning = functools.partial(learning_ledger.reduce, claim=claim)
            learning = self._reduce(LEARNING, batch.event_id, batch.position, inputs, default_options(LEARNING), reduce_learning)
            for kind, derived in (("claim-review", claim), ("learning-ledger", learning)):
                if derived is not None:
                    normalized = self._remember_reduced(kind, batch, derived)
                    ledger = normalized if kind == "learning-ledger" else ledger
        if "run" in inputs:
            self._reduce(VERIFIER, batch.event_id, batch.position, inputs, default_options(VERIFIER))
        self._link_gates(batch, members, ledger)
        recorded = manifest.get("review")
        if recorded:
            options = {**default_options(recorded["command"]), **recorded.get("options", {})}
            self._reduce(recorded["command"], batch.event_id, batch.position, inputs, options)

    def _link_gates(self, batch: EventLike, members: Mapping[str, EventLike], derived_ledger: Any) -> None:
        """Gate runs against the learning ledgers this batch brings; a batch without one leaves every gate as it is.

        A learning ledger ingested in the batch that names a comparison gates
        the runs of the latest batch that listed a comparison so named. Then the
        batch's own runs are gated against the ledger written for them: the
        one derived from the batch's comparison, else the newest ingested in it.
        """
        ingested = sorted((e for e in members.values() if e.kind == "learning-ledger"), key=lambda e: e.position)
        for ledger_event in ingested:
            target = self._comparison_batch(_comparison_id(ledger_event), batch.position)
            if target is not None:
                self._gate(target[1], ledger_event.payload, batch.position)
        ledger = derived_ledger if derived_ledger is not None else (ingested[-1].payload if ingested else None)
        if ledger is not None:
            self._gate(members, ledger, batch.position)

    def _comparison_batch(self, comparison_id: str | None, before: int) -> tuple[EventLike, Mapping[str, EventLike]] | None:
        """The latest batch before ``before`` that listed a comparison named ``comparison_id``, with its members."""
        if comparison_id is None:
            return None
        batch_id = self._comparison_batches.get(comparison_id)
        if batch_id is not None:
            batch = self._events_by_id([batch_id], before).get(batch_id)
        elif not self._from_first and self._earlier is not None:
            # (a fold resumed from a checkpoint has not seen the goal's earlier batches: its comparison-batch row names it)
            batch = self._earlier.latest_comparison_batch(comparison_id, before)
        else:
            batch = None
        if batch is None:
            return None
        members, missing = self._members(batch)
        if not missing and not any(e.kind == "comparison" and _comparison_id(e) == comparison_id for e in members.values()):
            # (only a stored comparison-batch row that is not what the events say points there)
            raise CheckpointUnusable(f"batch {batch.event_id} lists no comparison {comparison_id!r}")
        return None if missing else (batch, members)

    def _gate(self, members: Mapping[str, EventLike], ledger: Any, position: int) -> None:
        """The attempt gate of each run among ``members``, against ``ledger``, as of ``position``."""
        for event in members.values():
            if event.kind == "run":
                self._ungated.pop(event.event_id, None)
                inputs = {"run": [event.payload], "learning-ledger": [ledger]}
                self._reduce(ATTEMPT, event.event_id, position, inputs, default_options(ATTEMPT))

    def _remember_event(self, kind: str, event: EventLike) -> None:
        """Remember ``event`` as the newest evidence of ``kind``."""
        self._remember(kind, event, ("event_id", event.event_id), lambda: event.payload)

    def _remember_reduced(self, kind: str, batch: EventLike, review: dict[str, Any]) -> Any:
        """Remember ``review`` (of ``kind``), just derived from ``batch``, as the next reviews read it, and return that.

        They read it as LoopX users feed them: as a file of that kind, i.e.
        through the same normalizer an ingest applies.
        """
        normalized = normalize(kind, review)
        self._remember(kind, batch, ("batch_id", batch.event_id), lambda: normalized)
        return normalized

    def _remember_derived(self, kind: str, batch: EventLike, members: Mapping[str, EventLike] | None = None) -> None:
        """Remember the review ``kind`` derived from an already projected ``batch``, computed if something reads it."""
        name = DERIVED[kind]

        def derived() -> Any:
            held = members if members is not None else self._members(batch)[0]
            return normalize(kind, self._derive(name, batch, batch_inputs(self._unretracted(batch.payload), held)))

        self._remember(kind, batch, ("batch_id", batch.event_id), derived)

    def _derive(self, name: str, batch: EventLike, inputs: Mapping[str, list[Any]]) -> dict[str, Any]:
        """A review of an already projected batch (only strict ingests fold those; a failure is a fault)."""
        try:
            return review_module(name).reduce(inputs, default_options(name))
        except Exception as exc:
            raise ProjectionFault(name, batch.event_id, batch.position, exc) from exc

    def _remember(self, kind: str, event: EventLike, ref: tuple[str, str], payload: Callable[[], Any]) -> None:
        # Events arrive in stream order, so the newest is simply the last remembered.
        held = _once(payload)
        self._latest[kind] = Evidence(event.stream_version, ref, held, _once(lambda: lifecycle_state.summary_read(kind, held())))
        self._lifecycle_inputs_version += 1

    def _latest_payload(self, kind: str) -> Any:
        entry = self._latest.get(kind)
        return entry.payload() if entry else None

    def lifecycle_inputs(self) -> dict[str, list[Any]]:
        """The lifecycle reducer's inputs: the context attempt's newest evidence of each kind (built once per change of it)."""
        cached = self._inputs_cache
        if cached is None or cached[0] != self._lifecycle_inputs_version:
            # (``_latest`` holds lifecycle kinds only, and the reducer reads its inputs by kind, in no order)
            self._inputs_cache = cached = (self._lifecycle_inputs_version, {kind: [evidence.payload()] for kind, evidence in self._latest.items()})
        return cached[1]

    def _lifecycle_state(self, position: int) -> tuple[dict[str, Any] | None, str | None]:
        """The lifecycle state now (for the rows of an attempt: once per attempt); reduced again only when one of its inputs changed.

        Its ``lifecycle-state`` row is written by :meth:`_record_current` alone: made here, it would only be replaced.
        """
        cached = self._lifecycle_cache
        if cached is None or cached[0] != self._lifecycle_inputs_version:
            state, error = self._lifecycle_reduced(lifecycle_state.reduce, position, default_options(LIFECYCLE))
            self._lifecycle_cache = cached = (self._lifecycle_inputs_version, state, error)
        return cached[1], cached[2]

    def _lifecycle_reduced(self, reduce: Callable[..., dict[str, Any]], position: int, *options: Mapping[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
        """``reduce`` (the lifecycle reducer, or its step summary) of the lifecycle inputs, or the error it raised (a fault when strict)."""
        try:
            return reduce(self.lifecycle_inputs(), *options), None
        except Exception as exc:  # a reducer bug must not leave a silently empty view
            if self.strict:
                raise ProjectionFault(LIFECYCLE, CURRENT_KEY, position, exc) from exc
            return None, f"{type(exc).__name__}: {exc}"

    def _lifecycle_step_state(self, position: int) -> tuple[dict[str, Any] | None, str | None, str | None]:
        """The summary of the lifecycle now (what a step records), its error, and its attempt; summed up again only when an input changed.

        After almost every event one input changes, and a step needs only the summary: the whole state is not made for it.
        """
        version = self._lifecycle_inputs_version
        cached = self._summary_cache
        if cached is None or cached[0] != version:
            full = self._lifecycle_cache
            if full is not None and full[0] == version:
                summary, error = (None if full[2] is not None else lifecycle_summary(full[1])), full[2]
            else:
                key = self._summary_key()
                summary, error = (lifecycle_state.held_summary(key) if key is not None else None), None
                if summary is None:  # (not met yet, or odd evidence: from the inputs, raising as the reducer raises)
                    summary, error = self._lifecycle_reduced(lifecycle_state.step_summary, position)
            self._summary_cache = cached = (version, summary, error)
        return cached[1], cached[2], self._context

    def _summary_key(self) -> tuple[Any, ...] | None:
        """``lifecycle_state.summary_key`` of the lifecycle inputs, made of what each piece of evidence held gives (read once
        per payload: an event changes one kind), without building the inputs; ``None`` when a read raises (odd evidence)."""
        latest = self._latest
        try:
            return tuple([latest[kind].summary_read() if kind in latest else _NO_SUMMARY_READ[kind] for kind in lifecycle_state.SUMMARY_KINDS])
        except Exception:
            return None

    def _record_step(self, position: int) -> None:
        """A ``lifecycle-step`` row for the event at ``position`` when the lifecycle after it differs from before it."""
        step = self._lifecycle_step_state(position)
        if step == self._step:
            return
        self._step = step
        summary, error, attempt = step
        key = step_key(position)
        if summary is None:  # the lifecycle reducer raised: the step is its error
            self.rows[(STEP, key)] = ProjectionRow(STEP, key, STEP_VERSION, position, error=error)
            return
        payload = {**summary, **changes(self._step_baseline, summary), "attempt": attempt}
        self.rows[(STEP, key)] = ProjectionRow(STEP, key, STEP_VERSION, position, payload=payload)
        self._step_baseline = summary

    def _record_attempt(self, attempt: str) -> None:
        """The ``attempt-lifecycle-state`` and ``attempt-evidence`` rows of the context ``attempt``, as of its last event, when that event is new here."""
        if attempt != self._attempts.open:
            self._closed_refs[attempt] = self._evidence_refs()
        position = self._attempt_last_position
        if position is None or position < self.emit_from:
            return  # (stored already: nothing of it was folded here)
        state, error = self._lifecycle_state(position)
        self.rows[(ATTEMPT_LIFECYCLE, attempt)] = ProjectionRow(ATTEMPT_LIFECYCLE, attempt, ATTEMPT_LIFECYCLE_VERSION, position, payload=state, error=error)
        evidence = {"latest": evidence_payload(self._evidence_refs())}
        self.rows[(ATTEMPT_EVIDENCE, attempt)] = ProjectionRow(ATTEMPT_EVIDENCE, attempt, ATTEMPT_EVIDENCE_VERSION, position, payload=evidence)

    def _record_current(self, position: int) -> None:
        """The goal's current lifecycle, summary and checkpoint rows, as of the event at ``position``."""
        state, error = self._lifecycle_state(position)
        version = review_module(LIFECYCLE).VERSION
        self.rows[(LIFECYCLE, CURRENT_KEY)] = ProjectionRow(LIFECYCLE, CURRENT_KEY, version, position, payload=state, error=error)
        self.rows[(SUMMARY, CURRENT_KEY)] = ProjectionRow(SUMMARY, CURRENT_KEY, SUMMARY_VERSION, position, payload=self._goal_summary())
        if self._attempts.open is not None:
            self._record_attempt(self._attempts.open)
        self.rows[(CHECKPOINT, CURRENT_KEY)] = ProjectionRow(CHECKPOINT, CURRENT_KEY, CHECKPOINT_VERSION, position, payload=self.checkpoint())

    def _evidence_refs(self) -> dict[str, EvidenceRef]:
        """Where the context attempt's newest evidence of each kind is."""
        return {kind: (evidence.stream_version, evidence.ref) for kind, evidence in self._latest.items()}

    def checkpoint(self) -> dict[str, Any]:
        """The fold state after the last event: what :meth:`resume` continues from (evidence by id, never copied)."""
        last = self._last_context if self._last_context != self._attempts.open else None
        return checkpoint_payload(self.last_version, self._evidence_refs(), self._retracted, self._attempts, last)

    def _goal_summary(self) -> dict[str, Any]:
        """What ``benchledger goals`` lists: the latest attempt, its latest claim strength and learning status, by the rules above."""
        claim = self._latest_payload("claim-review")
        ledger = self._latest_payload("learning-ledger")
        strength = None
        if isinstance(claim, dict):
            decision = claim.get("decision")
            strength = decision.get("claim_strength") if isinstance(decision, dict) else None
            strength = strength or claim.get("claim_strength")
        return {
            "attempt": self._attempts.open,
            "attempts": self._attempts.count,
            "claim_strength": strength,
            "learning_status": ledger.get("learning_status") if isinstance(ledger, dict) else None,
        }

    def _reduce(
        self,
        name: str,
        key: str,
        position: int,
        inputs: Mapping[str, list[Any]],
        options: Mapping[str, Any],
        reduce: Callable[[Mapping[str, list[Any]], Mapping[str, Any]], dict[str, Any]] | None = None,
    ) -> dict[str, Any] | None:
        """The row of review ``name`` of ``inputs``, by its reducer or ``reduce`` (the same reducer given what the fold holds already)."""
        if self.lifecycle_only and name not in LIFECYCLE_READS:
            return None
        module = review_module(name)
        try:
            payload = (module.reduce if reduce is None else reduce)(inputs, options)
        except Exception as exc:  # a reducer bug must not leave a silently empty view
            if self.strict:
                raise ProjectionFault(name, key, position, exc) from exc
            self.rows[(name, key)] = ProjectionRow(name, key, module.VERSION, position, error=f"{type(exc).__name__}: {exc}")
            return None
        self.rows[(name, key)] = ProjectionRow(name, key, module.VERSION, position, payload=payload)
        return payload


# What a step's summary reads of a kind of evidence the context attempt does not hold.
_NO_SUMMARY_READ = {kind: lifecycle_state.summary_read(kind, None) for kind in lifecycle_state.SUMMARY_KINDS}


def _comparison_id(event: EventLike) -> str | None:
    """The comparison a comparison or learning ledger names (``comparison_id``), if it names one."""
    payload = event.payload
    name = payload.get("comparison_id") if isinstance(payload, dict) else None
    return name if isinstance(name, str) and name else None


def project_goal(events: Sequence[EventLike], *, strict: bool, emit_from: int = 0, lifecycle_only: bool = False) -> GoalProjector:
    """Fold a goal's events (stream order) into its projections (see :class:`GoalProjector`)."""
    return GoalProjector(strict=strict, emit_from=emit_from, lifecycle_only=lifecycle_only).fold(events)
