"""The application layer: intake, the event store and the projections, put together.

The store (``ledger.store``) knows nothing of reviews and the reducers
(``projections``) nothing of storage; this module is where an ingest becomes
one transaction holding its events, its batch manifest and (issue 6) the
projections they change.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchledger.errors import CheckFailed, InvalidInput, capped
from benchledger.ledger import folding
from benchledger.ledger.folding import FoldedGoal, FoldedStep, row_record
from benchledger.ledger.storage_guard import UnstorableContent
from benchledger.ledger.store import (
    Appended,
    CorruptEvent,
    Ledger,
    NewEvent,
    StoredEvent,
    StreamAppend,
    Transaction,
    VersionConflict,
    one_snapshot,
)
from benchledger.ledger.verification import Problem, count_problems, verify_events
from benchledger.projections import linking, retraction, review_module
from benchledger.projections.artifacts import Artifact
from benchledger.projections.linking import (
    CheckpointUnusable,
    GoalProjector,
    ProjectionFault,
    project_goal,
)

REVIEW_GOAL = "review"
# A retraction is checked against the goal as read, then appended only if the goal has not moved
# since; a goal that busy writers keep moving is checked again this many times before giving up.
RETRACT_ATTEMPTS = 5


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
    return NewEvent(linking.BATCH_KIND, linking.batch_manifest(members, review), linking.BATCH_SCHEMA, origin=origin)


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
        home = tx.read_goal(goal_id, kinds=(linking.BATCH_KIND,), after_version=newest.stream_version, limit=1)
        if home and wanted <= {member["event_id"] for member in home[0].payload["members"]}:
            return home[0]
    for batch in tx.read_goal(goal_id, kinds=(linking.BATCH_KIND,)):
        if wanted <= {member["event_id"] for member in batch.payload["members"]}:
            return batch
    return None


def _without_regroupings(ledger: Ledger, appends: Sequence[StreamAppend]) -> tuple[list[StreamAppend], dict[int, tuple[list[str], str]]]:
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
    ledger: Ledger,
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
    rolls everything back; ``receipts`` are the guard's (:meth:`Ledger.append_streams`);
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


def members_as_stored(ledger: Ledger, appends: Sequence[StreamAppend]) -> Sequence[StreamAppend]:
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
    if new.kind != linking.BATCH_KIND:
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
    ledger: Ledger,
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
    ledger: Ledger,
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


def recorded_options(name: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The flags a review's batch records: those its reducer declares, never input file paths."""
    return {key: options[key] for key in review_module(name).DEFAULT_OPTIONS if key in options}


def evaluate_review(
    name: str,
    artifacts: Sequence[Artifact],
    options: Mapping[str, Any],
    *,
    ledger: Ledger | None = None,
    goal_id: str | None = None,
) -> tuple[dict[str, Any], IngestOutcome]:
    """Ingest a review command's inputs as one batch and reduce them from the stored events.

    Without ``ledger`` the batch goes into a fresh in-memory ledger that only
    this review reads (no other projection is materialized there): the
    stateless LoopX-style call and the stored path reduce the same stored
    events. A reducer failure becomes the review's error payload, as in LoopX.
    """
    persistent = ledger is not None
    ledger = ledger or Ledger.in_memory()
    module = review_module(name)
    outcome = ingest(
        ledger,
        goal_id or REVIEW_GOAL,
        artifacts,
        source=f"benchmark {name}",
        review={"command": name, "options": recorded_options(name, options)},
        materialize=persistent,
    )
    stored = ledger.events_by_id(m.event.event_id for m in outcome.members)
    inputs = linking.batch_inputs(outcome.batch.event.payload, stored)
    try:
        payload = module.reduce(inputs, options)
    except Exception as exc:  # LoopX reports any reducer failure as the error payload
        payload = module.error_payload(str(exc), options)
    return payload, outcome


def evaluate_and_keep(
    ledger: Ledger, goal_id: str, name: str, artifacts: Sequence[Artifact], options: Mapping[str, Any]
) -> tuple[dict[str, Any], IngestOutcome]:
    """:func:`evaluate_review` into ``goal_id`` of ``ledger``: the inputs are kept, with the review's flags.

    What is kept must be storable (the store's guard, ``ledger.storage_guard``:
    no input or recorded flag may hold a local path, a secret, NaN, ...), and the
    projections the batch changes must reduce; otherwise nothing is written.
    """
    try:
        return evaluate_review(name, artifacts, options, ledger=ledger, goal_id=goal_id)
    except ProjectionFault as exc:
        raise CheckFailed(f"nothing was stored: {exc}") from exc


