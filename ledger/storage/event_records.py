"""Events as records: an event to append, an event as stored, the parts and outcomes of an append, a goal id's syntax,
and the rows an append stores (an events-table record chained to its predecessor, the stream head it leaves).

Pure (no database; no clock but :func:`utc_timestamp`'s default): the store's append builds every
event row here, and so does the benchmark's synthetic ledger (benchmarks/synthetic_ledger.py),
which clones real goals into 10^6-event ledgers. One builder means the clones
hash exactly as an append does (docs/hash-chain.md), and cannot drift from it.
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from benchledger.errors import CorruptEvent, InvalidGoalId, LedgerError
from benchledger.ledger.storage import canonical

# The events table's columns, in table order (``schema.events`` is built to match and says so). Named here, not
# read off the table: a claim bundle's ``verify`` builds events from records and must not import SQLAlchemy.
EVENT_COLUMNS = (
    "position", "event_id", "goal_id", "stream_version", "kind", "schema_version", "payload",
    "payload_sha256", "source_sha256", "prev_hash", "chain_hash", "recorded_at", "source",
)
GOAL_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,120}")


def validate_goal_id(goal_id: str) -> str:
    if not isinstance(goal_id, str) or not GOAL_ID_PATTERN.fullmatch(goal_id):
        raise InvalidGoalId(
            f"invalid goal id {goal_id!r}: use 1-121 letters, digits, '_', '.', ':' or '-', "
            "starting with a letter or digit"
        )
    return goal_id


@dataclass(frozen=True)
class NewEvent:
    """An event to append: what it is and its (JSON-compatible) payload."""

    kind: str
    payload: Any
    schema_version: str | None = None
    source_sha256: str | None = None
    # True for an artifact normalized from a source document: one document is one
    # observation, so its identity covers the source bytes (canonical.event_id_for).
    keyed_on_source: bool = False
    # Where the event was read from (a file, ``file:line``, a row), for the store's refusals; not stored.
    origin: str | None = field(default=None, compare=False)

    @functools.cached_property
    def canonical(self) -> tuple[str, str]:
        """The payload's canonical JSON and its hash (computed once: the batch manifest and the append both need it)."""
        body = canonical.canonical_json(self.payload)
        return body, canonical.sha256_hex(body)

    def with_canonical(self, body: str) -> NewEvent:
        """This event, its payload's canonical JSON (:attr:`canonical`) given as ``body`` rather than made again: what
        ``canonical`` made of the same payload earlier, kept as text (``ingest-batches``' spool). Its hash is ``body``'s."""
        self.__dict__["canonical"] = (body, canonical.sha256_hex(body))  # (where the cached property keeps its value)
        return self

    def event_id(self, goal_id: str) -> str:
        """The id this event has in ``goal_id``: the same observation again is the same event."""
        return self._ids(goal_id)[0]

    def earlier_id(self, goal_id: str) -> str | None:
        """The content-only id the same observation was stored under before source hashes were part of identity.

        An event stored under it with this event's source hash is this very
        observation (re-ingesting a file after the upgrade appends nothing);
        one with another source hash is a different document that compacted alike.
        """
        return self._ids(goal_id)[1]

    def _ids(self, goal_id: str) -> tuple[str, str | None]:
        """:meth:`event_id` and :meth:`earlier_id` in ``goal_id``, computed once (a batch's manifest, the regrouping
        check, the store's duplicate check and the insert all ask)."""
        found = self._ids_by_goal.get(goal_id)
        if found is None:
            digest = self.canonical[1]
            if self.keyed_on_source and self.source_sha256:
                found = (canonical.event_id_for(goal_id, self.kind, digest, self.source_sha256), canonical.event_id_for(goal_id, self.kind, digest))
            else:
                found = (canonical.event_id_for(goal_id, self.kind, digest), None)
            self._ids_by_goal[goal_id] = found
        return found

    @functools.cached_property
    def _ids_by_goal(self) -> dict[str, tuple[str, str | None]]:
        return {}

    def same_observation(self, stored: StoredEvent) -> bool:
        """Whether ``stored`` (found under :meth:`earlier_id`) is this observation."""
        return stored.source_sha256 == self.source_sha256 and stored.kind == self.kind


@dataclass(frozen=True)
class StoredEvent:
    position: int
    event_id: str
    goal_id: str
    stream_version: int
    kind: str
    schema_version: str | None
    payload_text: str
    payload_sha256: str
    source_sha256: str | None
    prev_hash: str
    chain_hash: str
    recorded_at: str
    source: str

    @functools.cached_property
    def payload(self) -> Any:
        """The decoded payload (decoded once: folds read it many times)."""
        try:
            return canonical.parse_json(self.payload_text)
        except ValueError as exc:
            raise CorruptEvent(
                f"event {self.position} of goal {self.goal_id!r} does not hold JSON ({exc}): the ledger was changed "
                "outside benchledger (`benchledger audit` lists what differs)"
            ) from exc

    def as_record(self) -> dict[str, Any]:
        """Every stored field, with the payload kept as its canonical text."""
        return {column: getattr(self, _FIELD_OF_COLUMN.get(column, column)) for column in EVENT_COLUMNS}


