"""The ingest: artifacts become one transaction holding their events, the batch manifest and the projections they change.

The store (``ledger.storage``) knows nothing of reviews and the reducers
(``projections``) nothing of storage; an ingest is where they meet.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchledger.errors import InvalidInput
from benchledger.ledger.service.materialize import KeptProjectors, materialize_goals
from benchledger.ledger.storage.event_records import Appended, NewEvent, StoredEvent, StreamAppend
from benchledger.ledger.storage.store import Store
from benchledger.ledger.storage.transaction import Transaction
from benchledger.projections.artifacts import Artifact
from benchledger.projections.batch_manifest import BATCH_KIND, BATCH_SCHEMA, batch_manifest


class NothingToIngest(InvalidInput):
    """A batch without artifacts: a persistent ledger keeps no empty batch (and so creates no goal for one)."""


@dataclass(frozen=True)
class IngestOutcome:
    goal_id: str
    batch: Appended
    members: list[Appended]
    dry_run: bool = False

    @property
    def appended_count(self) -> int:
        return sum(1 for m in self.members if m.status == "appended")

    @property
    def duplicate_count(self) -> int:
        return sum(1 for m in self.members if m.status == "duplicate")


class _DryRun(Exception):
    """Raised inside the append transaction to roll it back after computing the outcome."""

    def __init__(self, outcome: list[Appended]) -> None:
        self.outcome = outcome


def member_event(artifact: Artifact) -> NewEvent:
    """An artifact's event: one source document is one observation (keyed on its source hash, docs/hash-chain.md)."""
    schema = artifact.payload.get("schema_version") if isinstance(artifact.payload, dict) else None
    return NewEvent(
        artifact.kind, artifact.payload, schema if isinstance(schema, str) else None, artifact.source_sha256, keyed_on_source=True, origin=artifact.origin
    )


def batch_events(goal_id: str, artifacts: Sequence[Artifact], review: Mapping[str, Any] | None = None) -> list[NewEvent]:
    """The events one batch appends: its members, then its ``ingest_batch`` manifest."""
    members = [member_event(a) for a in artifacts]
    manifest = [manifest_member(new.event_id(goal_id), new.kind, a.role) for a, new in zip(artifacts, members)]
    return [*members, manifest_event(manifest, review)]


def manifest_member(event_id: str, kind: str, role: str | None) -> dict[str, Any]:
    """How a batch manifest names one member."""
    return {"event_id": event_id, "kind": kind, **({"role": role} if role else {})}


def manifest_event(members: list[dict[str, Any]], review: Mapping[str, Any] | None = None) -> NewEvent:
    """A batch's ``ingest_batch`` event, listing ``members`` (:func:`manifest_member`) in order."""
    origin = "the batch manifest" + (" (the review's flags are its $.review.options)" if review else "")
    return NewEvent(BATCH_KIND, batch_manifest(members, review), BATCH_SCHEMA, origin=origin)


def grouped_before(tx: Transaction, goal_id: str, member_ids: Sequence[str]) -> StoredEvent | None:
    """The earliest batch of ``goal_id`` that already lists every one of ``member_ids`` (all stored already), if any.

    Such a batch adds nothing, so it is not recorded: a file ingested again
    alone (a repeated comparison) would otherwise be a batch of its own, whose
    reviews, derived without the runs it was first grouped with, would become
    the goal's latest claim review and learning ledger. A batch sent by a
    review command is always recorded (its flags are the new observation).
    """
    wanted = set(member_ids)
    stored = tx.events_by_id(wanted)
    if stored:
        # The batch appended right after the newest member (its own manifest) is the earliest that can
        # list it: when it lists them all (a file or a group ingested again), no other batch is read.
        newest = max(stored.values(), key=lambda event: event.stream_version)
        home = tx.read_goal(goal_id, kinds=(BATCH_KIND,), after_version=newest.stream_version, limit=1)
        if home and wanted <= {member["event_id"] for member in home[0].payload["members"]}:
            return home[0]
    for batch in tx.read_goal(goal_id, kinds=(BATCH_KIND,)):
        if wanted <= {member["event_id"] for member in batch.payload["members"]}:
            return batch
    return None


def _without_regroupings(ledger: Store, appends: Sequence[StreamAppend]) -> tuple[list[StreamAppend], dict[int, tuple[list[str], str]]]:
    """``appends`` less the batches that add nothing, and for each of those its member ids and the batch that holds them.

    A batch adds nothing when an earlier batch groups all its members: one
    stored before (:func:`grouped_before`) or one earlier in ``appends``.
    """
    kept: list[StreamAppend] = []
    covered: dict[int, tuple[list[str], str]] = {}
    kept_groups: dict[str, list[tuple[set[str], str]]] = {}  # goal -> (member ids, batch id) of the batches kept so far
    with ledger.reading() as connection:
        tx = Transaction(connection)
        # (one read for every batch: which of their members the ledger holds already)
        stored_ids = set(tx.events_by_id(m["event_id"] for request in appends for m in request.events[-1].payload["members"]))
        for index, request in enumerate(appends):
            manifest = request.events[-1]
            ids = [member["event_id"] for member in manifest.payload["members"]]
            wanted, earlier = set(ids), None
            if ids and "review" not in manifest.payload:
                earlier = next((batch for members, batch in kept_groups.get(request.goal_id, ()) if wanted <= members), None)
                if earlier is None and wanted <= stored_ids:
                    stored = grouped_before(tx, request.goal_id, ids)
                    earlier = stored.event_id if stored else None
            if earlier is None:
                kept.append(request)
                kept_groups.setdefault(request.goal_id, []).append((wanted, manifest.event_id(request.goal_id)))
            else:
                covered[index] = (ids, earlier)
    return kept, covered


