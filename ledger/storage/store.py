"""The event store: append-only streams of events, one stream per goal.

One :class:`Store` serves both backends. Appends are serialized ledger-wide
(SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: a transaction-scoped advisory lock)
because global positions must be contiguous *and* follow commit order: with
sequence-assigned positions, a transaction that took position 7 could commit
after one that took 8, and a reader following positions would skip 7 forever.
Appends of compact artifacts are small, so one writer at a time costs little
and buys a gap-free, never-reordered global log.

Reads are snapshots: every read method reads inside one read transaction
(SQLite in WAL: one deferred transaction pinned by its first read;
PostgreSQL: ``REPEATABLE READ READ ONLY``), and :meth:`Store.snapshot`
holds one open across many reads, so a command that reads events, heads and
projection rows reports what was true at one moment, whatever commits meanwhile.
"""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Concatenate, ParamSpec, TypeVar

from sqlalchemy import Connection, Engine, and_, bindparam, func, insert, select
from sqlalchemy.exc import DataError

from benchledger.errors import InvalidEvent, LedgerError
from benchledger.ledger.storage import merkle_log
from benchledger.ledger.storage.append import append_locked, prepared_appends
from benchledger.ledger.storage.engine import (
    create_ledger_engine,
    database_errors_as_unavailable,
    interruptions_deferred,
    refuse_writes_on_standby,
    retry_sqlite_locked,
    rows_changed,
)
from benchledger.ledger.storage.event_records import (
    Appended,
    NewEvent,
    StoredEvent,
    StreamAppend,
    continue_chains,
    head_record,
    row_to_event,
)
from benchledger.ledger.storage.goal_names import unknown_goal
from benchledger.ledger.storage.guard import Storable, refuse_unstorable
from benchledger.ledger.storage.migrate import UPGRADE, OlderRevision, Upgraded, ensure_current
from benchledger.ledger.storage.schema import events, metadata, projection_counts, projection_rows, stream_heads
from benchledger.ledger.storage.transaction import Transaction

__all__ = ["ChunkedAppend", "ProjectionStats", "Store", "one_snapshot", "open_store"]

P = ParamSpec("P")
R = TypeVar("R")

# Any constant works; it only has to be the same for every benchledger writer.
APPEND_LOCK_KEY = 0x62656E63686C6467  # "benchldg"


