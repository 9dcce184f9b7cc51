"""The append algorithm: how a batch of new events passes the store's guard and joins the goals' hash chains.

Before the lock, :func:`prepared_appends` computes everything it can (canonical
bodies, payload hashes, event ids: :class:`Prepared`) and runs the store's guard
(:mod:`benchledger.ledger.storage.guard`), unless a receipt of this process
(:func:`guard_receipt`) says it passed the same content already.
:func:`append_locked` runs inside the writer's transaction, once the append
lock is held (:mod:`benchledger.ledger.storage.store` takes it): it reads the goals'
heads, numbers the new events (global position, stream version), chains their
hashes and writes them with one insert.
"""

from __future__ import annotations

import hmac
import io
import json
import secrets
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, and_, bindparam, exists, insert, select
from sqlalchemy.exc import DBAPIError

from benchledger.errors import InconsistentHead, VersionConflict
from benchledger.ledger.storage import canonical, merkle_log
from benchledger.ledger.storage.event_records import (
    EVENT_COLUMNS,
    Appended,
    Prepared,
    StreamAppend,
    chained_record,
    event_from_record,
    record_values,
    utc_timestamp,
    validate_goal_id,
)
from benchledger.ledger.storage.guard import Storable, refuse_unstorable, storage_problems
from benchledger.ledger.storage.schema import events, stream_heads
from benchledger.ledger.storage.transaction import Transaction, chunked_rows

# The key of this process's guard receipts (:func:`guard_receipt`): random, never stored nor
# shown, so that only the store's guard can make a receipt, and one holds in no other process.
_RECEIPT_KEY = secrets.token_bytes(32)


def prepared_appends(
    appends: Sequence[StreamAppend], source: str, *, guard: bool, receipts: Collection[bytes] = ()
) -> list[tuple[StreamAppend, list[Prepared]]]:
    """``appends`` prepared for :func:`append_locked` (before any lock), once the store's guard let them through
    (if ``guard``: a persistent ledger).

    An append holding one of ``receipts`` was let through already: the receipt covers every column and
    payload the guard judges, so it is checked instead of the guard running over the same content again.
    """
    prepared = _prepared(appends)
    if guard:
        unjudged = [p for p in prepared if _receipt(p, source) not in receipts] if receipts else prepared
        refuse_unstorable(_storables(unjudged, source))
    return prepared


def unstorable_problems(appends: Sequence[StreamAppend], *, source: str) -> list[tuple[str, str]]:
    """What the store's guard would refuse in ``appends``, as ``(where, problem)``, without writing or locking.

    For a validation pass that must name every problem of an input before
    anything is appended (``ingest-batches``, and the chunks of an ingest after
    its first refusal); the append itself runs the same guard again.
    """
    return storage_problems(_storables(_prepared(appends), source))


def guard_receipt(append: StreamAppend, *, source: str) -> tuple[list[tuple[str, str]], bytes | None]:
    """What the store's guard refuses in ``append`` (as :func:`unstorable_problems`), and its receipt when nothing.

    The receipt is a keyed hash (:data:`_RECEIPT_KEY`) of every column and
    payload the guard judged: given to :meth:`benchledger.ledger.storage.store.Store.append_streams` in this
    process, it lets exactly this content be appended without guarding it a
    second time (``ingest-batches`` guards every line while validating the
    file, then appends it); any other content is guarded as always.
    """
    prepared = _prepared([append])
    problems = storage_problems(_storables(prepared, source))
    return problems, None if problems else _receipt(prepared[0], source)


def _receipt(prepared: tuple[StreamAppend, list[Prepared]], source: str) -> bytes:
    request, events_of_goal = prepared
    judged = [request.goal_id, source, *([p.new.kind, p.new.schema_version, p.digest] for p in events_of_goal)]
    return hmac.digest(_RECEIPT_KEY, json.dumps(judged).encode(), "sha256")


def _prepared(appends: Sequence[StreamAppend]) -> list[tuple[StreamAppend, list[Prepared]]]:
    prepared: list[tuple[StreamAppend, list[Prepared]]] = []
    for request in appends:
        validate_goal_id(request.goal_id)
        events_of_goal = []
        for new in request.events:
            body, digest = new.canonical
            events_of_goal.append(Prepared(new, body, digest, new.event_id(request.goal_id), new.earlier_id(request.goal_id)))
        prepared.append((request, events_of_goal))
    return prepared


