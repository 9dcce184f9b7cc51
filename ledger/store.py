"""The event store: append-only streams of events, one stream per goal.

One :class:`Ledger` serves both backends. Appends are serialized ledger-wide
(SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: a transaction-scoped advisory lock)
because global positions must be contiguous *and* follow commit order: with
sequence-assigned positions, a transaction that took position 7 could commit
after one that took 8, and a reader following positions would skip 7 forever.
Appends of compact artifacts are small, so one writer at a time costs little
and buys a gap-free, never-reordered global log.
"""

from __future__ import annotations

import functools
import json
import random
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Engine, bindparam, create_engine, event, func, insert, make_url, select, text, tuple_
from sqlalchemy.exc import DataError, OperationalError
from sqlalchemy.pool import StaticPool

from benchledger.ledger import canonical
from benchledger.ledger.json_paths import non_finite_numbers
from benchledger.ledger.schema import events, metadata, projection_rows, stream_heads

GOAL_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,120}")
# Any constant works; it only has to be the same for every benchledger writer.
APPEND_LOCK_KEY = 0x62656E63686C6467  # "benchldg"
SQLITE_BUSY_TIMEOUT_S = 5.0
LOCKED_RETRY_BUDGET_S = 60.0


class LedgerError(RuntimeError):
    """Base class of the store's errors; ``str()`` is a message for the user."""


class InvalidGoalId(LedgerError, ValueError):
    pass


class VersionConflict(LedgerError):
    """``expected_version`` did not match the goal's current version."""

    def __init__(self, goal_id: str, expected: int, actual: int) -> None:
        super().__init__(f"goal {goal_id!r} is at version {actual}, not the expected {expected}")
        self.goal_id, self.expected, self.actual = goal_id, expected, actual


class LedgerBusy(LedgerError):
    """Another writer held the SQLite ledger for longer than the retry budget."""


class CorruptEvent(LedgerError):
    """A stored event no longer decodes: the database was changed outside benchledger."""


class InvalidEvent(LedgerError, ValueError):
    """An event's stored columns would not fit the schema (checked alike on every backend)."""


# Column widths of ``events`` (ledger.schema); checked before writing so that
# SQLite, which ignores them, and PostgreSQL, which enforces them, agree.
_COLUMN_LIMITS = {"kind": 64, "schema_version": 128, "source": 64}


def validate_event_columns(kind: str, schema_version: str | None, source: str) -> None:
    for name, value in (("kind", kind), ("schema_version", schema_version), ("source", source)):
        if value is None:
            continue
        if len(value) > _COLUMN_LIMITS[name]:
            raise InvalidEvent(
                f"{name} is {len(value)} characters, longer than the {_COLUMN_LIMITS[name]} the ledger stores; nothing was written"
            )
        if "\x00" in value:
            raise InvalidEvent(f"{name} contains a NUL character; nothing was written")


def _refuse_non_finite(new: NewEvent, body: str) -> None:
    """A persistent ledger stores only JSON: NaN and infinities (which a review reads, as LoopX does) are refused.

    Their canonical text holds a ``NaN`` / ``Infinity`` token, so only a body
    that contains one is walked for the paths to name.
    """
    if "NaN" in body or "Infinity" in body:
        paths = non_finite_numbers(new.payload)
        if paths:
            raise InvalidEvent(
                f"{', '.join(paths)} of this {new.kind} is NaN or infinite; the ledger stores only finite numbers "
                "(fix the input, or run the review without --goal); nothing was written"
            )


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

    @functools.cached_property
    def canonical(self) -> tuple[str, str]:
        """The payload's canonical JSON and its hash (computed once: the batch manifest and the append both need it)."""
        body = canonical.canonical_json(self.payload)
        return body, canonical.sha256_hex(body)


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
            return json.loads(self.payload_text)
        except ValueError as exc:
            raise CorruptEvent(
                f"event {self.position} of goal {self.goal_id!r} does not hold JSON ({exc}): the ledger was changed "
                "outside benchledger (`benchledger audit` lists what differs)"
            ) from exc

    def as_record(self) -> dict[str, Any]:
        """Every stored field, with the payload kept as its canonical text."""
        return {column.name: getattr(self, _FIELD_OF_COLUMN.get(column.name, column.name)) for column in events.c}


