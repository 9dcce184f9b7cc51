"""Which events feed which review: benchledger's linking rules (docs/linking.md).

Pure functions from a goal's events (in stream order) to the rows of its
materialized projections and to its lifecycle history. Nothing here touches a
database: the application layer reads the events and stores what this returns.

The rules follow how LoopX users chain the review commands:

* a batch's runs + comparison -> ``review-claim`` -> ``learning-ledger``
  (one row per batch that holds a comparison);
* a batch's runs -> ``review-verifier-attribution`` (one row per batch with runs);
* each run -> ``review-runner-invariants`` (default expectations) and
  ``attempt-learning-gate`` (with the goal's current learning ledger);
* each adapter invocation -> ``review-adapter-kwargs`` (default flags);
* a batch ingested by a review command (``benchledger benchmark X --goal``)
  -> review X with the flags it was given (this is how ``baseline-failure-gate``
  gets the operator's gate flags);
* the goal's latest preflight / launch / post-launch / run / comparison /
  claim review / learning ledger -> ``lifecycle-state`` (one row, ``current``);
* the lifecycle after each event, where it differs from the lifecycle after
  the previous event -> ``lifecycle-step`` (one row per change, keyed by the
  event's position: what ``history`` reads);
* a ``retraction`` makes the events it names absent from its position on
  (``projections.retraction``): the goal is folded again without them.

A claim review or learning ledger can be ingested (LoopX's own
``benchmark_claim_review_v0`` / ``benchmark_learning_ledger_v0``) or derived
from a batch. The next review reads the most recent one by ledger position; a
derived one takes its batch's position (after the batch's members).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from benchledger.errors import CHECK_FAILED, BenchledgerError
from benchledger.projections import REVIEW_MODULES, retraction, review_module
from benchledger.projections.artifacts import KINDS
from benchledger.projections.artifacts.kinds import normalize
from benchledger.projections.history import changes, lifecycle_summary
from benchledger.projections.runs import ROW_KIND

BATCH_KIND = "ingest_batch"
BATCH_SCHEMA = "benchledger_ingest_batch_v0"
# Every kind an event can have: the artifacts, the batch that lists them, imported LoopX run rows, retractions.
EVENT_KINDS = (*KINDS, BATCH_KIND, ROW_KIND, retraction.KIND)

LIFECYCLE = "lifecycle-state"
CLAIM = "review-claim"
LEARNING = "learning-ledger"
VERIFIER = "review-verifier-attribution"
RUNNER = "review-runner-invariants"
ATTEMPT = "attempt-learning-gate"
ADAPTER = "review-adapter-kwargs"

# Lifecycle input kinds, in the order lifecycle-state reads them.
SUMMARY = "goal-summary"
# Only ever a faulted row: a batch whose members cannot be found.
BATCH_LINKS = "batch-links"
LIFECYCLE_KINDS = ("preflight", "launch", "post-launch", "run", "comparison", "claim-review", "learning-ledger")
CURRENT_KEY = "current"
# The lifecycle after an event where it differs from the lifecycle after the goal's previous event.
STEP = "lifecycle-step"
# Bump when the step rows' content changes: the lifecycle-state reducer's rules or the payload's fields.
STEP_VERSION = 1
# The reviews whose rows the lifecycle reads (a batch's derived claim review and learning ledger).
LIFECYCLE_READS = frozenset({LIFECYCLE, CLAIM, LEARNING, STEP})
SUMMARY_VERSION = 1


def projection_versions() -> dict[str, int]:
    """Every stored projection and the version of the code that computes it."""
    versions = {name: review_module(name).VERSION for name in REVIEW_MODULES}
    versions[SUMMARY] = SUMMARY_VERSION
    versions[BATCH_LINKS] = SUMMARY_VERSION
    versions[STEP] = STEP_VERSION
    return versions


def step_key(position: int) -> str:
    """The key of the ``lifecycle-step`` row of the event at ``position``: zero-padded, so keys sort as positions."""
    return f"{position:012d}"


class EventLike(Protocol):
    event_id: str
    kind: str
    position: int

    @property
    def payload(self) -> Any: ...


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


def batch_manifest(members: list[dict[str, Any]], review: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The payload of an ``ingest_batch`` event: its members in argument order, duplicates included.

    ``review`` records the review command (and its options) that ingested the
    batch, so the stored projection of that review is rebuilt with the same flags.
    """
    manifest: dict[str, Any] = {"schema_version": BATCH_SCHEMA, "members": members}
    if review is not None:
        manifest["review"] = dict(review)
    return manifest


