"""``goals archive`` / ``goals unarchive``: a goal hidden from the listings by an event, never a deletion (``projections.goal_archive``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchledger.errors import VersionConflict
from benchledger.ledger.service.ingest import Ingest
from benchledger.ledger.storage.event_records import NewEvent
from benchledger.ledger.storage.store import Store
from benchledger.projections import goal_archive

# A goal that busy writers keep moving is read again this many times before giving up.
ARCHIVE_ATTEMPTS = 5


@dataclass(frozen=True)
class GoalArchive:
    """What ``goals archive`` / ``unarchive`` did: the goal's state now, and the event that made it (none when it was so already)."""

    goal_id: str
    archived: bool
    changed: bool
    event_id: str | None
    position: int | None

    def as_dict(self) -> dict[str, Any]:
        return {"goal_id": self.goal_id, "archived": self.archived, "changed": self.changed, "event_id": self.event_id, "position": self.position}


def goal_is_archived(ledger: Store, goal_id: str) -> bool:
    """Whether ``goal_id`` (which must exist) is archived: its last archive or unarchive event is an archive."""
    ledger.require_goal(goal_id)
    return goal_archive.is_archived(event.kind for event in ledger.read_all(goal_id=goal_id, kinds=goal_archive.KINDS))


def set_archived(ledger: Store, goal_id: str, archived: bool, *, source: str) -> GoalArchive:
    """Archive (or unarchive) ``goal_id``: one event appended through :class:`Ingest` (the goal's projections are folded
    in the same transaction, as for any event); nothing when the goal is in that state already."""
    attempt = 1
    while True:
        with ledger.snapshot() as view:
            head = view.require_goal(goal_id)
            if goal_is_archived(view, goal_id) == archived:
                return GoalArchive(goal_id, archived, False, None, None)
        event = NewEvent(goal_archive.kind_of(archived), goal_archive.archive_payload(archived, head["last_version"]), goal_archive.SCHEMA, origin="the archive mark")
        unit = Ingest(ledger, source)
        unit.add_events(goal_id, [event], expected_version=head["last_version"])
        try:
            (written,) = unit.commit().raise_if_refused().events
        except VersionConflict:
            if attempt == ARCHIVE_ATTEMPTS:
                raise
            attempt += 1
            continue
        return GoalArchive(goal_id, archived, True, written.event_id, written.position)
