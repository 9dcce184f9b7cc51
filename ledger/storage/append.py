"""The append algorithm: how a batch of new events joins the goals' hash chains.

:func:`append_locked` runs inside the writer's transaction, once the append
lock is held (:mod:`benchledger.ledger.storage.store` takes it): it reads the goals'
heads, numbers the new events (global position, stream version), chains their
hashes and writes them with one insert. Everything that can be computed before
the lock (canonical bodies, payload hashes, event ids) is, in :class:`Prepared`.
"""

from __future__ import annotations

import collections
import functools
import io
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from sqlalchemy import ARRAY, Connection, String, any_, bindparam, func, insert, select
from sqlalchemy.exc import DBAPIError

from benchledger.errors import VersionConflict
from benchledger.ledger.storage import canonical
from benchledger.ledger.storage.event_records import (
    EVENT_COLUMNS,
    Appended,
    Prepared,
    StoredEvent,
    StreamAppend,
    chained_record,
    event_from_record,
    record_values,
    row_to_event,
    utc_timestamp,
)
from benchledger.ledger.storage.schema import events, projection_counts, projection_rows, stream_heads


class Transaction:
    """Reads and projection writes inside one open transaction (used by appends and replays)."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    def read_goal(
        self,
        goal_id: str,
        *,
        upto_position: int | None = None,
        kinds: Sequence[str] | None = None,
        after_version: int = 0,
        limit: int | None = None,
    ) -> list[StoredEvent]:
        """The goal's events in stream order (those after stream version ``after_version``, up to ``upto_position``, of ``kinds``; the first ``limit``)."""
        query = select(events).where(events.c.goal_id == goal_id)
        if after_version:
            query = query.where(events.c.stream_version > after_version)
        if upto_position is not None:
            query = query.where(events.c.position <= upto_position)
        if kinds is not None:
            query = query.where(events.c.kind.in_(kinds))
        return [row_to_event(r) for r in self.connection.execute(query.order_by(events.c.stream_version).limit(limit))]

    def projection_row_of_goals(self, goal_ids: Sequence[str], projection: str, key: str) -> dict[str, dict[str, Any]]:
        """Each goal's stored row ``key`` of ``projection`` (goals without one are left out)."""
        query = select(projection_rows).where(
            projection_rows.c.projection == projection,
            projection_rows.c.key == key,
            projection_rows.c.goal_id.in_(bindparam("goal_ids", expanding=True)),
        )
        return {row.goal_id: dict(row._mapping) for row in chunked_rows(self.connection, query, "goal_ids", list(goal_ids))}

    def heads(self, *, after: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """The goals' stream heads by goal id (those after ``after``, at most ``limit``: a page)."""
        query = select(stream_heads).order_by(stream_heads.c.goal_id).limit(limit)
        if after is not None:
            query = query.where(stream_heads.c.goal_id > after)
        return [dict(r._mapping) for r in self.connection.execute(query)]

    def last_position(self) -> int:
        """The highest event position (0 for an empty ledger)."""
        return self.connection.execute(select(func.coalesce(func.max(events.c.position), 0))).scalar_one()

    def read_goals(self, goal_ids: Sequence[str]) -> dict[str, list[StoredEvent]]:
        """Several goals' events (each in stream order) in a few queries."""
        found: dict[str, list[StoredEvent]] = {goal: [] for goal in goal_ids}
        for row in chunked_rows(self.connection, _EVENTS_OF_GOALS, "goal_ids", list(found)):
            found[row.goal_id].append(row_to_event(row))
        return found

    def events_by_id(self, event_ids: Iterable[str]) -> dict[str, StoredEvent]:
        ids = list(dict.fromkeys(event_ids))
        if self.connection.dialect.name == "postgresql":
            rows = chunked_rows(self.connection, _EVENTS_BY_ID_ARRAY, "event_ids", ids, size=_ID_ARRAY_SIZE)
        else:
            rows = chunked_rows(self.connection, _EVENTS_BY_ID, "event_ids", ids)
        return {event.event_id: event for event in map(row_to_event, rows)}

    def projection_rows_diff(
        self, goal_ids: Sequence[str], rows: Sequence[dict[str, Any]], *, projection: str | None = None
    ) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]]]:
        """What making the stored rows of ``goal_ids`` (all projections, or one) exactly ``rows`` changes:
        the rows that differ from the stored ones, and the keys of stored rows not in ``rows``.

        Only those are written or deleted (:meth:`write_projection_rows_diff`): a replay of a healthy
        ledger reads its rows and writes nothing.
        """
        query = select(projection_rows).where(projection_rows.c.goal_id.in_(bindparam("goal_ids", expanding=True)))
        if projection is not None:
            query = query.where(projection_rows.c.projection == projection)
        # (compared as tuples in column order: a replay reads every stored row of the ledger)
        stored = {tuple(row[:_KEY_WIDTH]): tuple(row) for row in chunked_rows(self.connection, query, "goal_ids", list(goal_ids))}
        changed = [row for row in rows if stored.pop(_row_key(row), None) != tuple(row[name] for name in _ROW_COLUMNS)]
        return changed, list(stored)

    def write_projection_rows_diff(self, goal_ids: Sequence[str], changed: Sequence[dict[str, Any]], unwanted: Sequence[tuple[Any, ...]]) -> int:
        """Write ``changed`` over the stored rows of ``goal_ids``, delete the rows keyed ``unwanted``, and recount
        the goals' rows (:meth:`recount_projection_rows`); returns how many stored counts that repaired."""
        if changed:
            self.connection.execute(_upsert_projection_rows(self.connection.dialect.name), list(changed))
        self.delete_projection_rows(unwanted)
        return self.recount_projection_rows(goal_ids)

    def delete_projection_rows(self, keys: Sequence[tuple[Any, ...]]) -> None:
        """Delete the projection rows keyed ``keys``; the stored counts are left for the caller to recount
        (:meth:`recount_projection_rows`, as :meth:`write_projection_rows_diff` does)."""
        if keys:
            self.connection.execute(_DELETE_PROJECTION_ROW, [dict(zip(_KEY_NAMES, key)) for key in keys])

    def upsert_projection_rows(self, rows: Sequence[dict[str, Any]]) -> None:
        """Write ``rows`` over the stored rows with the same projection, goal and key; keep the others.

        The rows this inserts are added to the stored counts (``projection_counts``), in this transaction.
        """
        if not rows:
            return
        dialect = self.connection.dialect.name
        inserted = {tuple(key) for key in self.connection.execute(_insert_new_projection_rows(dialect), list(rows))}
        existing = [row for row in rows if _row_key(row) not in inserted]
        if existing:
            self.connection.execute(_upsert_projection_rows(dialect), existing)
        added = collections.Counter((goal_id, projection) for projection, goal_id, _ in inserted)
        if added:
            counts = [{"goal_id": goal_id, "projection": projection, "row_count": n} for (goal_id, projection), n in added.items()]
            self.connection.execute(_add_to_projection_counts(dialect), counts)

    def recount_projection_rows(self, goal_ids: Sequence[str]) -> int:
        """Make the stored counts of ``goal_ids`` the numbers of rows they hold (after a goal's rows are rebuilt:
        it repairs whatever count differs; only those are written); returns how many it wrote or deleted."""
        counted = {(g, p): n for g, p, n in chunked_rows(self.connection, _COUNT_PROJECTION_ROWS, "goal_ids", list(goal_ids))}
        stale = []
        for goal_id, projection, row_count in chunked_rows(self.connection, _PROJECTION_COUNTS_OF_GOALS, "goal_ids", list(goal_ids)):
            if counted.get((goal_id, projection)) == row_count:
                del counted[goal_id, projection]
            elif (goal_id, projection) not in counted:
                stale.append({"stale_goal_id": goal_id, "stale_projection": projection})
        if counted:
            counts = [{"goal_id": goal_id, "projection": projection, "row_count": n} for (goal_id, projection), n in counted.items()]
            self.connection.execute(_set_projection_counts(self.connection.dialect.name), counts)
        if stale:
            self.connection.execute(_DELETE_PROJECTION_COUNT, stale)
        return len(counted) + len(stale)

    def projection_counts(self, goal_id: str) -> dict[str, int]:
        """How many rows each of the goal's projections holds, as stored (by projection name)."""
        return dict(self.connection.execute(_PROJECTION_COUNTS_OF_GOAL, {"goal_id": goal_id}).all())