def append_projected(
    ledger: Store,
    appends: Sequence[StreamAppend],
    *,
    source: str,
    dry_run: bool = False,
    materialize: bool = True,
    receipts: Collection[bytes] = (),
    projectors: KeptProjectors | None = None,
) -> list[list[Appended]]:
    """Append to one or more goals in one transaction, with the projections the new events change.

    A batch manifest among ``appends`` names its members as stored
    (:func:`members_as_stored`). With ``materialize`` (every persistent ledger)
    each goal's projections are brought up to date in the same transaction; a
    reducer that raises aborts the append. ``dry_run`` computes the outcome and
    rolls everything back; ``receipts`` are the guard's (:meth:`Store.append_streams`);
    ``projectors``: the folds of this writer's earlier transactions (:class:`KeptProjectors`).
    """

    def finish(tx: Transaction, outcomes: list[list[Appended]]) -> None:
        if dry_run:
            raise _DryRun(outcomes)
        first_new: dict[str, int] = {}
        new_events = [appended.event for outcome in outcomes for appended in outcome if appended.status == "appended"]
        for event in new_events:
            first_new[event.goal_id] = min(first_new.get(event.goal_id, event.position), event.position)
        if materialize and first_new:
            materialize_goals(tx, first_new, new_events, projectors)

    if projectors is not None:
        projectors.begin()
    try:
        written = ledger.append_streams(appends, source=source, within=finish, receipts=receipts)
    except _DryRun as stop:
        return stop.outcome
    if projectors is not None:
        projectors.committed()
    return written


def members_as_stored(ledger: Store, appends: Sequence[StreamAppend]) -> Sequence[StreamAppend]:
    """The appends with each batch manifest naming its members by the ids they are stored under.

    A member already stored under its content-only id (ingested before source
    hashes were part of identity, :meth:`NewEvent.earlier_id`) is a duplicate
    the store finds under that id, so the manifest must name it so. Such events
    are never written any more, so reading them before the append's
    transaction cannot miss one.
    """
    earlier: dict[str, tuple[str, NewEvent]] = {}
    for request in appends:
        for new in request.events:
            earlier_id = new.earlier_id(request.goal_id)
            if earlier_id:
                earlier[earlier_id] = (new.event_id(request.goal_id), new)
    if not earlier or not ledger.persistent:
        return appends
    renamed = {
        earlier[stored_id][0]: stored_id
        for stored_id, stored in ledger.events_by_id(earlier).items()
        if earlier[stored_id][1].same_observation(stored)
    }
    if not renamed:
        return appends
    return [
        StreamAppend(request.goal_id, [_renamed_members(new, renamed) for new in request.events], request.expected_version)
        for request in appends
    ]


def _renamed_members(new: NewEvent, renamed: Mapping[str, str]) -> NewEvent:
    if new.kind != BATCH_KIND:
        return new
    members = [{**m, "event_id": renamed.get(m["event_id"], m["event_id"])} for m in new.payload["members"]]
    return dataclasses.replace(new, payload={**new.payload, "members": members})


@dataclass(frozen=True)
class BatchRequest:
    """One batch to ingest: the goal, its artifacts (in argument order) and the review command that sent it, if any."""

    goal_id: str
    artifacts: Sequence[Artifact]
    review: Mapping[str, Any] | None = None


def ingest_many(
    ledger: Store,
    batches: Sequence[BatchRequest],
    *,
    source: str,
    dry_run: bool = False,
    materialize: bool = True,
    receipts: Collection[bytes] = (),
    projectors: KeptProjectors | None = None,
) -> list[IngestOutcome]:
    """Append every batch (members, then its manifest) in one transaction (see :func:`append_projected`).

    Each batch is what one :func:`ingest` would append; together they cost one
    transaction, a few statements and one fold per goal (a bulk ingest).
    ``receipts``: the guard's, for batches it passed already (:func:`store.guard_receipt`);
    ``projectors``: see :class:`KeptProjectors`.
    """
    if ledger.persistent:
        empty = sorted({b.goal_id for b in batches if not b.artifacts})
        if empty:
            raise NothingToIngest(f"no artifact to ingest into {', '.join(map(repr, empty))}; nothing was written")
    appends = [StreamAppend(b.goal_id, batch_events(b.goal_id, b.artifacts, b.review)) for b in batches]
    # (events are immutable: what is stored before the transaction is stored in it)
    kept, covered = _without_regroupings(ledger, members_as_stored(ledger, appends))
    written = []
    if kept:
        written = append_projected(
            ledger, kept, source=source, dry_run=dry_run, materialize=materialize, receipts=receipts, projectors=projectors
        )
    events = {a.event.event_id: a.event for outcome in written for a in outcome}
    missing = {i for ids, batch in covered.values() for i in (*ids, batch)} - events.keys()
    events.update(ledger.events_by_id(missing) if missing else {})
    unread = iter(written)
    outcomes = [
        [Appended(events[i], "duplicate") for i in (*covered[index][0], covered[index][1])] if index in covered else next(unread)
        for index in range(len(appends))
    ]
    return [IngestOutcome(b.goal_id, outcome[-1], outcome[:-1], dry_run) for b, outcome in zip(batches, outcomes)]


def ingest(
    ledger: Store,
    goal_id: str,
    artifacts: Sequence[Artifact],
    *,
    source: str,
    review: Mapping[str, Any] | None = None,
    dry_run: bool = False,
    materialize: bool = True,
) -> IngestOutcome:
    """Append ``artifacts`` and their batch manifest to ``goal_id`` in one transaction (see :func:`ingest_many`)."""
    (outcome,) = ingest_many(
        ledger, [BatchRequest(goal_id, artifacts, review)], source=source, dry_run=dry_run, materialize=materialize
    )
    return outcome