def _storables(prepared: list[tuple[StreamAppend, list[Prepared]]], source: str) -> Iterator[Storable]:
    for request, events_of_goal in prepared:
        for p in events_of_goal:
            yield Storable(request.goal_id, p.new.kind, p.new.schema_version, source, p.new.payload, p.body, p.new.origin)


# Statements built once: constructing and cache-keying a Core statement costs
# more than running it on SQLite, and every append runs them.
_LAST_EVENT = select(events.c.position, events.c.recorded_at).order_by(events.c.position.desc()).limit(1)
# Each goal's head with what it is checked against: the event at the head's version (one lookup of the
# (goal_id, stream_version) index) and whether any event follows it (another).
_HEAD_EVENT = events.alias("head_event")
_LATER_EVENT = events.alias("later_event")
_HEADS_OF = (
    select(
        stream_heads,
        _HEAD_EVENT.c.chain_hash.label("event_chain_hash"),
        _HEAD_EVENT.c.position.label("event_position"),
        _HEAD_EVENT.c.recorded_at.label("event_recorded_at"),
        exists()
        .where(_LATER_EVENT.c.goal_id == stream_heads.c.goal_id, _LATER_EVENT.c.stream_version > stream_heads.c.last_version)
        .label("events_after"),
    )
    .select_from(
        stream_heads.outerjoin(
            _HEAD_EVENT, and_(_HEAD_EVENT.c.goal_id == stream_heads.c.goal_id, _HEAD_EVENT.c.stream_version == stream_heads.c.last_version)
        )
    )
    .where(stream_heads.c.goal_id.in_(bindparam("goal_ids", expanding=True)))
)
# The goals among those without a head that hold events anyway (an index lookup each).
_GOALS_WITH_EVENTS = select(events.c.goal_id).where(events.c.goal_id.in_(bindparam("goal_ids", expanding=True))).distinct()
_INSERT_EVENTS = insert(events)
_INSERT_HEADS = insert(stream_heads)
_UPDATE_HEAD = (
    stream_heads.update()
    .where(stream_heads.c.goal_id == bindparam("head_goal_id"))
    .values({name: bindparam(name) for name in ("last_version", "last_chain_hash", "last_position", "last_recorded_at")})
)


def append_locked(tx: Transaction, prepared: list[tuple[StreamAppend, list[Prepared]]], source: str) -> list[list[Appended]]:
    """Write the prepared appends under the append lock: heads, positions, chains, one insert for all events."""
    connection = tx.connection
    goal_ids = list(dict.fromkeys(request.goal_id for request, _ in prepared))
    heads = {row.goal_id: row for row in chunked_rows(connection, _HEADS_OF, "goal_ids", goal_ids)}
    _refuse_inconsistent_heads(connection, goal_ids, heads)
    # goal -> [version, chain hash] as the appends advance it
    tips = {
        goal: [heads[goal].last_version, heads[goal].last_chain_hash] if goal in heads else [0, canonical.GENESIS_HASH]
        for goal in goal_ids
    }
    last = connection.execute(_LAST_EVENT).first()
    position = last.position if last else 0
    # recorded_at never goes backwards along positions, even if the clock does, nor along a goal's
    # stream (whose last event a merge may have placed before the ledger's last: ``service.merge``).
    recorded_at = max([utc_timestamp(), *([last.recorded_at] if last else []), *(head.last_recorded_at for head in heads.values())])

    existing = tx.events_by_id(
        event_id for _, events_of_goal in prepared for p in events_of_goal for event_id in (p.event_id, p.earlier_id) if event_id
    )
    rows: list[dict[str, Any]] = []
    outcomes: list[list[Appended]] = []
    for request, events_of_goal in prepared:
        goal_id, tip = request.goal_id, tips[request.goal_id]
        if request.expected_version is not None and request.expected_version != tip[0]:
            raise VersionConflict(goal_id, request.expected_version, tip[0])
        outcome: list[Appended] = []
        for p in events_of_goal:
            if p.event_id in existing:
                outcome.append(Appended(existing[p.event_id], "duplicate"))
                continue
            earlier = existing.get(p.earlier_id) if p.earlier_id else None
            if earlier is not None and p.new.same_observation(earlier):
                outcome.append(Appended(earlier, "duplicate"))
                continue
            tip[0] += 1
            position += 1
            row = chained_record(
                tip[1],
                position=position,
                event_id=p.event_id,
                goal_id=goal_id,
                stream_version=tip[0],
                kind=p.new.kind,
                schema_version=p.new.schema_version,
                payload=p.body,
                payload_sha256=p.digest,
                source_sha256=p.new.source_sha256,
                recorded_at=recorded_at,
                source=source,
            )
            tip[1] = row["chain_hash"]
            stored = event_from_record(row)
            existing[p.event_id] = stored
            rows.append(row)
            outcome.append(Appended(stored, "appended"))
        outcomes.append(outcome)
    if rows:
        if connection.dialect.driver == "psycopg2":
            _copy_events(connection, rows)
        else:
            connection.execute(_INSERT_EVENTS, rows)
        merkle_log.extend(tx, rows[0]["position"], [row["chain_hash"] for row in rows])  # the log grows with the events
        last_position = {row["goal_id"]: row["position"] for row in rows}

        def head_values(goal: str) -> dict[str, Any]:
            return {"last_version": tips[goal][0], "last_chain_hash": tips[goal][1], "last_position": last_position[goal], "last_recorded_at": recorded_at}

        updated = [{"head_goal_id": goal, **head_values(goal)} for goal in last_position if goal in heads]
        created = [{"goal_id": goal, **head_values(goal)} for goal in last_position if goal not in heads]
        if updated:
            connection.execute(_UPDATE_HEAD, updated)
        if created:
            connection.execute(_INSERT_HEADS, created)
    return outcomes


