"""Retraction: correcting a mistake in an immutable ledger (docs/linking.md, "Retracted evidence").

Events are never changed or deleted. ``benchledger retract`` appends a
``retraction`` event to the goal that holds the mistaken evidence; from that
event's position on, the retracted events are absent from everything read of
the goal (its projections, lifecycle, runs), while the history still shows
them, the retraction, and (``--as-of`` before it) what the ledger said then.

Pure rules, no database: which ids a retraction may name, and which events a
goal still shows once its retractions are read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from benchledger.errors import InvalidInput

KIND = "retraction"
SCHEMA = "benchledger_retraction_v0"
# A batch manifest is a grouping, not evidence: retract its members instead. A goal's archive marks are undone by
# the other mark (``projections.goal_archive``).
NOT_RETRACTABLE = frozenset({KIND, "ingest_batch", "goal_archive", "goal_unarchive"})
_WHY_NOT = {KIND: "a retraction (it cannot be taken back)", "ingest_batch": "a batch manifest: retract its members"}


class InvalidRetraction(InvalidInput):
    """A retraction that cannot be appended (an id it may not name, an empty reason): nothing was written."""


class EventLike(Protocol):
    """An event, as the retraction rules read it."""

    @property
    def event_id(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def position(self) -> int: ...

    @property
    def payload(self) -> Any: ...


# The caller's own kind of event, which visible returns.
Event = TypeVar("Event", bound=EventLike)


def retraction_payload(event_ids: Sequence[str], reason: str) -> dict[str, Any]:
    """The payload of a retraction of ``event_ids`` (in the order given), with the user's ``reason``."""
    return {"schema_version": SCHEMA, "retracts": list(event_ids), "reason": reason}


def retracted_ids_of(payload: Any) -> list[str]:
    """The ids a retraction's ``payload`` names."""
    ids = payload.get("retracts") if isinstance(payload, Mapping) else None
    return [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else []


def retracted_by(event: EventLike) -> list[str]:
    """The ids ``event`` retracts (none unless it is a retraction)."""
    return retracted_ids_of(event.payload) if event.kind == KIND else []


def retracted_ids(events: Iterable[EventLike]) -> set[str]:
    """Every id the retractions among ``events`` retract."""
    return {i for event in events for i in retracted_by(event)}


def visible(events: Iterable[Event]) -> list[Event]:
    """The evidence among ``events`` (one goal's, in stream order) that the goal shows after the last of them.

    Retractions themselves are not evidence, and neither is what they retract.
    """
    events = list(events)
    hidden = retracted_ids(events)
    return [e for e in events if e.kind != KIND and e.event_id not in hidden]


def retraction_problems(goal_events: Sequence[EventLike], event_ids: Sequence[str], reason: str) -> list[str]:
    """Why retracting ``event_ids`` of the goal whose events are ``goal_events`` with ``reason`` may not be done (empty: it may).

    An id must name an event of this goal that is evidence (not a retraction,
    not a batch manifest) and is not retracted already; the reason must say something.
    """
    problems = [] if reason.strip() else ["the reason is empty: say why the evidence is withdrawn"]
    if not event_ids:
        problems.append("no event id to retract")
    by_id = {e.event_id: e for e in goal_events}
    already = retracted_ids(goal_events)
    for event_id in event_ids:
        event = by_id.get(event_id)
        if event is None:
            problems.append(f"{event_id}: no such event in this goal")
        elif event.kind in NOT_RETRACTABLE:
            what = _WHY_NOT.get(event.kind, "a goal's archive mark: `goals archive` / `goals unarchive` changes it")
            problems.append(f"{event_id}: is {what}")
        elif event_id in already:
            problems.append(f"{event_id}: is retracted already")
    return problems