_FIELD_OF_COLUMN = {"payload": "payload_text"}
# StoredEvent's fields are the events columns, in table order: a row (or a
# record read in that order) builds one positionally, which folds do for
# every event they read.
assert tuple(_FIELD_OF_COLUMN.get(name, name) for name in EVENT_COLUMNS) == tuple(StoredEvent.__dataclass_fields__)


@dataclass(frozen=True)
class Appended:
    """The outcome for one input of an append: the stored event and whether it is new."""

    event: StoredEvent
    status: str  # "appended" | "duplicate"


def event_from_record(record: Mapping[str, Any]) -> StoredEvent:
    """A :class:`StoredEvent` from an events-table record (a row about to be inserted)."""
    return StoredEvent(*record_values(record))


# An events-table record's values, in table order.
record_values = operator.itemgetter(*EVENT_COLUMNS)


def row_to_event(row: Any) -> StoredEvent:
    """A :class:`StoredEvent` from a ``select(events)`` result row (its columns are in table order).

    Equal to ``StoredEvent(*row)``, made without the frozen dataclass's ``__init__``, which sets one field at a time
    through ``object.__setattr__`` (half the cost: a fold builds every event it reads); the fields are all set at once.
    """
    event = _new_object(StoredEvent)
    event.__dict__.update(zip(_EVENT_FIELDS, row, strict=True))
    return event


_new_object = object.__new__
_EVENT_FIELDS = tuple(StoredEvent.__dataclass_fields__)


def utc_timestamp(moment: datetime | None = None) -> str:
    moment = moment or datetime.now(UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class StreamAppend:
    """One goal's part of an append: its new events, and the version the caller expects it at (if any)."""

    goal_id: str
    events: Sequence[NewEvent]
    expected_version: int | None = None


@dataclass(frozen=True)
class Prepared:
    """A new event with its canonical body, payload hash and content-addressed id (computed before locking)."""

    new: NewEvent
    body: str
    digest: str
    event_id: str
    earlier_id: str | None = None


def chained_record(
    prev_hash: str,
    *,
    position: int,
    event_id: str,
    goal_id: str,
    stream_version: int,
    kind: str,
    schema_version: str | None,
    payload: str,
    payload_sha256: str,
    source_sha256: str | None,
    recorded_at: str,
    source: str,
) -> dict[str, Any]:
    """The events-table record of one new event that follows ``prev_hash`` in its stream.

    ``payload`` is the canonical JSON text and ``payload_sha256`` its hash;
    the chain hash covers every other stored field.
    """
    return {
        "position": position,
        "event_id": event_id,
        "goal_id": goal_id,
        "stream_version": stream_version,
        "kind": kind,
        "schema_version": schema_version,
        "payload": payload,
        "payload_sha256": payload_sha256,
        "source_sha256": source_sha256,
        "prev_hash": prev_hash,
        "chain_hash": canonical.chain_hash(
            prev_hash,
            goal_id=goal_id,
            stream_version=stream_version,
            kind=kind,
            schema_version=schema_version,
            payload_sha256=payload_sha256,
            event_id=event_id,
            recorded_at=recorded_at,
            source=source,
            source_sha256=source_sha256,
        ),
        "recorded_at": recorded_at,
        "source": source,
    }


def head_record(last: Mapping[str, Any]) -> dict[str, Any]:
    """The ``stream_heads`` row of a goal whose newest event record is ``last``."""
    return {
        "goal_id": last["goal_id"],
        "last_version": last["stream_version"],
        "last_chain_hash": last["chain_hash"],
        "last_position": last["position"],
        "last_recorded_at": last["recorded_at"],
    }


def continue_chains(records: Sequence[dict[str, Any]], tips: dict[str, tuple[int, str]], position: int) -> int:
    """Number verbatim ``records`` (exported events) from after ``position``, each checked to continue its goal's chain as
    ``tips`` (goal -> its last version and chain hash, none: a new goal) has it, which they advance; returns the last
    position. A record that does not continue its goal (the next version, linked to the previous chain hash) raises
    :class:`LedgerError`: verbatim records never fork a goal (``Store.insert_verbatim``)."""
    for record in records:
        goal = record["goal_id"]
        version, chain = tips.get(goal, (0, canonical.GENESIS_HASH))
        if (record["stream_version"], record["prev_hash"]) != (version + 1, chain):
            raise LedgerError(f"goal {goal!r}: event {record['event_id']} does not continue its chain at version {version} here")
        tips[goal] = (version + 1, record["chain_hash"])
        position += 1
        record["position"] = position
    return position