def _refuse_inconsistent_heads(connection: Connection, goal_ids: Sequence[str], heads: Mapping[str, Any]) -> None:
    """Refuse to append to a goal whose head is not its last event, or that holds events but no head.

    The head gives the next version and chain link: built on a head edited
    outside benchledger, the append would commit events whose link or version is
    wrong, a tamper of a mutable table made permanent in the immutable events.
    """
    for goal in goal_ids:
        head = heads.get(goal)
        if head is None:
            continue
        if head.events_after or (head.event_chain_hash, head.event_position, head.event_recorded_at) != (
            head.last_chain_hash,
            head.last_position,
            head.last_recorded_at,
        ):
            raise InconsistentHead(goal, f"its stream head (version {head.last_version}) is not its last event")
    unheaded = [goal for goal in goal_ids if goal not in heads]
    for goal in chunked_rows(connection, _GOALS_WITH_EVENTS, "goal_ids", unheaded):
        raise InconsistentHead(goal.goal_id, "it holds events but no stream head")


def _copy_events(connection: Connection, rows: Sequence[Mapping[str, Any]]) -> None:
    """Insert event records on PostgreSQL (psycopg2) with ``COPY ... FROM STDIN``, in this transaction.

    A multi-row ``INSERT`` of ~1.4 KB payloads spends most of its time in the
    server parsing the statement's literals: COPY of the same rows took about
    a third of the time. Triggers and constraints apply to COPY as to INSERT.
    """
    data = io.StringIO("".join("\t".join(map(_copy_text, record_values(row))) + "\n" for row in rows))
    dbapi = connection.dialect.loaded_dbapi
    try:
        with connection.connection.cursor() as cursor:
            cursor.copy_expert(_COPY_EVENTS, data)
    except dbapi.Error as exc:  # (raised by the driver, not through SQLAlchemy: wrapped as SQLAlchemy wraps every other)
        raise DBAPIError.instance(_COPY_EVENTS, None, exc, dbapi.Error, dialect=connection.dialect) from exc


_COPY_EVENTS = f"COPY events ({', '.join(EVENT_COLUMNS)}) FROM STDIN"
# COPY's text format: a backslash, a tab, a newline or a carriage return in a value is escaped; \N is NULL.
_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def _copy_text(value: Any) -> str:
    if value is None:
        return "\\N"
    text = str(value)
    return text.translate(_COPY_ESCAPES) if "\\" in text or "\t" in text or "\n" in text or "\r" in text else text
