"""Reads and projection-row writes inside one open transaction, with their statements.

A :class:`Transaction` wraps the connection of a transaction the store opened
(:meth:`benchledger.ledger.storage.store.Store.transaction`, or a read of
:meth:`~benchledger.ledger.storage.store.Store.reading`): an append's look-ups
by id, an ingest's materialization and the folds of a replay, an audit or a
rebuild read and write through it, so that the service room
(``benchledger.ledger.service``) holds no SQL (``tests/unit/test_layers.py``).
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from sqlalchemy import ARRAY, Connection, String, and_, any_, bindparam, exists, func, select, union

from benchledger.ledger.storage.event_records import StoredEvent, head_record, row_to_event
from benchledger.ledger.storage.schema import events, projection_counts, projection_rows, stream_heads
from benchledger.projections import goal_archive


class Transaction:
    """Reads and projection writes inside one open transaction (used by appends, ingests, replays and audits)."""

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

    def goal_events_of_kind(self, goal_ids: Sequence[str], kind: str) -> dict[str, list[StoredEvent]]:
        """The events of ``kind`` of each of ``goal_ids``, in stream order (goals without one are left out; one
        range of the (goal_id, kind) index a goal)."""
        found: dict[str, list[StoredEvent]] = {}
        query = _EVENTS_OF_GOALS_UNORDERED.where(events.c.kind == kind)
        for row in chunked_rows(self.connection, query, "goal_ids", list(goal_ids)):
            found.setdefault(row.goal_id, []).append(row_to_event(row))
        for goal_events in found.values():
            goal_events.sort(key=lambda event: event.stream_version)
        return found

    def first_events_of_goals(self, goal_ids: Sequence[str], *, upto_position: int, limit: int) -> list[StoredEvent]:
        """The first ``limit`` events of ``goal_ids`` up to ``upto_position``: goal by goal (in the database's order
        of ids), each in stream order (a page of a fold's read: :func:`benchledger.ledger.service.folding.events_of`)."""
        query = (
            select(events)
            .where(events.c.goal_id.in_(bindparam("goal_ids", expanding=True)), events.c.position <= upto_position)
            .order_by(events.c.goal_id, events.c.stream_version)
            .limit(limit)
        )
        return list(map(row_to_event, self.connection.execute(query, {"goal_ids": list(goal_ids)}).all()))

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

    def heads_of(self, goal_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The stream heads of those of ``goal_ids`` the ledger holds, by goal id."""
        query = select(stream_heads).where(stream_heads.c.goal_id.in_(bindparam("goal_ids", expanding=True)))
        return {row.goal_id: dict(row._mapping) for row in chunked_rows(self.connection, query, "goal_ids", list(dict.fromkeys(goal_ids)))}

    def archived_goals(self, goal_ids: Sequence[str]) -> set[str]:
        """Those of ``goal_ids`` that are archived (``projections.goal_archive``): their archive marks alone are read."""
        marks: dict[str, list[str]] = {}
        for row in chunked_rows(self.connection, _ARCHIVE_MARKS_OF_GOALS, "goal_ids", list(dict.fromkeys(goal_ids))):
            marks.setdefault(row.goal_id, []).append(row.kind)
        return {goal_id for goal_id, kinds in marks.items() if goal_archive.is_archived(kinds)}

    def goal_ids(self) -> list[str]:
        """Every goal's id (its stream head's), sorted."""
        return list(self.connection.execute(select(stream_heads.c.goal_id).order_by(stream_heads.c.goal_id)).scalars())

    def set_heads(self, heads: Sequence[Mapping[str, Any]]) -> None:
        """Store these stream heads (:func:`head_record`), replacing the goals' heads the ledger holds."""
        if heads:
            self.connection.execute(_set_heads(self.connection.dialect.name), list(heads))

    def chain_page(self, goal_id: str, *, after_version: int, limit: int) -> list[tuple[int, str, str, str, str]]:
        """``(stream_version, chain_hash, event_id, kind, recorded_at)`` of the goal's first ``limit`` events after
        ``after_version``: where two copies of a goal part, read without payloads."""
        query = (
            select(events.c.stream_version, events.c.chain_hash, events.c.event_id, events.c.kind, events.c.recorded_at)
            .where(events.c.goal_id == goal_id, events.c.stream_version > after_version)
            .order_by(events.c.stream_version)
            .limit(limit)
        )
        return [tuple(row) for row in self.connection.execute(query)]

    def rebuild_heads(self, goal_id: str | None = None) -> int:
        """Make the stream heads (of ``goal_id``, or all) what the events say: each goal's last event, no head for a goal
        without events; returns how many heads that inserted, corrected or deleted (none in a healthy ledger).

        A head edited or deleted outside benchledger makes appends to its goal refuse
        (:class:`~benchledger.errors.InconsistentHead`); ``replay`` rebuilds it with this.
        """
        tails = _TAILS if goal_id is None else _TAILS.where(events.c.goal_id == goal_id)
        wanted = {row.goal_id: head_record(row._mapping) for row in self.connection.execute(tails)}
        heads = select(stream_heads) if goal_id is None else select(stream_heads).where(stream_heads.c.goal_id == goal_id)
        stale = []
        for row in self.connection.execute(heads):
            if wanted.get(row.goal_id) == dict(row._mapping):
                del wanted[row.goal_id]
            elif row.goal_id not in wanted:
                stale.append({"stale_goal_id": row.goal_id})
        if wanted:
            self.connection.execute(_set_heads(self.connection.dialect.name), list(wanted.values()))
        if stale:
            self.connection.execute(_DELETE_HEAD, stale)
        return len(wanted) + len(stale)

    def goals_without_head(self) -> list[str]:
        """The goals (ascending ids) that hold projection rows or row counts but no stream head: a ledger's goal
        always has a head, so these rows were stored outside benchledger (``audit`` names them, ``replay`` deletes them)."""
        return list(self.connection.execute(_GOALS_WITHOUT_HEAD).scalars())

    def last_position(self) -> int:
        """The highest event position (0 for an empty ledger)."""
        return self.connection.execute(select(func.coalesce(func.max(events.c.position), 0))).scalar_one()

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
        changed = [row for row in rows if stored.pop(_row_key(row), None) != tuple(row[name] for name in PROJECTION_ROW_COLUMNS)]
        return changed, list(stored)

    def stored_rows_of_goals(
        self, goal_ids: Sequence[str], *, projection: str | None, goals_per_read: int
    ) -> dict[str, dict[tuple[str, str], tuple[Any, ...]]]:
        """The stored rows of ``goal_ids`` (all projections, or one) as tuples in column order, by goal and by
        (projection, key); read ``goals_per_read`` goals at a time."""
        stored: dict[str, dict[tuple[str, str], tuple[Any, ...]]] = {}
        for start in range(0, len(goal_ids), goals_per_read):
            query = select(projection_rows).where(projection_rows.c.goal_id.in_(goal_ids[start : start + goals_per_read]))
            if projection is not None:
                query = query.where(projection_rows.c.projection == projection)
            # (by index: a replay reads every stored row, and a Row's attribute costs more than the tuple's item)
            for row in map(tuple, self.connection.execute(query)):
                stored.setdefault(row[_GOAL_AT], {})[(row[_PROJECTION_AT], row[_KEY_AT])] = row
        return stored

    def stored_rows_of_keys(self, goal_id: str, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], tuple[Any, ...]]:
        """The stored rows of ``goal_id`` keyed (projection, key) ``keys`` (those stored), as tuples in column order."""
        by_projection: dict[str, list[str]] = {}
        for projection, key in keys:
            by_projection.setdefault(projection, []).append(key)
        stored = {}
        rows = projection_rows.c
        for projection, names in by_projection.items():
            for start in range(0, len(names), 500):
                query = select(projection_rows).where(rows.projection == projection, rows.goal_id == goal_id, rows.key.in_(names[start : start + 500]))
                stored.update(((row.projection, row.key), tuple(row)) for row in self.connection.execute(query))
        return stored

    def stored_row_keys(self, goal_id: str, *, projection: str | None, per_fetch: int) -> Iterator[tuple[str, str, int]]:
        """The (projection, key, position) of each stored row of ``goal_id`` (all projections, or one), fetched
        ``per_fetch`` at a time (a large goal's keys are not held at once); run no other statement until it ends."""
        rows = projection_rows.c
        query = select(rows.projection, rows.key, rows.position).where(rows.goal_id == goal_id)
        if projection is not None:
            query = query.where(rows.projection == projection)
        yield from self.connection.execute(query.execution_options(yield_per=per_fetch))

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
# No ORDER BY: ordered by (goal_id, stream_version), SQLite reads the goal's whole range of the
# primary-key index instead of the (goal_id, kind) range (EXPLAIN QUERY PLAN), so an ingest's cost
# grew with its goal's past; the few events of a kind are sorted after reading.
_EVENTS_OF_GOALS_UNORDERED = select(events).where(events.c.goal_id.in_(bindparam("goal_ids", expanding=True)))
# A goal's archive and unarchive marks in stream order (the later decides), from the (goal_id, kind) index.
_ARCHIVE_MARKS_OF_GOALS = (
    select(events.c.goal_id, events.c.kind)
    .where(events.c.goal_id.in_(bindparam("goal_ids", expanding=True)), events.c.kind.in_(goal_archive.KINDS))
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
# Each goal's last event (by version: one pass over the (goal_id, stream_version) index, then a lookup of it).
_LAST_VERSIONS = select(events.c.goal_id, func.max(events.c.stream_version).label("last_version")).group_by(events.c.goal_id).subquery()
_TAILS = select(events.c.goal_id, events.c.stream_version, events.c.chain_hash, events.c.position, events.c.recorded_at).join_from(
    events, _LAST_VERSIONS, and_(events.c.goal_id == _LAST_VERSIONS.c.goal_id, events.c.stream_version == _LAST_VERSIONS.c.last_version)
)
_DELETE_HEAD = stream_heads.delete().where(stream_heads.c.goal_id == bindparam("stale_goal_id"))
# (the distinct goals of the rows' and of the counts' goal indexes, each looked up once among the heads)
_HELD_GOALS = union(select(projection_rows.c.goal_id).distinct(), select(projection_counts.c.goal_id).distinct()).subquery()
_GOALS_WITHOUT_HEAD = (
    select(_HELD_GOALS.c.goal_id)
    .where(~exists().where(stream_heads.c.goal_id == _HELD_GOALS.c.goal_id))
    .order_by(_HELD_GOALS.c.goal_id)
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


# The projection rows' columns, in table order: the order of a stored row read as a tuple.
PROJECTION_ROW_COLUMNS = tuple(column.name for column in projection_rows.c)
# The primary key is the table's first columns: a stored row's key is the start of its tuple.
_KEY_WIDTH = len(projection_rows.primary_key.columns)
_PROJECTION_AT, _GOAL_AT, _KEY_AT = map(PROJECTION_ROW_COLUMNS.index, ("projection", "goal_id", "key"))
assert PROJECTION_ROW_COLUMNS[:_KEY_WIDTH] == _KEY_NAMES


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
        index_elements=_KEY_NAMES, set_={name: statement.excluded[name] for name in PROJECTION_ROW_COLUMNS if name not in _KEY_NAMES}
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
def _set_heads(dialect: str) -> Any:
    statement = _dialect_insert(dialect, stream_heads)
    return statement.on_conflict_do_update(
        index_elements=[stream_heads.c.goal_id], set_={column.name: statement.excluded[column.name] for column in stream_heads.c if not column.primary_key}
    )


@functools.cache
def _set_projection_counts(dialect: str) -> Any:
    statement = _dialect_insert(dialect, projection_counts)
    return statement.on_conflict_do_update(index_elements=_COUNT_KEY_NAMES, set_={"row_count": statement.excluded.row_count})


def chunked_rows(connection: Connection, statement: Any, name: str, values: Sequence[Any], size: int = 500) -> Iterator[Any]:
    """Rows of ``statement`` with its expanding parameter ``name`` bound to ``values``, ``size`` at a time."""
    for start in range(0, len(values), size):
        yield from connection.execute(statement, {name: list(values[start : start + size])})