# Statements built once: constructing and cache-keying a Core statement costs
# more than running it on SQLite, and appends run them on every ingest.
_EVENTS_BY_ID = select(events).where(events.c.event_id.in_(bindparam("event_ids", expanding=True)))
# PostgreSQL: one array parameter, not an IN list of as many literals for the server to parse
# (an append looks up every new event's ids, and psycopg2 sends parameters as literals).
_EVENTS_BY_ID_ARRAY = select(events).where(events.c.event_id == any_(bindparam("event_ids", type_=ARRAY(String))))
_ID_ARRAY_SIZE = 10_000
_EVENTS_OF_GOALS = (
    select(events)
    .where(events.c.goal_id.in_(bindparam("goal_ids", expanding=True)))
    .order_by(events.c.goal_id, events.c.stream_version)
)
# One key a statement, executed many: SQLite answers ``(a, b, c) IN (...)`` by scanning the
# whole table (EXPLAIN QUERY PLAN: SCAN projection_rows), so a replay or retraction that drops
# a few rows paid for every row of the ledger; an equality on the primary key is one lookup.
_KEY_NAMES = tuple(column.name for column in projection_rows.primary_key.columns)
_DELETE_PROJECTION_ROW = projection_rows.delete().where(
    *(column == bindparam(column.name) for column in projection_rows.primary_key.columns)
)
_COUNT_PROJECTION_ROWS = (
    select(projection_rows.c.goal_id, projection_rows.c.projection, func.count())
    .where(projection_rows.c.goal_id.in_(bindparam("goal_ids", expanding=True)))
    .group_by(projection_rows.c.goal_id, projection_rows.c.projection)
)
_PROJECTION_COUNTS_OF_GOALS = select(projection_counts).where(projection_counts.c.goal_id.in_(bindparam("goal_ids", expanding=True)))
_PROJECTION_COUNTS_OF_GOAL = (
    select(projection_counts.c.projection, projection_counts.c.row_count)
    .where(projection_counts.c.goal_id == bindparam("goal_id"))
    .order_by(projection_counts.c.projection)
)
_DELETE_PROJECTION_COUNT = projection_counts.delete().where(
    projection_counts.c.goal_id == bindparam("stale_goal_id"), projection_counts.c.projection == bindparam("stale_projection")
)
_LAST_EVENT = select(events.c.position, events.c.recorded_at).order_by(events.c.position.desc()).limit(1)
_HEADS_OF = select(stream_heads).where(stream_heads.c.goal_id.in_(bindparam("goal_ids", expanding=True)))
_INSERT_EVENTS = insert(events)
_INSERT_HEADS = insert(stream_heads)
_UPDATE_HEAD = (
    stream_heads.update()
    .where(stream_heads.c.goal_id == bindparam("head_goal_id"))
    .values({name: bindparam(name) for name in ("last_version", "last_chain_hash", "last_position", "last_recorded_at")})
)