class Store:
    """An event ledger on one database (see module docstring)."""

    # Write transactions committed here that changed a row of a persistent ledger (cli/main.py: what was kept, or written).
    writes_committed = 0

    def __init__(self, engine: Engine, *, snapshot_connection: Connection | None = None) -> None:
        self.engine = engine
        # Set on the view :meth:`snapshot` yields: every read goes through this one read transaction.
        self._snapshot_connection = snapshot_connection
        # What opening the ledger migrated (an older SQLite ledger opened to write), else None.
        self.upgraded: Upgraded | None = None
        # Appends pass the storage guard, but on a stateless review's throwaway ledger (api.open sets it for a dry run's stand-in).
        self.guarded = self.persistent

    @property
    def persistent(self) -> bool:
        """False for the throwaway in-memory ledger of a stateless review."""
        return not (self.engine.dialect.name == "sqlite" and self.engine.url.database in (None, "", ":memory:"))

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @classmethod
    def open(cls, url: str, *, migrate: bool = True, older: OlderRevision = UPGRADE) -> Store:
        """Open the ledger at ``url``; an in-memory URL gets a fresh schema. ``older``: what a ledger at an older
        schema revision gets (:func:`~benchledger.ledger.storage.migrate.ensure_current`); ``migrate=False``: nothing is checked."""
        engine, upgraded = create_ledger_engine(url), None
        with database_errors_as_unavailable(url):
            if engine.url.database in (None, "", ":memory:") and engine.dialect.name == "sqlite":
                metadata.create_all(engine)
            elif migrate:
                upgraded = ensure_current(engine, older)
            else:
                engine.connect().close()
        store = cls(engine)
        store.upgraded = upgraded
        return store

    @classmethod
    def in_memory(cls) -> Store:
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

        An event whose identity (kind + payload, and for an artifact its source
        hash: :meth:`NewEvent.event_id`) already exists in the goal, or earlier
        in the same call, is not written again: its outcome is the existing
        event with status ``duplicate``. ``within`` runs inside the
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
        receipts: Collection[bytes] = (),
    ) -> list[list[Appended]]:
        """Append to several goals (or to one goal several times) in one transaction: all or nothing.

        Each :class:`StreamAppend` behaves as one :meth:`append`, in the order
        given; the whole call costs a handful of statements, however many events
        and goals it holds (a bulk ingest). Returns one outcome list per append.
        An append whose exact content the guard passed already in this process
        (one of ``receipts``, :func:`~benchledger.ledger.storage.append.guard_receipt`) is not guarded again.
        """
        prepared = prepared_appends(appends, source, guard=self.guarded, receipts=receipts)

        def attempt() -> list[list[Appended]]:
            with self.transaction(write=True) as tx:
                outcomes = append_locked(tx, prepared, source)
                if within is not None:
                    within(tx, outcomes)
            return outcomes

        return self.retrying_when_locked(attempt)

    def writing(self, work: Callable[[ChunkedAppend], Any]) -> Any:
        """Run ``work`` in one write transaction in which it may append any number of times: all or nothing.

        An input too large to hold at once (a bulk ingest) is appended chunk by chunk (:meth:`ChunkedAppend.append`,
        each chunk guarded like :meth:`append_streams`) and commits when ``work`` returns; if it raises, nothing is
        written. Retried as a whole while another SQLite writer holds the lock, so ``work`` must be able to start over
        (read its input again).
        """

        def attempt() -> Any:
            with self.transaction(write=True) as tx:
                return work(ChunkedAppend(self, tx))

        return self.retrying_when_locked(attempt)

    def retrying_when_locked(self, attempt: Callable[[], Any]) -> Any:
        """Run a write, retrying with backoff while another SQLite writer holds the lock (see :func:`retry_sqlite_locked`).

        A value the database refuses (e.g. a NUL character in a PostgreSQL text
        column) rolls the write back and becomes a :class:`LedgerError`.
        """
        try:
            with database_errors_as_unavailable(self.engine.url.render_as_string(hide_password=True)):
                return retry_sqlite_locked(self.dialect, attempt)
        except DataError as exc:
            raise InvalidEvent(f"the database refused the write, nothing was written: {exc.orig}") from exc

    def insert_verbatim(
        self,
        records: Callable[[Transaction], Iterable[dict[str, Any]]],
        *,
        chunk: int = 2000,
        within: Callable[[Transaction], None] | None = None,
    ) -> None:
        """Insert exported event records as they are (``import-ndjson``, ``merge``), in one write transaction.

        ``records(tx)`` yields them under the append lock (it may read the ledger), ``chunk`` at a time. Each takes the
        next position (outside the chain hash) and must continue its goal's chain here (``continue_chains``); every other
        field is kept, so chain hashes and goal digests are the writing ledger's; heads follow. Each chunk passes the
        same guard as an append (``ledger.storage.guard``): what the ledger refuses rolls the transaction back.
        """
        with self.transaction(write=True) as tx:
            pending = iter(records(tx))
            position = tx.last_position()
            tips: dict[str, tuple[int, str]] = {}  # goal -> (version, chain hash) as the records advance it
            heads: dict[str, dict[str, Any]] = {}
            while batch := list(itertools.islice(pending, chunk)):
                unseen = [r["goal_id"] for r in batch if r["goal_id"] not in tips]
                tips.update((goal, (head["last_version"], head["last_chain_hash"])) for goal, head in tx.heads_of(unseen).items())
                position = continue_chains(batch, tips, position)
                if self.persistent:
                    refuse_unstorable(
                        Storable(r["goal_id"], r["kind"], r["schema_version"], r["source"], json.loads(r["payload"]), r["payload"], f"event {r['event_id']}")
                        for r in batch
                    )
                tx.connection.execute(insert(events), batch)
                merkle_log.extend(tx, batch[0]["position"], [record["chain_hash"] for record in batch])
                heads.update((record["goal_id"], head_record(record)) for record in batch)
            tx.set_heads(list(heads.values()))
            if within is not None:
                within(tx)

    def transaction(self, *, write: bool = False):
        """A context manager yielding a :class:`Transaction` (``write`` takes the SQLite write lock)."""
        if self._snapshot_connection is not None:
            raise LedgerError("a snapshot of the ledger is read-only")
        return _TransactionContext(self, write)

    # -- reading -----------------------------------------------------------

    @contextmanager
    def snapshot(self) -> Iterator[Store]:
        """A read-only view of the ledger as it is now: its read methods all see this one moment.

        Writes that commit while the view is open are not seen by it (nor do
        they wait for it). Inside a snapshot, ``snapshot()`` yields the same view.
        """
        if self._snapshot_connection is not None:
            yield self
            return
        with self.reading() as connection:
            yield Store(self.engine, snapshot_connection=connection)

    @contextmanager
    def reading(self) -> Iterator[Connection]:
        """A connection inside a read transaction: the snapshot's, or a new one for the length of the ``with``."""
        if self._snapshot_connection is not None:
            yield self._snapshot_connection
            return
        connection = self.engine.connect()
        try:
            if self.dialect == "postgresql":
                connection.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True)
            connection.begin()
            if self.dialect == "sqlite":
                # A deferred SQLite transaction takes its snapshot at its first read: take it now.
                connection.exec_driver_sql("SELECT count(*) FROM sqlite_master").scalar_one()
            yield connection
        finally:
            connection.close()  # (rolls the read transaction back: it wrote nothing)

    def read_goal(self, goal_id: str, *, upto_position: int | None = None) -> list[StoredEvent]:
        with self.reading() as connection:
            return Transaction(connection).read_goal(goal_id, upto_position=upto_position)

    def read_all(
        self, *, after_position: int = 0, up_to_position: int | None = None, goal_id: str | None = None,
        kinds: Sequence[str] | None = None, batch_size: int = 2000, newest_first: bool = False,
    ) -> Iterator[StoredEvent]:
        """Every event in global order (optionally one goal's, only ``kinds``, only up to a position), fetched in pages of one snapshot.

        ``newest_first`` reads them in descending position order instead (memory: one page either way).
        """
        position = events.c.position
        cursor = (up_to_position + 1 if up_to_position is not None else None) if newest_first else after_position
        with self.reading() as connection:
            while True:
                query = select(events)
                if newest_first:
                    query = query.where(position > after_position).order_by(position.desc())
                    if cursor is not None:
                        query = query.where(position < cursor)
                else:
                    query = query.where(position > cursor).order_by(position)
                    if up_to_position is not None:
                        query = query.where(position <= up_to_position)
                if goal_id is not None:
                    query = query.where(events.c.goal_id == goal_id)
                if kinds is not None:
                    query = query.where(events.c.kind.in_(kinds))
                page = [row_to_event(r) for r in connection.execute(query.limit(batch_size))]
                yield from page
                if len(page) < batch_size:
                    return
                cursor = page[-1].position

    def events_by_id(self, event_ids: Iterable[str]) -> dict[str, StoredEvent]:
        with self.reading() as connection:
            return Transaction(connection).events_by_id(event_ids)

    def heads(self, *, after: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """The goals' stream heads by goal id (those after ``after``, at most ``limit``: a page)."""
        with self.reading() as connection:
            return Transaction(connection).heads(after=after, limit=limit)

    def head(self, goal_id: str) -> dict[str, Any] | None:
        with self.reading() as connection:
            row = connection.execute(select(stream_heads).where(stream_heads.c.goal_id == goal_id)).first()
            return dict(row._mapping) if row else None

    def require_goal(self, goal_id: str) -> dict[str, Any]:
        """The head of ``goal_id``; :class:`UnknownGoal` when the ledger holds no such goal (every command that reads a goal)."""
        if (head := self.head(goal_id)) is None:
            raise unknown_goal(goal_id, (h["goal_id"] for h in self.heads()))
        return head

    def event_count(self) -> int:
        with self.reading() as connection:
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
        with self.reading() as connection:
            return [dict(r._mapping) for r in connection.execute(query.order_by(*order))]


    def projection_counts(self, goal_id: str) -> dict[str, int]:
        """How many rows each of the goal's projections holds, as stored (``projection_counts``)."""
        with self.reading() as connection:
            return Transaction(connection).projection_counts(goal_id)

    def current_rows(self, goal_ids: Sequence[str], projections: Sequence[str]) -> list[dict[str, Any]]:
        """The ``current`` rows of ``projections`` for ``goal_ids``."""
        rows = projection_rows.c
        query = select(projection_rows).where(rows.key == "current", rows.projection.in_(projections), rows.goal_id.in_(goal_ids))
        with self.reading() as connection:
            return [dict(r._mapping) for r in connection.execute(query)]

    def goal_projections(self, goal_id: str) -> tuple[dict[str, int], list[dict[str, Any]]]:
        """How many rows each of the goal's projections holds, and the latest row (highest position, then key) of each.

        One statement, whatever the goal holds: the stored counts (``projection_counts``, kept by the
        writes that change the rows) and for each the newest key, one lookup of an index (revision 0004).
        """
        with self.reading() as connection:
            found = connection.execute(_GOAL_PROJECTIONS, {"goal_id": goal_id}).all()
        counts = {row.counted_projection: row.row_count for row in found}
        # (a count without rows is a tampered count: `audit` names it; the rows shown are those stored)
        latest = [{name: row._mapping[name] for name in projection_rows.c.keys()} for row in found if row.key is not None]
        return counts, latest

    def goal_projection_page(
        self, goal_id: str, projection: str, *, key: str | None = None, limit: int | None = None, offset: int = 0
    ) -> tuple[int, list[dict[str, Any]]]:
        """One projection's rows of a goal (or its row ``key``) in position order, ``limit`` from ``offset``, and how many there are
        (the stored count: see :meth:`goal_projections`)."""
        rows = projection_rows.c
        where = [rows.goal_id == goal_id, rows.projection == projection] + ([rows.key == key] if key is not None else [])
        with self.reading() as connection:
            if key is None:
                total = Transaction(connection).projection_counts(goal_id).get(projection, 0)
            else:
                total = connection.execute(select(func.count()).select_from(projection_rows).where(*where)).scalar_one()
            page = connection.execute(select(projection_rows).where(*where).order_by(rows.position, rows.key).limit(limit).offset(offset))
            return total, [dict(r._mapping) for r in page]

    def projection_stats(self) -> ProjectionStats:
        """Rows per projection and version, goals per projection, faulted rows, each goal's latest covered position: aggregates alone."""
        rows = projection_rows.c
        with self.reading() as connection:
            by_version = connection.execute(select(rows.projection, rows.projection_version, func.count()).group_by(rows.projection, rows.projection_version))
            goals = connection.execute(select(rows.projection, func.count(rows.goal_id.distinct())).group_by(rows.projection))
            covered = connection.execute(select(rows.goal_id, func.max(rows.position)).group_by(rows.goal_id))
            faulted = connection.execute(
                select(rows.goal_id, rows.projection, rows.key, rows.error).where(rows.status == "faulted").order_by(rows.goal_id, rows.projection, rows.key)
            )
            return ProjectionStats(
                {(name, version): count for name, version, count in by_version},
                dict(goals.all()),
                dict(covered.all()),
                [{"goal_id": g, "projection": p, "key": k, "error": e} for g, p, k, e in faulted],
            )

    def current_payloads(self, projection: str) -> Iterator[tuple[str, str | None]]:
        """(goal id, stored payload text) of every goal's ``current`` row of ``projection``, by goal id, a page at a time."""
        rows = projection_rows.c
        after = ""
        with self.reading() as connection:
            while True:
                page = connection.execute(
                    select(rows.goal_id, rows.payload)
                    .where(rows.projection == projection, rows.key == "current", rows.goal_id > after)
                    .order_by(rows.goal_id)
                    .limit(1000)
                ).all()
                yield from ((goal, payload) for goal, payload in page)
                if len(page) < 1000:
                    return
                after = page[-1][0]


_NEWEST = projection_rows.alias("newest")
# A goal's stored counts, each with the latest row of its projection (none for a count without rows).
_GOAL_PROJECTIONS = (
    select(projection_counts.c.projection.label("counted_projection"), projection_counts.c.row_count, projection_rows)
    .select_from(
        projection_counts.outerjoin(
            projection_rows,
            and_(
                projection_rows.c.projection == projection_counts.c.projection,
                projection_rows.c.goal_id == projection_counts.c.goal_id,
                projection_rows.c.key
                == select(_NEWEST.c.key)
                .where(_NEWEST.c.goal_id == projection_counts.c.goal_id, _NEWEST.c.projection == projection_counts.c.projection)
                .order_by(_NEWEST.c.position.desc(), _NEWEST.c.key.desc())
                .limit(1)
                .scalar_subquery(),
            ),
        )
    )
    .where(projection_counts.c.goal_id == bindparam("goal_id"))
    .order_by(projection_counts.c.projection)
)


@dataclass(frozen=True)
class ProjectionStats:
    """What :meth:`Store.projection_stats` counts."""

    rows_by_version: dict[tuple[str, int], int]
    goals_by_projection: dict[str, int]
    covered: dict[str, int]
    faulted: list[dict[str, Any]]


class ChunkedAppend:
    """The appends of one :meth:`Store.writing` transaction."""

    def __init__(self, ledger: Store, tx: Transaction) -> None:
        self.ledger, self.tx = ledger, tx

    def append(self, appends: Sequence[StreamAppend], *, source: str, receipts: Collection[bytes] = ()) -> list[list[Appended]]:
        """Append as :meth:`Store.append_streams` does, inside the open transaction (later chunks see earlier ones)."""
        return append_locked(self.tx, prepared_appends(appends, source, guard=self.ledger.guarded, receipts=receipts), source)


def one_snapshot(read: Callable[Concatenate[Store, P], R]) -> Callable[Concatenate[Store, P], R]:
    """``read(ledger, ...)`` made to read inside one :meth:`Store.snapshot` (the queries a command answers from)."""

    @functools.wraps(read)
    def in_one_snapshot(ledger: Store, *args: P.args, **kwargs: P.kwargs) -> R:
        with ledger.snapshot() as view:
            return read(view, *args, **kwargs)

    return in_one_snapshot


def open_store(url: str | None = None, *, migrate: bool = True, older: OlderRevision = UPGRADE) -> Store:
    """Open the ledger at ``url``, else at ``BENCHLEDGER_DATABASE_URL``, else the embedded default (see ``ledger.storage.config``)."""
    from benchledger.ledger.storage.config import resolve_url

    return Store.open(resolve_url(url), migrate=migrate, older=older)


class _TransactionContext:
    def __init__(self, ledger: Store, write: bool) -> None:
        self.ledger, self.write = ledger, write

    def __enter__(self) -> Transaction:
        connection = self.ledger.engine.connect()
        if self.write:
            connection = connection.execution_options(benchledger_write=True)
        self._connection, self._changes_before = connection, rows_changed(connection)
        self._transaction = connection.begin()
        if self.write and self.ledger.dialect == "postgresql":  # (the lock serializes writers for the rest of this transaction: module docstring)
            refuse_writes_on_standby(connection, self.ledger.engine.url.render_as_string(hide_password=True), lock_key=APPEND_LOCK_KEY)
        return Transaction(connection)

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is None:
                wrote = self.write and rows_changed(self._connection) != self._changes_before
                with interruptions_deferred():  # (one that comes while it commits is raised once the commit is counted)
                    self._transaction.commit()
                    Store.writes_committed += wrote and self.ledger.persistent
            else:
                self._transaction.rollback()
        finally:
            self._connection.close()