@one_snapshot
def _retraction_plan(ledger: Ledger, event_ids: Sequence[str], reason: str, goal_id: str | None) -> StreamAppend:
    """The append of a retraction to the goal holding ``event_ids``, once the rules allow it (:func:`retraction.retraction_problems`)."""
    found = ledger.events_by_id(event_ids)
    goals = sorted({event.goal_id for event in found.values()})
    if goal_id is None and len(goals) > 1:
        raise retraction.InvalidRetraction(
            f"the events belong to {len(goals)} goals ({', '.join(goals)}): retract one goal's at a time, with --goal; nothing was written"
        )
    target = goal_id or (goals[0] if goals else None)
    head = ledger.require_goal(target) if target is not None else None
    problems = [
        f"{i}: no such event in this ledger" if i not in found else f"{i}: belongs to goal {found[i].goal_id!r}, not {target!r}"
        for i in event_ids
        if i not in found or found[i].goal_id != target
    ]
    local = [i for i in event_ids if i in found and found[i].goal_id == target]
    goal_events = ledger.read_goal(target) if target is not None else []
    problems += retraction.retraction_problems(goal_events, local, reason) if local or not problems else []
    if problems:
        raise retraction.InvalidRetraction("cannot retract, nothing was written: " + "; ".join(capped(problems)))
    event = NewEvent(retraction.KIND, retraction.retraction_payload(event_ids, reason), retraction.SCHEMA, origin="the retraction")
    return StreamAppend(target, [event], expected_version=head["last_version"])


def retract(ledger: Ledger, event_ids: Sequence[str], reason: str, *, goal_id: str | None = None, source: str = "cli retract") -> Appended:
    """Append a retraction of ``event_ids`` to the goal holding them (docs/linking.md "Retracted evidence"); nothing is deleted.

    Refused (:class:`retraction.InvalidRetraction`, nothing written) when an
    id is unknown, of another goal, a retraction or a batch manifest, or
    retracted already, or the reason is empty or one the store may not keep
    (a local path, a secret: the store's guard, as for any write). The goal's
    projections are folded again in the same transaction.
    """
    ids = list(dict.fromkeys(event_ids))
    attempt = 1
    while True:
        plan = _retraction_plan(ledger, ids, reason, goal_id)
        try:
            ((appended,),) = append_projected(ledger, [plan], source=source)
            return appended
        except UnstorableContent as exc:
            raise retraction.InvalidRetraction(f"cannot retract: {exc}") from exc
        except VersionConflict:
            # Another writer appended to the goal after the checks (which read the goal as it was):
            # check again against what it holds now, which may refuse (a retraction of the same id).
            if attempt == RETRACT_ATTEMPTS:
                raise
            attempt += 1


# benchledger keeps one ledger (shared through its database), so there is no
# cross-project registry to synchronize after an append.
NO_GLOBAL_REGISTRY = {"ok": True, "dry_run": False, "skipped": True, "reason": "benchledger has no global registry to sync"}


def execute_baseline_failure_gate(
    artifacts: Sequence[Artifact], options: Mapping[str, Any], *, database_url: str | None = None
) -> dict[str, Any]:
    """``baseline-failure-gate --execute``: review as a dry run; if the gate passes, keep it in its goal.

    The goal id is checked after the review, as LoopX does (a bad one is the
    review's error payload). The baseline is kept as a batch of the goal with
    the gate's flags: that batch is benchledger's history event, and the
    goal's ``baseline-failure-gate`` projection is rebuilt from it on replay.
    LoopX's file locations in the receipt become the ledger's own locators.
    """
    from datetime import datetime

    from benchledger.errors import InvalidGoalId
    from benchledger.ledger.store import open_ledger, validate_goal_id
    from benchledger.projections import baseline_failure_gate as gate

    payload, _ = evaluate_review(gate.NAME, artifacts, options)
    if payload.get("ok") is not True:
        return payload
    try:
        goal_id = validate_goal_id(gate.validated_goal_id(options["goal_id"]))
    except InvalidGoalId as exc:
        return gate.error_payload(str(exc), options)
    ledger = open_ledger(database_url)
    try:
        payload, outcome = evaluate_review(gate.NAME, artifacts, options, ledger=ledger, goal_id=goal_id)
        registry = ledger.engine.url.render_as_string(hide_password=True)
    finally:
        ledger.close()
    if payload.get("ok") is not True:
        return payload
    batch = outcome.batch.event
    recorded = datetime.fromisoformat(batch.recorded_at.replace("Z", "+00:00")).astimezone()
    receipt = {
        "generated_at": recorded.isoformat(timespec="seconds"),
        "registry": registry,
        "runtime_root": f"goal:{goal_id}",
        "json_path": f"event:{batch.event_id}",
        "markdown_path": None,
        "index_path": f"position:{batch.position}",
        "global_sync": gate.GLOBAL_SYNC_DISABLED if options["no_global_sync"] else NO_GLOBAL_REGISTRY,
    }
    return gate.executed_payload(payload, gate.history_event(payload, goal_id, options), receipt)