_ROW_COLUMNS = tuple(column.name for column in projection_rows.c)
# The primary key is the table's first columns: a stored row's key is the start of its tuple.
_KEY_WIDTH = len(projection_rows.primary_key.columns)
assert _ROW_COLUMNS[:_KEY_WIDTH] == _KEY_NAMES


def _row_key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """A projection row's primary key, in the table's column order."""
    return tuple(row[name] for name in _KEY_NAMES)


def _dialect_insert(dialect: str, table: Any) -> Any:
    """``INSERT`` with ``ON CONFLICT`` for ``table`` (both backends spell it alike)."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as dialect_insert
    else:
        from sqlalchemy.dialects.sqlite import insert as dialect_insert
    return dialect_insert(table)


_COUNT_KEY_NAMES = [column.name for column in projection_counts.primary_key.columns]


@functools.cache
def _upsert_projection_rows(dialect: str) -> Any:
    """``INSERT ... ON CONFLICT (primary key) DO UPDATE`` for the projection rows."""
    statement = _dialect_insert(dialect, projection_rows)
    return statement.on_conflict_do_update(
        index_elements=_KEY_NAMES, set_={name: statement.excluded[name] for name in _ROW_COLUMNS if name not in _KEY_NAMES}
    )


@functools.cache
def _insert_new_projection_rows(dialect: str) -> Any:
    """Insert the projection rows not stored yet, returning the keys of those it inserted (for the counts)."""
    return _dialect_insert(dialect, projection_rows).on_conflict_do_nothing(index_elements=_KEY_NAMES).returning(*projection_rows.primary_key.columns)


@functools.cache
def _add_to_projection_counts(dialect: str) -> Any:
    statement = _dialect_insert(dialect, projection_counts)
    return statement.on_conflict_do_update(
        index_elements=_COUNT_KEY_NAMES, set_={"row_count": projection_counts.c.row_count + statement.excluded.row_count}
    )


@functools.cache
def _set_projection_counts(dialect: str) -> Any:
    statement = _dialect_insert(dialect, projection_counts)
    return statement.on_conflict_do_update(index_elements=_COUNT_KEY_NAMES, set_={"row_count": statement.excluded.row_count})


def append_locked(tx: Transaction, prepared: list[tuple[StreamAppend, list[Prepared]]], source: str) -> list[list[Appended]]:
    """Write the prepared appends under the append lock: heads, positions, chains, one insert for all events."""
    connection = tx.connection
    goal_ids = list(dict.fromkeys(request.goal_id for request, _ in prepared))
    heads = {row.goal_id: row for row in chunked_rows(connection, _HEADS_OF, "goal_ids", goal_ids)}
    # goal -> [version, chain hash] as the appends advance it
    tips = {
        goal: [heads[goal].last_version, heads[goal].last_chain_hash] if goal in heads else [0, canonical.GENESIS_HASH]
        for goal in goal_ids
    }
    last = connection.execute(_LAST_EVENT).first()
    position = last.position if last else 0
    # recorded_at never goes backwards along positions, even if the clock does.
    recorded_at = max(utc_timestamp(), last.recorded_at) if last else utc_timestamp()

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


def chunked_rows(connection: Connection, statement: Any, name: str, values: Sequence[Any], size: int = 500) -> Iterator[Any]:
    """Rows of ``statement`` with its expanding parameter ``name`` bound to ``values``, ``size`` at a time."""
    for start in range(0, len(values), size):
        yield from connection.execute(statement, {name: list(values[start : start + size])})


