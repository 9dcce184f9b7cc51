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
  claim review / learning ledger -> ``lifecycle-state`` (one row, ``current``).

A claim review or learning ledger can be ingested (LoopX's own
``benchmark_claim_review_v0`` / ``benchmark_learning_ledger_v0``) or derived
from a batch. The next review reads the most recent one by ledger position; a
derived one takes its batch's position (after the batch's members).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ledger.intake.kinds import normalize

from . import REVIEW_MODULES
from . import review as review_module
from .history import HISTORY, history_key, lifecycle_summary

BATCH_KIND = "ingest_batch"
BATCH_SCHEMA = "benchledger_ingest_batch_v0"

LIFECYCLE = "lifecycle-state"
CLAIM = "review-claim"
LEARNING = "learning-ledger"
VERIFIER = "review-verifier-attribution"
RUNNER = "review-runner-invariants"
ATTEMPT = "attempt-learning-gate"
ADAPTER = "review-adapter-kwargs"

# Lifecycle input kinds, in the order lifecycle-state reads them.
SUMMARY = "goal-summary"
LIFECYCLE_KINDS = ("preflight", "launch", "post-launch", "run", "comparison", "claim-review", "learning-ledger")
CURRENT_KEY = "current"
SUMMARY_VERSION = 1


def projection_versions() -> dict[str, int]:
    """Every stored projection and the version of the code that computes it."""
    versions = {name: review_module(name).VERSION for name in REVIEW_MODULES}
    versions[HISTORY] = versions[LIFECYCLE]
    versions[SUMMARY] = SUMMARY_VERSION
    return versions


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


class ProjectionFault(RuntimeError):
    """A reducer raised on the goal's events."""

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


def default_options(name: str) -> dict[str, Any]:
    return dict(review_module(name).DEFAULT_OPTIONS)


class GoalProjector:
    """Folds a goal's events, in stream order, into its projections and lifecycle history.

    ``strict`` makes a raising reducer raise :class:`ProjectionFault` (ingest);
    otherwise the row is kept as faulted (replay, audit), so a broken view is
    never silently empty.
    """

    def __init__(self, *, strict: bool) -> None:
        self.strict = strict
        self.rows: dict[tuple[str, str], ProjectionRow] = {}
        self._by_id: dict[str, EventLike] = {}
        self._latest: dict[str, tuple[int, Any]] = {}  # kind -> (position, payload) of the newest
        self._runs: list[EventLike] = []
        self.events: list[EventLike] = []

    # -- folding -------------------------------------------------------------

    def fold(self, events: Sequence[EventLike]) -> "GoalProjector":
        for event in events:
            self.apply(event)
        return self

    def apply(self, event: EventLike) -> None:
        ledger_before = self._latest.get("learning-ledger")
        self.events.append(event)
        self._by_id[event.event_id] = event
        if event.kind == BATCH_KIND:
            self._apply_batch(event)
        else:
            if event.kind in LIFECYCLE_KINDS:
                self._remember(event.kind, event.position, event.payload)
            if event.kind == "run":
                self._runs.append(event)
                self._reduce(RUNNER, event.event_id, event.position, {"run": [event.payload]}, default_options(RUNNER))
            elif event.kind == "adapter-invocation":
                self._reduce(ADAPTER, event.event_id, event.position, {"adapter-invocation": [event.payload]}, default_options(ADAPTER))
        if self._latest.get("learning-ledger") is not ledger_before:
            self._gate_attempts(self._runs, event.position)
        elif event.kind == "run":
            self._gate_attempts([event], event.position)
        self._record_lifecycle(event)

    def _apply_batch(self, batch: EventLike) -> None:
        manifest = batch.payload
        inputs = batch_inputs(manifest, self._by_id)
        if "comparison" in inputs:
            claim = self._reduce(CLAIM, batch.event_id, batch.position, inputs, default_options(CLAIM))
            learning = self._reduce(LEARNING, batch.event_id, batch.position, inputs, default_options(LEARNING))
            # The next reviews read these as LoopX users feed them: as files of
            # those kinds, i.e. through the same normalizers an ingest applies.
            for kind, derived in (("claim-review", claim), ("learning-ledger", learning)):
                if derived is not None:
                    self._remember(kind, batch.position, normalize(kind, derived))
        if "run" in inputs:
            self._reduce(VERIFIER, batch.event_id, batch.position, inputs, default_options(VERIFIER))
        recorded = manifest.get("review")
        if recorded:
            options = {**default_options(recorded["command"]), **recorded.get("options", {})}
            self._reduce(recorded["command"], batch.event_id, batch.position, inputs, options)

    def _remember(self, kind: str, position: int, payload: Any) -> None:
        # Events arrive in stream order, so the newest is simply the last remembered.
        self._latest[kind] = (position, payload)

    def _latest_payload(self, kind: str) -> Any:
        entry = self._latest.get(kind)
        return entry[1] if entry else None

    def _gate_attempts(self, runs: Sequence[EventLike], position: int) -> None:
        """Gate runs against the goal's current learning ledger (a new ledger re-gates every run)."""
        ledger = self._latest_payload("learning-ledger")
        for run in runs:
            inputs = {"run": [run.payload]}
            if ledger is not None:
                inputs["learning-ledger"] = [ledger]
            self._reduce(ATTEMPT, run.event_id, position, inputs, default_options(ATTEMPT))

    def lifecycle_inputs(self) -> dict[str, list[Any]]:
        return {kind: [self._latest_payload(kind)] for kind in LIFECYCLE_KINDS if kind in self._latest}

    def _record_lifecycle(self, event: EventLike) -> None:
        """Recompute the goal's lifecycle state and keep a history row of it for this event."""
        state = self._reduce(LIFECYCLE, CURRENT_KEY, event.position, self.lifecycle_inputs(), default_options(LIFECYCLE))
        current = self.rows[(LIFECYCLE, CURRENT_KEY)]
        key = history_key(event.position)
        self.rows[(HISTORY, key)] = ProjectionRow(
            HISTORY, key, current.version, event.position,
            payload=None if state is None else lifecycle_summary(state), error=current.error,
        )
        self.rows[(SUMMARY, CURRENT_KEY)] = ProjectionRow(SUMMARY, CURRENT_KEY, SUMMARY_VERSION, event.position, payload=self._goal_summary())

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


def project_goal(events: Sequence[EventLike], *, strict: bool) -> GoalProjector:
    """Fold a goal's events (stream order) into its projections."""
    return GoalProjector(strict=strict).fold(events)