# -- materialized projections ------------------------------------------------------


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
    """

    def __init__(self, limit: int = 256) -> None:
        self.limit = limit
        self._kept: OrderedDict[str, GoalProjector] = OrderedDict()
        self._folded: dict[str, GoalProjector] = {}

    def begin(self) -> None:
        """A transaction begins: what an earlier one that did not commit folded is forgotten."""
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


def materialize_goals(
    tx: Transaction,
    first_new: Mapping[str, int],
    new_events: Sequence[StoredEvent] | None = None,
    projectors: KeptProjectors | None = None,
) -> None:
    """Bring the projections of goals that just gained events up to date, inside the append's transaction.

    ``first_new`` maps each goal to its first new position; ``new_events``,
    when the caller holds them, are every event the transaction appended (so
    they are not read back). Each goal's fold resumes from its stored
    checkpoint and reads only the events after it (and, by id, the few
    earlier ones those read: those the checkpoints name are read for all the
    goals at once): only the rows the new
    events create or change are computed and written over the stored ones,
    with the new checkpoint. A goal whose checkpoint is missing, of other
    versions or unreadable is folded from its first event instead, and so is
    a goal whose new events hold a retraction: then all of its rows are
    rebuilt, the rows of retracted evidence (which no longer exist) removed,
    lifecycle steps written where missing and never removed (they are
    history), so an ingest leaves what a replay would. A reducer that raises
    aborts the transaction (nothing is written). ``projectors`` continues the
    folds of the writer's earlier transactions where the goals have not moved
    since (:class:`KeptProjectors`), without reading their checkpoints.
    """
    known = _TransactionEvents(tx, new_events or ())
    continued: dict[str, GoalProjector | None] = {}
    for goal, emit_from in first_new.items():
        kept = projectors.take(goal) if projectors is not None else None
        if kept is not None:
            continued[goal] = _continued(known, goal, kept, emit_from)
    resumed = [goal for goal in first_new if continued.get(goal) is None]
    checkpoints = tx.projection_row_of_goals(resumed, linking.CHECKPOINT, linking.CURRENT_KEY) if resumed else {}
    known.read_named(checkpoints.values())
    replaced = linking.projection_versions().keys() - {linking.STEP}  # (a stored row's key starts with its projection)
    rows = []
    for goal, emit_from in first_new.items():
        projector = continued.get(goal) or _resumed(known, goal, checkpoints.get(goal), emit_from)
        if projector is None:
            # A goal without a usable checkpoint that held events before this append was last written by
            # an older benchledger (or tampered with): its stored rows may lack lifecycle steps or be of
            # older versions, so every row is recomputed and replaced (the upgrade costs that goal's past
            # once). A goal whose events are all new has no stored row to replace: its new rows are all.
            events = known.after(goal, 0)
            fresh = bool(events) and events[0].position >= emit_from
            projector = project_goal(events, strict=True, emit_from=emit_from if fresh else 0)
        if projectors is not None:
            projectors.folded(goal, projector)
        goal_rows = [row_record(goal, row) for row in projector.rows.values()]
        if not projector.emits_all:
            rows += goal_rows
            continue
        # One comparison with all the goal's stored rows; of those the fold no longer makes, lifecycle
        # steps stay (they are history) and rows of projections this code does not know are not its to remove.
        changed, unwanted = tx.projection_rows_diff([goal], goal_rows)
        tx.write_projection_rows_diff([goal], changed, [key for key in unwanted if key[0] in replaced])
    tx.upsert_projection_rows(rows)


class _TransactionEvents:
    """The events the folds of one append's transaction read, each read once for all its goals.

    Events never change, so one read in the transaction holds for all of it:
    the events the transaction appended (when the caller holds them), then by
    id those the goals' checkpoints name and the members of those that are
    batches (read for every goal at once), then whatever else a fold asks for.
    """

    def __init__(self, tx: Transaction, new_events: Sequence[StoredEvent]) -> None:
        self.tx = tx
        self.by_id: dict[str, StoredEvent] = {event.event_id: event for event in new_events}
        self._new: dict[str, list[StoredEvent]] = {}
        for event in new_events:  # (in position order: each goal's in stream order)
            self._new.setdefault(event.goal_id, []).append(event)

    def read_named(self, checkpoints: Iterable[Mapping[str, Any]]) -> None:
        """Read the events ``checkpoints`` (stored rows) name, and the members of those that are batches, in two reads."""
        named = [i for row in checkpoints if row["status"] == "ok" for i in linking.checkpoint_references(_json_value(row["payload"]))]
        members: list[str] = []
        for batch in (e for e in self.read(named).values() if e.kind == linking.BATCH_KIND):
            with contextlib.suppress(CorruptEvent):  # (read ahead only: a fold that needs it says what is wrong)
                listed = batch.payload.get("members") if isinstance(batch.payload, dict) else None
                members += [m["event_id"] for m in listed or () if isinstance(m, dict) and isinstance(m.get("event_id"), str)]
        self.read(members)

    def read(self, event_ids: Iterable[str]) -> dict[str, StoredEvent]:
        """Those of ``event_ids`` the ledger holds, by id (each read from the database once)."""
        wanted = list(dict.fromkeys(event_ids))
        unread = [i for i in wanted if i not in self.by_id]
        if unread:
            self.by_id.update(self.tx.events_by_id(unread))
        return {i: self.by_id[i] for i in wanted if i in self.by_id}

    def after(self, goal_id: str, version: int) -> list[StoredEvent]:
        """``goal_id``'s events after stream version ``version``: the appended ones when they are exactly those."""
        new = self._new.get(goal_id)
        if new and new[0].stream_version == version + 1:
            return new
        return self.tx.read_goal(goal_id, after_version=version)


