"""Retraction: an event that makes earlier events of a goal absent from its position on (``projections.retraction``).

An event is named by its id, a unique prefix of it, or ``@POSITION`` (its
global position, the ``pos`` column of ``history``); a dry run says what the
retraction would change and writes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from benchledger.errors import VersionConflict, capped
from benchledger.ledger.read.event_references import resolve_references
from benchledger.ledger.service.ingest import Ingest
from benchledger.ledger.storage.event_records import NewEvent, StoredEvent, StreamAppend
from benchledger.ledger.storage.guard import UnstorableContent
from benchledger.ledger.storage.store import Store, one_snapshot
from benchledger.projections import catalog, retraction
from benchledger.projections.history import event_summary, lifecycle_summary
from benchledger.projections.projector import GoalProjector, project_goal

# since; a goal that busy writers keep moving is checked again this many times before giving up.
RETRACT_ATTEMPTS = 5
# The goal's verdicts a retraction reports the change of (the goal summary's fields, as ``goals`` lists them).
VERDICTS = ("claim_strength", "learning_status")


@dataclass(frozen=True)
class RetractionPlan:
    """A retraction, checked against the goal as it is: what it appends, what it withdraws, and the lifecycle and the
    goal's verdicts (``goals``' claim strength and learning status) before and after."""

    append: StreamAppend
    withdrawn: list[StoredEvent]
    reason: str
    lifecycle_before: dict[str, Any] | None
    lifecycle_after: dict[str, Any] | None
    verdicts_before: dict[str, Any]
    verdicts_after: dict[str, Any]


@dataclass(frozen=True)
class RetractionDone:
    """What :func:`retract` appended (or, ``dry_run``, would have): the retraction's id and position, and its plan."""

    plan: RetractionPlan
    event_id: str
    position: int
    dry_run: bool = False
    withdrawn_summaries: list[str] = field(default_factory=list)

    @property
    def goal_id(self) -> str:
        return self.plan.append.goal_id


@one_snapshot
def _retraction_plan(ledger: Store, references: Sequence[str], reason: str, goal_id: str | None) -> RetractionPlan:
    """The append of a retraction to the goal holding the events ``references`` name, once the rules allow it
    (:func:`retraction.retraction_problems`), with what it withdraws and the goal's lifecycle before and after it."""
    if goal_id is not None:
        ledger.require_goal(goal_id)  # (an unknown goal is refused as every command refuses it, before its events are looked for)
    resolved, unresolved = resolve_references(ledger, references, goal_id)
    if unresolved:
        raise retraction.InvalidRetraction("cannot retract, nothing was written: " + "; ".join(capped(unresolved)))
    event_ids = list(dict.fromkeys(resolved))
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
    if problems or target is None or head is None:
        raise retraction.InvalidRetraction("cannot retract, nothing was written: " + "; ".join(capped(problems)))
    payload = retraction.retraction_payload(event_ids, reason)
    event = NewEvent(retraction.KIND, payload, retraction.SCHEMA, origin="the retraction")
    planned = _Planned(event_id="(planned)", kind=retraction.KIND, position=head["last_position"] + 1, payload=payload,
                       stream_version=head["last_version"] + 1)
    # One fold, continued past the planned retraction: the goal as it is, then as it will read.
    fold = project_goal(goal_events, strict=False)
    lifecycle_before, verdicts_before = _goal_state(fold)
    lifecycle_after, verdicts_after = _goal_state(fold.fold([planned]))
    return RetractionPlan(
        StreamAppend(target, [event], expected_version=head["last_version"]), [found[i] for i in event_ids], reason,
        lifecycle_before, lifecycle_after, verdicts_before, verdicts_after,
    )


@dataclass(frozen=True)
class _Planned:
    """The retraction as the fold reads it, before it is appended (the fold reads no id or hash of it)."""

    event_id: str
    kind: str
    position: int
    payload: Any
    stream_version: int


def _goal_state(fold: GoalProjector) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The goal's lifecycle after ``fold`` (its phase, first blocker, next transition, gates; ``None``: faulted or none), and its
    verdicts as ``goals`` lists them: a retracted run changes what its batch's reviews read, as LoopX reviews what it is given."""
    lifecycle = fold.rows.get((catalog.LIFECYCLE, "current"))
    summary = fold.rows.get((catalog.SUMMARY, "current"))
    verdicts = summary.payload if summary is not None and summary.payload is not None else {}
    return (
        None if lifecycle is None or lifecycle.payload is None else lifecycle_summary(lifecycle.payload),
        {name: verdicts.get(name) for name in VERDICTS},
    )


def retract(
    ledger: Store, references: Sequence[str], reason: str, *, goal_id: str | None = None, source: str = "cli retract", dry_run: bool = False
) -> RetractionDone:
    """Append a retraction of the events ``references`` name to the goal holding them (docs/linking.md "Retracted evidence"); nothing is deleted.

    Refused (:class:`retraction.InvalidRetraction`, nothing written) when a
    reference names no event or several (``event_references.resolve_references``), an event
    is of another goal, a retraction or a batch manifest, or retracted already,
    or the reason is empty or one the store may not keep (a local path, a
    secret: the store's guard, as for any write). The goal's projections are
    folded again in the same transaction. ``dry_run``: everything is checked
    and nothing is written.
    """
    attempt = 1
    while True:
        plan = _retraction_plan(ledger, references, reason, goal_id)
        unit = Ingest(ledger, source, dry_run=dry_run)
        unit.add_events(plan.append.goal_id, plan.append.events, expected_version=plan.append.expected_version)
        try:
            (written,) = unit.commit().raise_if_refused().events
        except UnstorableContent as exc:
            raise retraction.InvalidRetraction(f"cannot retract: {exc}") from exc
        except VersionConflict:
            # Another writer appended to the goal after the checks (which read the goal as it was):
            # check again against what it holds now, which may refuse (a retraction of the same id).
            if attempt == RETRACT_ATTEMPTS:
                raise
            attempt += 1
            continue
        summaries = [event_summary(e.kind, e.payload) for e in plan.withdrawn]
        return RetractionDone(plan, written.event_id, written.position, dry_run, summaries)
