"""Retraction: an event that makes earlier events of a goal absent from its position on (``projections.retraction``)."""

from __future__ import annotations

from collections.abc import Sequence

from benchledger.errors import VersionConflict, capped
from benchledger.ledger.service.ingest import Ingest
from benchledger.ledger.storage.event_records import Appended, NewEvent, StreamAppend
from benchledger.ledger.storage.guard import UnstorableContent
from benchledger.ledger.storage.store import Store, one_snapshot
from benchledger.projections import retraction

# since; a goal that busy writers keep moving is checked again this many times before giving up.
RETRACT_ATTEMPTS = 5


@one_snapshot
def _retraction_plan(ledger: Store, event_ids: Sequence[str], reason: str, goal_id: str | None) -> StreamAppend:
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


def retract(ledger: Store, event_ids: Sequence[str], reason: str, *, goal_id: str | None = None, source: str = "cli retract") -> Appended:
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
        unit = Ingest(ledger, source)
        unit.add_events(plan.goal_id, plan.events, expected_version=plan.expected_version)
        try:
            (written,) = unit.commit().raise_if_refused().events
            return Appended(ledger.events_by_id([written.event_id])[written.event_id], written.status)
        except UnstorableContent as exc:
            raise retraction.InvalidRetraction(f"cannot retract: {exc}") from exc
        except VersionConflict:
            # Another writer appended to the goal after the checks (which read the goal as it was):
            # check again against what it holds now, which may refuse (a retraction of the same id).
            if attempt == RETRACT_ATTEMPTS:
                raise
            attempt += 1