@dataclass(frozen=True)
class StoredGoalEvents:
    """A goal's stored events, read on demand by a fold resumed from a checkpoint (:class:`linking.EarlierEvents`)."""

    # Not folding._GoalEventsReadAgain: an ingest's goals share one read of their events (few: kept for the transaction),
    # and a fold resumed from a checkpoint has not seen the goal's earlier batches, so it asks the stored comparison-batch row.

    events: _TransactionEvents
    goal_id: str

    def by_id(self, event_ids: Iterable[str]) -> dict[str, StoredEvent]:
        return {i: e for i, e in self.events.read(event_ids).items() if e.goal_id == self.goal_id}

    def latest_comparison_batch(self, comparison_id: str, before: int) -> StoredEvent | None:
        key = linking.comparison_key(comparison_id)
        row = self.events.tx.projection_row_of_goals([self.goal_id], linking.COMPARISON_INDEX, key).get(self.goal_id)
        if row is None or row["status"] != "ok":
            return None
        batch_id = _json_field(row["payload"], "batch_id")
        batch = self.by_id([batch_id]).get(batch_id) if isinstance(batch_id, str) else None
        if batch is None or batch.position >= before or batch.kind != linking.BATCH_KIND:
            raise CheckpointUnusable(f"the {linking.COMPARISON_INDEX} row {key} names no earlier batch of the goal")
        return batch

    def before(self, position: int) -> Iterator[StoredEvent]:
        return folding.events_of(self.events.tx, [self.goal_id], position - 1)


def _json_value(text: str | None) -> Any:
    try:
        return json.loads(text or "null")
    except ValueError:
        return None


def _json_field(text: str | None, name: str) -> Any:
    value = _json_value(text)
    return value.get(name) if isinstance(value, dict) else None