_FIELD_OF_COLUMN = {"payload": "payload_text"}
_EVENT_COLUMNS = tuple(column.name for column in events.c)
# StoredEvent's fields are the events columns, in table order: a row (or a
# record read in that order) builds one positionally, which folds do for
# every event they read.
assert tuple(_FIELD_OF_COLUMN.get(name, name) for name in _EVENT_COLUMNS) == tuple(StoredEvent.__dataclass_fields__)


@dataclass(frozen=True)
class Appended:
    """The outcome for one input of an append: the stored event and whether it is new."""

    event: StoredEvent
    status: str  # "appended" | "duplicate"


def _event_from_record(record: Mapping[str, Any]) -> StoredEvent:
    """A :class:`StoredEvent` from an events-table record (a row about to be inserted)."""
    return StoredEvent(*(record[name] for name in _EVENT_COLUMNS))


def _row_to_event(row: Any) -> StoredEvent:
    """A :class:`StoredEvent` from a ``select(events)`` result row (its columns are in table order)."""
    return StoredEvent(*row)


def utc_timestamp(moment: datetime | None = None) -> str:
    moment = moment or datetime.now(UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def normalize_url(url: str) -> str:
    """``postgresql://`` and ``postgres://`` mean psycopg2 (the ``postgres`` extra); an explicit driver is kept."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg2://" + url[len(prefix):]
    return url


def create_ledger_engine(url: str) -> Engine:
    url = normalize_url(url)
    if url.startswith("sqlite"):
        in_memory = url in ("sqlite://", "sqlite:///:memory:")
        engine = create_engine(
            url,
            connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S, "check_same_thread": False},
            poolclass=StaticPool if in_memory else None,
        )
        _configure_sqlite(engine, wal=not in_memory)
        return engine
    # No pre-ping: a benchledger process is short-lived and opens few connections,
    # and a ping per checkout is a round trip on every query.
    options: dict[str, Any] = {}
    if make_url(url).get_driver_name() == "psycopg2":
        # psycopg2 runs an executemany as one round trip per row unless batched;
        # SQLAlchemy batches plain INSERTs itself but not the projection upsert
        # (INSERT .. ON CONFLICT) or the stream-head UPDATEs: 2,000 upserted rows
        # took 0.35 s unbatched, 0.15 s batched.
        options["executemany_mode"] = "values_plus_batch"
    return create_engine(url, **options)


def _enable_wal(cursor: Any) -> None:
    """Switch the file to WAL (a persistent setting: the first opener does it).

    Processes opening a fresh ledger at once may find the switch locked; SQLite
    reports that at once, without its busy wait, so retry for a bounded time.
    """
    import sqlite3

    deadline = time.monotonic() + LOCKED_RETRY_BUDGET_S
    delay = 0.01
    while True:
        try:
            if str(cursor.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            message = str(exc).lower()
            if "database is locked" not in message and "database is busy" not in message:
                raise
            if time.monotonic() >= deadline:
                raise LedgerBusy(
                    f"the ledger stayed locked by another process for {LOCKED_RETRY_BUDGET_S:.0f} s; try again"
                ) from exc
            time.sleep(delay * (1 + random.random()))
            delay = min(delay * 2, 1.0)


def _configure_sqlite(engine: Engine, *, wal: bool) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record) -> None:
        # Let SQLAlchemy, not the sqlite3 module, decide when transactions begin.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        if wal:
            _enable_wal(cursor)
        cursor.execute(f"PRAGMA busy_timeout={int(SQLITE_BUSY_TIMEOUT_S * 1000)}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL" if wal else "PRAGMA synchronous=FULL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection) -> None:
        # Writers take the write lock up front so two appends never deadlock
        # upgrading read locks; readers stay concurrent under WAL.
        immediate = connection.get_execution_options().get("benchledger_write", False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def _is_locked_error(exc: OperationalError) -> bool:
    message = str(exc.orig).lower()
    return "database is locked" in message or "database is busy" in message


def retry_sqlite_locked(dialect: str, attempt: Callable[[], Any]) -> Any:
    """Run a write, retrying with backoff while another SQLite writer holds the lock.

    SQLite's own busy timeout absorbs short waits; this bounded loop absorbs
    long ones so "database is locked" never reaches the user as such: after
    :data:`LOCKED_RETRY_BUDGET_S` it raises :class:`LedgerBusy`.
    """
    deadline = time.monotonic() + LOCKED_RETRY_BUDGET_S
    delay = 0.01
    while True:
        try:
            return attempt()
        except OperationalError as exc:
            if dialect != "sqlite" or not _is_locked_error(exc):
                raise
            if time.monotonic() >= deadline:
                raise LedgerBusy(
                    f"the ledger stayed locked by another writer for {LOCKED_RETRY_BUDGET_S:.0f} s; "
                    "nothing was written, try again"
                ) from exc
            time.sleep(delay * (1 + random.random()))
            delay = min(delay * 2, 1.0)


class Transaction:
    """Reads and projection writes inside one open transaction (used by appends and replays)."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    def read_goal(self, goal_id: str, *, upto_position: int | None = None) -> list[StoredEvent]:
        query = select(events).where(events.c.goal_id == goal_id)
        if upto_position is not None:
            query = query.where(events.c.position <= upto_position)
        return [_row_to_event(r) for r in self.connection.execute(query.order_by(events.c.stream_version))]

    def read_goals(self, goal_ids: Sequence[str]) -> dict[str, list[StoredEvent]]:
        """Several goals' events (each in stream order) in a few queries."""
        found: dict[str, list[StoredEvent]] = {goal: [] for goal in goal_ids}
        for row in _chunked_rows(self.connection, _EVENTS_OF_GOALS, "goal_ids", list(found)):
            found[row.goal_id].append(_row_to_event(row))
        return found

    def events_by_id(self, event_ids: Iterable[str]) -> dict[str, StoredEvent]:
        rows = _chunked_rows(self.connection, _EVENTS_BY_ID, "event_ids", list(dict.fromkeys(event_ids)))
        return {event.event_id: event for event in map(_row_to_event, rows)}

    def replace_projection_rows(self, goal_ids: Sequence[str], rows: Sequence[dict[str, Any]], *, projection: str | None = None) -> int:
        """Make the stored rows of ``goal_ids`` (all projections, or one) exactly ``rows``; returns how many changed.

        Only rows that differ are written or deleted: a replay of a healthy
        ledger reads its rows and writes nothing.
        """
        query = select(projection_rows).where(projection_rows.c.goal_id.in_(bindparam("goal_ids", expanding=True)))
        if projection is not None:
            query = query.where(projection_rows.c.projection == projection)
        stored = {_row_key(row._mapping): dict(row._mapping) for row in _chunked_rows(self.connection, query, "goal_ids", list(goal_ids))}
        changed = [row for row in rows if stored.pop(_row_key(row), None) != row]
        self.upsert_projection_rows(changed)
        unwanted = list(stored)
        for start in range(0, len(unwanted), 500):
            self.connection.execute(_DELETE_PROJECTION_ROWS, {"keys": unwanted[start : start + 500]})
        return len(changed) + len(unwanted)

    def upsert_projection_rows(self, rows: Sequence[dict[str, Any]]) -> None:
        """Write ``rows`` over the stored rows with the same projection, goal and key; keep the others."""
        if rows:
            self.connection.execute(_upsert_projection_rows(self.connection.dialect.name), list(rows))


@dataclass(frozen=True)
class StreamAppend:
    """One goal's part of an append: its new events, and the version the caller expects it at (if any)."""

    goal_id: str
    events: Sequence[NewEvent]
    expected_version: int | None = None


@dataclass(frozen=True)
class _Prepared:
    """A new event with its canonical body, payload hash and content-addressed id (computed before locking)."""

    new: NewEvent
    body: str
    digest: str
    event_id: str


# Statements built once: constructing and cache-keying a Core statement costs
# more than running it on SQLite, and appends run them on every ingest.
_EVENTS_BY_ID = select(events).where(events.c.event_id.in_(bindparam("event_ids", expanding=True)))
_EVENTS_OF_GOALS = (
    select(events)
    .where(events.c.goal_id.in_(bindparam("goal_ids", expanding=True)))
    .order_by(events.c.goal_id, events.c.stream_version)
)
_INSERT_PROJECTION_ROWS = insert(projection_rows)
_DELETE_PROJECTION_ROWS = projection_rows.delete().where(
    tuple_(*projection_rows.primary_key.columns).in_(bindparam("keys", expanding=True))
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


def _row_key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """A projection row's primary key, in the table's column order."""
    return tuple(row[column.name] for column in projection_rows.primary_key.columns)


@functools.cache
def _upsert_projection_rows(dialect: str) -> Any:
    """``INSERT ... ON CONFLICT (primary key) DO UPDATE`` for the projection rows (both backends spell it alike)."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as dialect_insert
    else:
        from sqlalchemy.dialects.sqlite import insert as dialect_insert
    statement = dialect_insert(projection_rows)
    key = [column.name for column in projection_rows.primary_key.columns]
    return statement.on_conflict_do_update(
        index_elements=key, set_={column.name: statement.excluded[column.name] for column in projection_rows.c if column.name not in key}
    )


def _append_locked(tx: Transaction, prepared: list[tuple[StreamAppend, list[_Prepared]]], source: str) -> list[list[Appended]]:
    """Write the prepared appends under the append lock: heads, positions, chains, one insert for all events."""
    connection = tx.connection
    goal_ids = list(dict.fromkeys(request.goal_id for request, _ in prepared))
    heads = {row.goal_id: row for row in _chunked_rows(connection, _HEADS_OF, "goal_ids", goal_ids)}
    # goal -> [version, chain hash] as the appends advance it
    tips = {
        goal: [heads[goal].last_version, heads[goal].last_chain_hash] if goal in heads else [0, canonical.GENESIS_HASH]
        for goal in goal_ids
    }
    last = connection.execute(_LAST_EVENT).first()
    position = last.position if last else 0
    # recorded_at never goes backwards along positions, even if the clock does.
    recorded_at = max(utc_timestamp(), last.recorded_at) if last else utc_timestamp()

    existing = tx.events_by_id(p.event_id for _, events_of_goal in prepared for p in events_of_goal)
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
            tip[0] += 1
            position += 1
            row = {
                "position": position,
                "event_id": p.event_id,
                "goal_id": goal_id,
                "stream_version": tip[0],
                "kind": p.new.kind,
                "schema_version": p.new.schema_version,
                "payload": p.body,
                "payload_sha256": p.digest,
                "source_sha256": p.new.source_sha256,
                "prev_hash": tip[1],
                "recorded_at": recorded_at,
                "source": source,
            }
            row["chain_hash"] = tip[1] = canonical.chain_hash(
                tip[1],
                goal_id=goal_id,
                stream_version=tip[0],
                kind=p.new.kind,
                schema_version=p.new.schema_version,
                payload_sha256=p.digest,
                event_id=p.event_id,
                recorded_at=recorded_at,
                source=source,
                source_sha256=p.new.source_sha256,
            )
            stored = _event_from_record(row)
            existing[p.event_id] = stored
            rows.append(row)
            outcome.append(Appended(stored, "appended"))
        outcomes.append(outcome)
    if rows:
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


def _chunked_rows(connection: Connection, statement: Any, name: str, values: Sequence[Any], size: int = 500) -> Iterator[Any]:
    """Rows of ``statement`` with its expanding parameter ``name`` bound to ``values``, ``size`` at a time."""
    for start in range(0, len(values), size):
        yield from connection.execute(statement, {name: list(values[start : start + size])})


class Ledger:
    """An event ledger on one database (see module docstring)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @property
    def persistent(self) -> bool:
        """False for the throwaway in-memory ledger of a stateless review."""
        return not (self.engine.dialect.name == "sqlite" and self.engine.url.database in (None, "", ":memory:"))

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @classmethod
    def open(cls, url: str, *, migrate: bool = True) -> Ledger:
        """Open the ledger at ``url``; an in-memory URL gets a fresh schema."""
        engine = create_ledger_engine(url)
        if engine.url.database in (None, "", ":memory:") and engine.dialect.name == "sqlite":
            metadata.create_all(engine)
        elif migrate:
            from benchledger.ledger.migrate import ensure_current

            ensure_current(engine)
        return cls(engine)

    @classmethod
    def in_memory(cls) -> Ledger:
        return cls.open("sqlite://")

    def close(self) -> None:
        self.engine.dispose()

    # -- writing -----------------------------------------------------------

    def append(
        self,
        goal_id: str,
        new_events: Sequence[NewEvent],
        *,
        source: str,
        expected_version: int | None = None,
        within: Callable[[Transaction, list[Appended]], None] | None = None,
    ) -> list[Appended]:
        """Append ``new_events`` to ``goal_id`` in one transaction: all or nothing.

        An event whose canonical content (kind + payload) already exists in the
        goal, or earlier in the same call, is not written again: its outcome is
        the existing event with status ``duplicate``. ``within`` runs inside the
        transaction after the inserts (inline projections); if it raises, nothing
        is written.
        """
        finish = None if within is None else (lambda tx, outcomes: within(tx, outcomes[0]))
        return self.append_streams([StreamAppend(goal_id, new_events, expected_version)], source=source, within=finish)[0]

    def append_streams(
        self,
        appends: Sequence[StreamAppend],
        *,
        source: str,
        within: Callable[[Transaction, list[list[Appended]]], None] | None = None,
    ) -> list[list[Appended]]:
        """Append to several goals (or to one goal several times) in one transaction: all or nothing.

        Each :class:`StreamAppend` behaves as one :meth:`append`, in the order
        given; the whole call costs a handful of statements, however many events
        and goals it holds (a bulk ingest). Returns one outcome list per append.
        """
        prepared: list[tuple[StreamAppend, list[_Prepared]]] = []
        for request in appends:
            validate_goal_id(request.goal_id)
            events_of_goal = []
            for new in request.events:
                body, digest = new.canonical
                if self.persistent:  # (a stateless review reads what LoopX reads, whatever its size or numbers)
                    validate_event_columns(new.kind, new.schema_version, source)
                    _refuse_non_finite(new, body)
                events_of_goal.append(_Prepared(new, body, digest, canonical.event_id_for(request.goal_id, new.kind, digest)))
            prepared.append((request, events_of_goal))

        def attempt() -> list[list[Appended]]:
            with self.transaction(write=True) as tx:
                outcomes = _append_locked(tx, prepared, source)
                if within is not None:
                    within(tx, outcomes)
            return outcomes

        return self.retrying_when_locked(attempt)

    def retrying_when_locked(self, attempt: Callable[[], Any]) -> Any:
        """Run a write, retrying with backoff while another SQLite writer holds the lock (see :func:`retry_sqlite_locked`).

        A value the database refuses (e.g. a NUL character in a PostgreSQL text
        column) rolls the write back and becomes a :class:`LedgerError`.
        """
        try:
            return retry_sqlite_locked(self.dialect, attempt)
        except DataError as exc:
            raise InvalidEvent(f"the database refused the write, nothing was written: {exc.orig}") from exc

    def insert_verbatim(self, records: Sequence[dict[str, Any]], *, within: Callable[[Transaction], None] | None = None) -> None:
        """Insert exported event records exactly as given (``import-ndjson``), in one transaction.

        The caller has verified the records; the ledger must be empty of them.
        Heads are rebuilt from the inserted events.
        """
        with self.transaction(write=True) as tx:
            tx.connection.execute(insert(events), list(records))
            heads: dict[str, dict[str, Any]] = {}
            for record in records:
                heads[record["goal_id"]] = {
                    "goal_id": record["goal_id"],
                    "last_version": record["stream_version"],
                    "last_chain_hash": record["chain_hash"],
                    "last_position": record["position"],
                    "last_recorded_at": record["recorded_at"],
                }
            if heads:
                tx.connection.execute(insert(stream_heads), list(heads.values()))
            if within is not None:
                within(tx)

    def transaction(self, *, write: bool = False):
        """A context manager yielding a :class:`Transaction` (``write`` takes the SQLite write lock)."""
        return _TransactionContext(self, write)

    # -- reading -----------------------------------------------------------

    def read_goal(self, goal_id: str, *, upto_position: int | None = None) -> list[StoredEvent]:
        with self.engine.connect() as connection:
            return Transaction(connection).read_goal(goal_id, upto_position=upto_position)

    def read_all(self, *, after_position: int = 0, goal_id: str | None = None, batch_size: int = 2000) -> Iterator[StoredEvent]:
        """Every event in global order (optionally one goal's), fetched in pages."""
        while True:
            query = select(events).where(events.c.position > after_position)
            if goal_id is not None:
                query = query.where(events.c.goal_id == goal_id)
            with self.engine.connect() as connection:
                page = [_row_to_event(r) for r in connection.execute(query.order_by(events.c.position).limit(batch_size))]
            yield from page
            if len(page) < batch_size:
                return
            after_position = page[-1].position

    def events_by_id(self, event_ids: Iterable[str]) -> dict[str, StoredEvent]:
        with self.engine.connect() as connection:
            return Transaction(connection).events_by_id(event_ids)

    def heads(self) -> list[dict[str, Any]]:
        with self.engine.connect() as connection:
            rows = connection.execute(select(stream_heads).order_by(stream_heads.c.goal_id))
            return [dict(r._mapping) for r in rows]

    def head(self, goal_id: str) -> dict[str, Any] | None:
        with self.engine.connect() as connection:
            row = connection.execute(select(stream_heads).where(stream_heads.c.goal_id == goal_id)).first()
            return dict(row._mapping) if row else None

    def event_count(self) -> int:
        with self.engine.connect() as connection:
            return connection.execute(select(func.count()).select_from(events)).scalar_one()

    def projection_rows(
        self, *, goal_id: str | None = None, projection: str | None = None, key: str | None = None
    ) -> list[dict[str, Any]]:
        query = select(projection_rows)
        if key is not None:
            query = query.where(projection_rows.c.key == key)
        if goal_id is not None:
            query = query.where(projection_rows.c.goal_id == goal_id)
        if projection is not None:
            query = query.where(projection_rows.c.projection == projection)
        order = (projection_rows.c.goal_id, projection_rows.c.projection, projection_rows.c.key)
        with self.engine.connect() as connection:
            return [dict(r._mapping) for r in connection.execute(query.order_by(*order))]


class _TransactionContext:
    def __init__(self, ledger: Ledger, write: bool) -> None:
        self.ledger, self.write = ledger, write

    def __enter__(self) -> Transaction:
        connection = self.ledger.engine.connect()
        if self.write:
            connection = connection.execution_options(benchledger_write=True)
        self._connection = connection
        self._transaction = connection.begin()
        if self.write and self.ledger.dialect == "postgresql":
            # Serializes writers for the rest of this transaction (see module docstring).
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": APPEND_LOCK_KEY})
        return Transaction(connection)

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is None:
                self._transaction.commit()
            else:
                self._transaction.rollback()
        finally:
            self._connection.close()
