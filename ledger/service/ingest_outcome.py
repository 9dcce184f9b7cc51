"""What an ingest reports: each event (:class:`MemberOutcome`), each batch (:class:`BatchOutcome`) and the whole write
(:class:`IngestOutcome`, whose :meth:`~IngestOutcome.as_dict` is what ``ingest --format json`` prints).

Plain values, built by ``service.ingest.Ingest``: what a report, a library
caller or the review that reads the batch back needs, and no payload (one
outcome is held per document of an ingest of any size).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from benchledger.errors import SHOWN_PROBLEMS
from benchledger.ledger.storage.event_records import Appended
from benchledger.ledger.storage.guard import UnstorableContent

NO_RUN_NOTE = (
    "this batch holds a comparison and no run: its claim review, now the goal's latest, reads no run "
    "(review-claim reads the runs ingested with the comparison: list them in the same ingest)"
)



def stored_lifecycle_note(kinds: list[str], next_attempt: int) -> str:
    """What a batch of lifecycle records the goal holds already says: the way to record them for a new attempt."""
    return (
        f"the {' and '.join(kinds)} record(s) are stored already, byte for byte (an attempt's preflight, launch or "
        f"post-launch often is): if they start a new attempt, name it: --attempt {next_attempt}"
    )


def withdrawn_note(source: str | None, position: int, retraction_position: int, reason: object) -> str:
    """What a batch says of a member stored already whose event a retraction withdrew (``reason``: the retraction's)."""
    return (
        f"{source} is the event @{position}, withdrawn by the retraction @{retraction_position} ({reason}): it stays "
        "withdrawn (a retraction is final), so the goal reads it as absent"
    )


@dataclass(frozen=True, slots=True)
class MemberOutcome:
    """One event of an ingest, appended or found stored, as its report gives it (no payload: one is held per document)."""

    event_id: str
    position: int
    stream_version: int
    kind: str
    schema_version: str | None
    status: str  # "appended" or "duplicate" (in a dry run: would be appended, is stored)
    source: str | None  # where it was read from (a file, file:line, a row); None for a batch manifest
    role: str | None = None  # the slot it filled in a review command

    @classmethod
    def of(cls, appended: Appended, source: str | None, role: str | None = None) -> MemberOutcome:
        e = appended.event
        return cls(e.event_id, e.position, e.stream_version, e.kind, e.schema_version, appended.status, source, role)

    def as_dict(self) -> dict[str, Any]:
        """As ``ingest --format json`` lists it among its ``events``."""
        return {
            "event_id": self.event_id,
            "position": self.position,
            "stream_version": self.stream_version,
            "kind": self.kind,
            "schema_version": self.schema_version,
            "status": self.status,
            "source": self.source,
        }


@dataclass(frozen=True)
class BatchOutcome:
    """One batch: its members in argument order, its manifest (``batch``: or the earlier batch that groups them all, a
    duplicate), what the batch is called (``label``: a directory) and what its report notes."""

    goal_id: str
    members: tuple[MemberOutcome, ...]
    batch: MemberOutcome
    label: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def appended_count(self) -> int:
        return sum(1 for m in self.members if m.status == "appended")

    @property
    def duplicate_count(self) -> int:
        return sum(1 for m in self.members if m.status == "duplicate")

    def as_dict(self) -> dict[str, Any]:
        """As ``ingest --batch-per-directory --format json`` lists it among its ``batches``."""
        return {
            "directory": self.label,
            "batch_event_id": self.batch.event_id,
            "batch_status": self.batch.status,
            "appended_count": self.appended_count,
            "duplicate_count": self.duplicate_count,
            **({"notes": list(self.notes)} if self.notes else {}),
        }


@dataclass(frozen=True)
class IngestOutcome:
    """What one :class:`Ingest` wrote (or, in a dry run, would have): its batches and the events it was given as they
    are; or, when anything was refused, every refusal as ``(source, reason)`` and nothing written (``ok`` false)."""

    batches: tuple[BatchOutcome, ...]
    events: tuple[MemberOutcome, ...] = ()
    dry_run: bool = False
    goal_id: str | None = None  # the goal of everything the unit wrote (None: several)
    errors: tuple[tuple[str, str], ...] = ()
    skipped: tuple[tuple[str, str], ...] = ()  # (source, why): documents ``--skip-unknown`` left out
    taken_once: tuple[tuple[str, str], ...] = ()  # (source, what it repeats): a document its batch held already
    # Goals a batch of this write adds to that are archived (``goals archive``): ``goals`` and the report's index leave
    # them out, and with them what it added, until they are unarchived.
    archived_goals: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.errors

    def raise_if_refused(self) -> IngestOutcome:
        """This outcome, unless the write was refused: then :class:`UnstorableContent` naming every refusal."""
        if self.errors:
            raise UnstorableContent(list(self.errors))
        return self

    @property
    def appended_count(self) -> int:
        """Members and events given as they are that were appended (not the manifests)."""
        return sum(b.appended_count for b in self.batches) + sum(1 for e in self.events if e.status == "appended")

    @property
    def duplicate_count(self) -> int:
        return sum(b.duplicate_count for b in self.batches) + sum(1 for e in self.events if e.status == "duplicate")

    @property
    def single(self) -> BatchOutcome | None:
        """The one batch, when the report gives its fields rather than a listing of batches (one batch, no label)."""
        return self.batches[0] if len(self.batches) == 1 and self.batches[0].label is None else None

    def members(self) -> Iterator[MemberOutcome]:
        """Every batch's members, in order (what the report lists, an event at a time)."""
        return (m for b in self.batches for m in b.members)

    def head(self) -> dict[str, Any]:
        """:meth:`as_dict` less its ``events`` (which come last: the command prints them as it goes)."""
        if not self.ok:
            errors = [{"source": source, "error": error} for source, error in self.errors[:SHOWN_PROBLEMS]]
            return {"ok": False, "goal_id": self.goal_id, "error_count": len(self.errors), "errors": errors}
        report: dict[str, Any] = {"ok": True, "dry_run": self.dry_run, "goal_id": self.goal_id}
        batch = self.single
        if batch is not None:
            report.update(batch_event_id=batch.batch.event_id, batch_status=batch.batch.status)
            if batch.notes:
                report["notes"] = list(batch.notes)
        else:
            report["batches"] = [b.as_dict() for b in self.batches]
        report["appended_count"] = sum(b.appended_count for b in self.batches)
        report["duplicate_count"] = sum(b.duplicate_count for b in self.batches)
        if self.skipped:
            report["skipped"] = [{"source": source, "reason": reason} for source, reason in self.skipped]
        if self.taken_once:
            report["taken_once"] = [{"source": source, "reason": reason} for source, reason in self.taken_once]
        if self.archived_goals:
            report["archived_goals"] = list(self.archived_goals)
        return report

    def as_dict(self) -> dict[str, Any]:
        """What ``ingest --format json`` prints: one batch's fields, or (labelled batches, several) the ``batches``
        listing, then the events; refused, the first :data:`SHOWN_PROBLEMS` refusals and how many there are."""
        return {**self.head(), "events": [m.as_dict() for m in self.members()]} if self.ok else self.head()