def _resumed(events: _TransactionEvents, goal: str, checkpoint: Mapping[str, Any] | None, first_new: int) -> GoalProjector | None:
    """``goal``'s projector resumed from its stored checkpoint row and fed the events after it; ``None`` if it cannot be."""
    if checkpoint is None or checkpoint["status"] != "ok" or checkpoint["projection_version"] != linking.CHECKPOINT_VERSION:
        return None
    try:
        projector = GoalProjector.resume(json.loads(checkpoint["payload"]), strict=True, earlier=StoredGoalEvents(events, goal))
    except (CheckpointUnusable, ValueError):
        return None
    new = events.after(goal, projector.last_version)
    if not new or new[0].position > first_new or new[0].stream_version != projector.last_version + 1:
        return None  # the checkpoint claims a later state than the goal's (tampered): not one to continue
    if any(retraction.retracted_by(event) for event in new):
        return None  # a retraction changes rows of earlier events: the goal is folded whole
    try:
        return projector.fold_new(new)
    except CheckpointUnusable:
        return None  # a stored row the fold resumed from is not what the events say: fold the goal whole


def _continued(events: _TransactionEvents, goal: str, projector: GoalProjector, first_new: int) -> GoalProjector | None:
    """``projector`` (kept from this writer's last fold of ``goal``) fed the goal's new events; ``None`` unless it folded the event just before them."""
    new = events.after(goal, projector.last_version)
    if not new or new[0].position != first_new or any(retraction.retracted_by(event) for event in new):
        return None  # another writer appended to the goal since (or a retraction: the goal is folded whole)
    try:
        return projector.continued(StoredGoalEvents(events, goal)).fold_new(new)
    except CheckpointUnusable:
        return None  # a stored comparison-batch row is not what the events say: resumed, or folded whole


def rebuild_projections(tx: Transaction, goals: Sequence[str]) -> Iterator[FoldedStep]:
    """Rebuild the stored projections of ``goals``, a step of goals at a time, in this process; yields each step.

    (For a transaction whose events no other process sees yet: import-ndjson.)
    """
    upto = tx.last_position()
    for start in range(0, len(goals), folding.GOALS_PER_STEP):
        step = folding.fold_step(tx, list(goals[start : start + folding.GOALS_PER_STEP]), upto, write=True)
        tx.write_projection_rows_diff([goal.goal_id for goal in step.folded], step.changed, step.unwanted)
        yield step


def replay(
    ledger: Ledger,
    *,
    goal_id: str | None = None,
    projection: str | None = None,
    progress: Callable[[int], None] | None = None,
    jobs: int = 1,
) -> dict[str, Any]:
    """Rebuild stored projections from the events, atomically (readers see old rows or new rows).

    Every row is recomputed; only those that differ from the stored ones are
    written or deleted (``rows_changed``), and each goal's stored row counts
    recounted (``counts_repaired``: those that were wrong). A reducer that raises marks its row faulted instead of aborting
    the replay. ``jobs`` worker processes fold the goals and compare their rows
    (``ledger.folding``); this process writes what differs, all in one
    transaction. ``progress`` is called with the number of events folded for
    each step of goals.
    """
    if projection is not None and projection not in linking.projection_versions():
        known = ", ".join(sorted(linking.projection_versions()))
        raise InvalidInput(f"--projection {projection!r} is not a projection; known: {known}")
    if goal_id is not None:
        ledger.require_goal(goal_id)
    report: dict[str, Any] = {}

    def rebuild() -> None:
        report.update(goals=0, events=0, rows=0, rows_changed=0, counts_repaired=0, faulted=[])
        with ledger.transaction(write=True) as tx:
            # (under the append lock: the goals, their events and their rows are what the rebuild writes over)
            heads = [h for h in tx.heads() if goal_id in (None, h["goal_id"])]
            steps = folding.steps_of(heads, jobs=jobs)
            for step in folding.folded_steps(ledger, tx, steps, jobs=jobs, upto_position=tx.last_position(), projection=projection):
                report["counts_repaired"] += tx.write_projection_rows_diff([goal.goal_id for goal in step.folded], step.changed, step.unwanted)
                report["rows_changed"] += step.rows_changed
                for goal in step.folded:
                    report["goals"] += 1
                    report["events"] += goal.events
                    report["rows"] += goal.row_count
                    report["faulted"] += goal.faulted
                if progress is not None:
                    progress(sum(goal.events for goal in step.folded))

    ledger.retrying_when_locked(rebuild)
    return report