def batch_inputs(manifest: Mapping[str, Any], events_by_id: Mapping[str, EventLike]) -> dict[str, list[Any]]:
    """A batch's member payloads grouped by kind, in argument order: a review's ``inputs``."""
    inputs: dict[str, list[Any]] = {}
    for member in manifest["members"]:
        event = events_by_id[member["event_id"]]
        inputs.setdefault(event.kind, []).append(event.payload)
    return inputs


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


class GoalProjector:
    """Folds a goal's events, in stream order, into its projections and lifecycle history.

    ``strict`` makes a raising reducer raise :class:`ProjectionFault` (ingest);
    otherwise the row is kept as faulted (replay, audit), so a broken view is
    never silently empty.

    ``emit_from`` makes an ingest pay only for what it appended: events before
    that position were projected by earlier ingests and their rows are stored
    and unchanged (events are immutable), so they only rebuild the state the
    new events read, lazily; :attr:`rows` then holds just the rows the new
    events create or change. Replay and audit fold everything (``emit_from=0``),
    through the same code.

    After every event the lifecycle is compared with the lifecycle after the
    previous event; where it differs a ``lifecycle-step`` row records it (its
    summary and what changed, or the reducer's error). The first emitted
    event of an ingest compares with the lifecycle before it, reduced once.
    ``lifecycle_only`` (``history`` of a goal stored before step rows existed)
    reduces only what the steps need.

    A retraction folds the goal's earlier events again without what it
    retracts (retractions are rare); their lifecycle steps stay (they are
    history). A new retraction (at or after ``emit_from``) changes rows of
    earlier events, so from it on everything is emitted (:attr:`emits_all`)
    and the caller replaces the goal's stored rows, its steps excepted.
    """

    def __init__(self, *, strict: bool, emit_from: int = 0, lifecycle_only: bool = False) -> None:
        self.strict = strict
        self.emit_from = emit_from
        self.lifecycle_only = lifecycle_only
        # The lifecycle after the previous event, (summary, error); None before the first step is known.
        self._step: tuple[dict[str, Any] | None, str | None] | None = None
        # The last lifecycle that did not fault: what a step's changes are measured against.
        self._step_baseline: dict[str, Any] | None = None
        self.rows: dict[tuple[str, str], ProjectionRow] = {}
        self._by_id: dict[str, EventLike] = {}
        # kind -> (position, payload thunk) of the newest evidence of that kind
        self._latest: dict[str, tuple[int, Callable[[], Any]]] = {}
        self._lifecycle_inputs_version = 0
        self._lifecycle_cache: tuple[int, dict[str, Any] | None, str | None] | None = None
        self._runs: list[EventLike] = []
        self._retracted: set[str] = set()
        self.events: list[EventLike] = []

    @property
    def emits_all(self) -> bool:
        """Whether :attr:`rows` holds every row of the goal but lifecycle steps: other stored rows no longer exist."""
        return self.emit_from == 0

    # -- folding -------------------------------------------------------------

    def fold(self, events: Sequence[EventLike]) -> GoalProjector:
        for event in events:
            self.apply(event)
        self.finish()
        return self

    def apply(self, event: EventLike) -> None:
        emitting = event.position >= self.emit_from
        if emitting and self._step is None and self.events:
            # The first event this fold emits for: the lifecycle before it is what its step compares with.
            self._step = self._lifecycle_step_state(self.events[-1].position)
            self._step_baseline = self._step[0]
        self.events.append(event)
        self._by_id[event.event_id] = event
        retracted = retraction.retracted_by(event)
        if retracted:
            self._retract(event, retracted)
        elif event.kind != retraction.KIND and event.event_id not in self._retracted:
            self._project(event, emitting)
        if emitting:
            self._record_step(event.position)

    def _retract(self, event: EventLike, event_ids: list[str]) -> None:
        """Fold the events before ``event`` again, without the ones retracted by it or earlier."""
        self._retracted.update(event_ids)
        if event.position >= self.emit_from:
            self.emit_from = 0
        self.rows = {key: row for key, row in self.rows.items() if key[0] == STEP}
        self._latest, self._runs = {}, []
        self._lifecycle_inputs_version += 1
        for earlier in self.events[:-1]:
            if earlier.kind != retraction.KIND and earlier.event_id not in self._retracted:
                self._project(earlier, earlier.position >= self.emit_from)

    def _project(self, event: EventLike, emitting: bool) -> None:
        """What one piece of evidence (not retracted) adds to the goal's projections."""
        if event.kind == BATCH_KIND:
            self._apply_batch(event, emitting)
        else:
            if event.kind in LIFECYCLE_KINDS:
                self._remember(event.kind, event.position, lambda e=event: e.payload)
            if event.kind == "run":
                self._runs.append(event)
                if emitting:
                    self._reduce(RUNNER, event.event_id, event.position, {"run": [event.payload]}, default_options(RUNNER))
            elif event.kind == "adapter-invocation" and emitting:
                self._reduce(ADAPTER, event.event_id, event.position, {"adapter-invocation": [event.payload]}, default_options(ADAPTER))

    def finish(self) -> None:
        """The rows that depend on the whole fold: attempt gates, the current lifecycle and the goal summary.

        Every run is gated against the goal's current learning ledger (a newer
        ledger re-gates them all); a gate row is stamped with the later of its
        run and that ledger, which is when it last changed; only the ones that
        changed at or after ``emit_from`` are produced. The lifecycle is
        reduced once, for the goal's last event, whenever that event is new.
        """
        ledger = self._latest.get("learning-ledger")
        ledger_position = ledger[0] if ledger else 0
        for run in self._runs:
            position = max(run.position, ledger_position)
            if position < self.emit_from:
                continue
            inputs = {"run": [run.payload]}
            if ledger is not None:
                inputs["learning-ledger"] = [ledger[1]()]
            self._reduce(ATTEMPT, run.event_id, position, inputs, default_options(ATTEMPT))
        if self.events and self.events[-1].position >= self.emit_from:
            self._record_current(self.events[-1].position)

    def _apply_batch(self, batch: EventLike, emitting: bool) -> None:
        manifest = batch.payload
        missing = [m["event_id"] for m in manifest["members"] if m["event_id"] not in self._by_id]
        if missing:
            # Only a damaged ledger lists members the goal does not hold: the
            # batch's reviews cannot be computed, and that must show, not crash.
            cause = LookupError(f"batch lists events this goal does not hold: {', '.join(missing)}")
            if self.strict:
                raise ProjectionFault(BATCH_LINKS, batch.event_id, batch.position, cause)
            self.rows[(BATCH_LINKS, batch.event_id)] = ProjectionRow(
                BATCH_LINKS, batch.event_id, SUMMARY_VERSION, batch.position, error=f"{type(cause).__name__}: {cause}"
            )
            return
        if self._retracted:
            # A retracted member is no input of the batch's reviews; with none left, it has none.
            members = [m for m in manifest["members"] if m["event_id"] not in self._retracted]
            if len(members) < len(manifest["members"]):
                if not members:
                    return
                manifest = {**manifest, "members": members}
        has_comparison = any(m["kind"] == "comparison" for m in manifest["members"])
        if not emitting:
            # Already projected: only what later reviews may read of it, computed if they do.
            if has_comparison:
                inputs = _once(lambda: batch_inputs(manifest, self._by_id))
                for name, kind in ((CLAIM, "claim-review"), (LEARNING, "learning-ledger")):
                    derived = _once(lambda name=name: self._derive(name, batch, inputs()))
                    self._remember(kind, batch.position, lambda kind=kind, derived=derived: normalize(kind, derived()))
            return
        inputs = batch_inputs(manifest, self._by_id)
        if has_comparison:
            claim = self._reduce(CLAIM, batch.event_id, batch.position, inputs, default_options(CLAIM))
            learning = self._reduce(LEARNING, batch.event_id, batch.position, inputs, default_options(LEARNING))
            # The next reviews read these as LoopX users feed them: as files of
            # those kinds, i.e. through the same normalizers an ingest applies.
            for kind, derived in (("claim-review", claim), ("learning-ledger", learning)):
                if derived is not None:
                    normalized = normalize(kind, derived)
                    self._remember(kind, batch.position, lambda normalized=normalized: normalized)
        if "run" in inputs:
            self._reduce(VERIFIER, batch.event_id, batch.position, inputs, default_options(VERIFIER))
        recorded = manifest.get("review")
        if recorded:
            options = {**default_options(recorded["command"]), **recorded.get("options", {})}
            self._reduce(recorded["command"], batch.event_id, batch.position, inputs, options)

    def _derive(self, name: str, batch: EventLike, inputs: Mapping[str, list[Any]]) -> dict[str, Any]:
        """A review of an already projected batch (only strict ingests fold those; a failure is a fault)."""
        try:
            return review_module(name).reduce(inputs, default_options(name))
        except Exception as exc:
            raise ProjectionFault(name, batch.event_id, batch.position, exc) from exc

    def _remember(self, kind: str, position: int, payload: Callable[[], Any]) -> None:
        # Events arrive in stream order, so the newest is simply the last remembered.
        self._latest[kind] = (position, _once(payload))
        self._lifecycle_inputs_version += 1

    def _latest_payload(self, kind: str) -> Any:
        entry = self._latest.get(kind)
        return entry[1]() if entry else None

    def lifecycle_inputs(self) -> dict[str, list[Any]]:
        return {kind: [self._latest_payload(kind)] for kind in LIFECYCLE_KINDS if kind in self._latest}

    def _lifecycle_state(self, position: int) -> tuple[dict[str, Any] | None, str | None]:
        """The lifecycle state now; reduced again only when one of its inputs changed."""
        cached = self._lifecycle_cache
        if cached is None or cached[0] != self._lifecycle_inputs_version:
            state = self._reduce(LIFECYCLE, CURRENT_KEY, position, self.lifecycle_inputs(), default_options(LIFECYCLE))
            error = self.rows[(LIFECYCLE, CURRENT_KEY)].error
            self._lifecycle_cache = cached = (self._lifecycle_inputs_version, state, error)
        return cached[1], cached[2]

    def _lifecycle_step_state(self, position: int) -> tuple[dict[str, Any] | None, str | None]:
        state, error = self._lifecycle_state(position)
        return (None if error is not None else lifecycle_summary(state)), error

    def _record_step(self, position: int) -> None:
        """A ``lifecycle-step`` row for the event at ``position`` when the lifecycle after it differs from before it."""
        step = self._lifecycle_step_state(position)
        if step == self._step:
            return
        self._step = step
        summary, error = step
        key = step_key(position)
        if error is not None:
            self.rows[(STEP, key)] = ProjectionRow(STEP, key, STEP_VERSION, position, error=error)
            return
        self.rows[(STEP, key)] = ProjectionRow(STEP, key, STEP_VERSION, position, payload={**summary, **changes(self._step_baseline, summary)})
        self._step_baseline = summary

    def _record_current(self, position: int) -> None:
        """The goal's current lifecycle row and summary row, as of the event at ``position``."""
        state, error = self._lifecycle_state(position)
        version = review_module(LIFECYCLE).VERSION
        self.rows[(LIFECYCLE, CURRENT_KEY)] = ProjectionRow(LIFECYCLE, CURRENT_KEY, version, position, payload=state, error=error)
        self.rows[(SUMMARY, CURRENT_KEY)] = ProjectionRow(SUMMARY, CURRENT_KEY, SUMMARY_VERSION, position, payload=self._goal_summary())

    def _goal_summary(self) -> dict[str, Any]:
        """What ``benchledger goals`` lists: the latest claim strength and learning status, by the rules above."""
        claim = self._latest_payload("claim-review")
        ledger = self._latest_payload("learning-ledger")
        strength = None
        if isinstance(claim, dict):
            decision = claim.get("decision")
            strength = decision.get("claim_strength") if isinstance(decision, dict) else None
            strength = strength or claim.get("claim_strength")
        return {
            "claim_strength": strength,
            "learning_status": ledger.get("learning_status") if isinstance(ledger, dict) else None,
        }

    def _reduce(self, name: str, key: str, position: int, inputs: Mapping[str, list[Any]], options: Mapping[str, Any]) -> dict[str, Any] | None:
        if self.lifecycle_only and name not in LIFECYCLE_READS:
            return None
        module = review_module(name)
        try:
            payload = module.reduce(inputs, options)
        except Exception as exc:  # a reducer bug must not leave a silently empty view
            if self.strict:
                raise ProjectionFault(name, key, position, exc) from exc
            self.rows[(name, key)] = ProjectionRow(name, key, module.VERSION, position, error=f"{type(exc).__name__}: {exc}")
            return None
        self.rows[(name, key)] = ProjectionRow(name, key, module.VERSION, position, payload=payload)
        return payload


def project_goal(events: Sequence[EventLike], *, strict: bool, emit_from: int = 0, lifecycle_only: bool = False) -> GoalProjector:
    """Fold a goal's events (stream order) into its projections (see :class:`GoalProjector`)."""
    return GoalProjector(strict=strict, emit_from=emit_from, lifecycle_only=lifecycle_only).fold(events)