@one_snapshot
def status(ledger: Ledger) -> dict[str, Any]:
    """Projections stored by older code or missing, faulted rows, and goals whose projections lag their events.

    Read as counts per projection and version, the faulted rows and each goal's
    latest covered position: never the stored payloads.
    """
    code_versions = linking.projection_versions()
    stats = ledger.projection_stats()
    stale = [
        {"projection": name, "stored_version": version, "code_version": code_versions.get(name), "rows": count}
        for (name, version), count in sorted(stats.rows_by_version.items())
        if version != code_versions.get(name)
    ]
    heads = ledger.heads()
    # Every goal has lifecycle steps (its first event is one); a ledger stored before they existed has none.
    unstepped = len(heads) - stats.goals_by_projection.get(linking.STEP, 0)
    missing = [{"projection": linking.STEP, "goals": unstepped}] if unstepped else []
    lagging = [
        {"goal_id": head["goal_id"], "reflects_position": stats.covered.get(head["goal_id"]), "head_position": head["last_position"]}
        for head in heads
        if stats.covered.get(head["goal_id"], 0) < head["last_position"]
    ]
    return {
        "ok": not stale and not missing and not stats.faulted and not lagging,
        "stale": stale,
        "missing": missing,
        "faulted": stats.faulted,
        "lagging_goals": lagging,
    }


@one_snapshot
def audit(
    ledger: Ledger,
    *,
    goal_id: str | None = None,
    expect_digest: str | None = None,
    jobs: int = 1,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Prove the ledger: hashes, chains, versions, positions, digest, and every projection against a replay.

    Everything is read in one snapshot: a ledger that writers change meanwhile
    is proved as it was when the audit began, never a mix of two moments
    (``jobs`` worker processes fold the goals from the events up to the
    snapshot's last position, which are exactly the snapshot's events).
    ``progress`` is called with the number of events folded for each step of goals.
    """
    if goal_id is not None:
        ledger.require_goal(goal_id)
    heads = ledger.heads()
    report = verify_events(ledger.read_all(goal_id=goal_id), heads, scope_goal=goal_id, expect_digest=expect_digest)
    problems = list(report.problems)
    projections_checked = 0
    versions = {h["goal_id"]: h["last_version"] for h in heads}
    goals = sorted(report.goals | {goal for goal in versions if goal_id in (None, goal)})
    with ledger.reading() as connection:
        read = Transaction(connection)
        steps = folding.steps_of([{"goal_id": g, "last_version": versions.get(g, 0)} for g in goals], jobs=jobs)
        folded_steps = folding.folded_steps(ledger, read, steps, jobs=jobs, upto_position=read.last_position(), audit=True)
        for step in folded_steps:
            for goal in step.folded:
                projections_checked += _audit_goal(ledger, goal, problems)
            if progress is not None:
                progress(sum(goal.events for goal in step.folded))
    return {
        "ok": not problems,
        "events_checked": report.events_checked,
        "goals_checked": len(goals),
        "projections_checked": projections_checked,
        "digest": report.digest,
        "problems": [p.as_dict() for p in problems],
    }


def _audit_goal(ledger: Ledger, folded: FoldedGoal, problems: list[Problem]) -> int:
    """What differs between a goal's stored rows and its fold, added to ``problems``; returns how many rows it checked."""
    goal = folded.goal_id
    if folded.failure is not None:  # tampered events may not even fold (e.g. a manifest naming a lost event)
        problems.append(Problem("replay_failed", goal, None, f"the goal's events cannot be replayed: {folded.failure}"))
        return 0
    extra = 0
    for (projection, _, key), want, have in folded.differences:
        where = (want or have)["position"]
        label = f"{projection} [{key}]"
        if have is None:
            problems.append(Problem("projection_missing", goal, where, f"{label} is not stored"))
        elif want is None:
            extra += 1
            problems.append(Problem("projection_extra", goal, where, f"{label} is stored but the events do not produce it"))
        else:
            fields = sorted(f for f in want if have.get(f) != want[f])
            problems.append(Problem("projection_mismatch", goal, where, f"{label} differs from a replay in {', '.join(fields)}"))
    problems += count_problems(goal, ledger.projection_counts(goal), folded.stored_counts)
    return folded.row_count + extra
