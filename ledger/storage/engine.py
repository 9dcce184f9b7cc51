"""Engines of a ledger URL: drivers, SQLite pragmas, lock retries, and errors a user can read.

A URL names SQLite (the embedded default) or PostgreSQL. Whatever goes wrong
while an engine is created or first connects (an unknown scheme, a missing
driver, a missing directory, a file that is not a database or cannot be
written, a server that does not answer) becomes one
:class:`~benchledger.errors.LedgerUnavailable` naming the URL with its
password redacted. A PostgreSQL hot standby (a read-only replica) is told
apart here too: what a write is refused with (:class:`StandbyIsReadOnly`) and
how far its replay is behind its primary (docs/deployment.md).
"""

from __future__ import annotations

import os
import random
import re
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from sqlalchemy import URL, Connection, Engine, create_engine, event, make_url, text
from sqlalchemy.exc import ArgumentError, DataError, DBAPIError, IntegrityError, NoSuchModuleError, OperationalError
from sqlalchemy.pool import StaticPool

from benchledger.errors import LedgerUnavailable, redact_url
from benchledger.ledger.storage.config import refuse_a_sqlite_host, sqlite_file

SQLITE_BUSY_TIMEOUT_S = 5.0
LOCKED_RETRY_BUDGET_S = 60.0
# A server that drops packets would otherwise hold a command for the kernel's TCP timeout (minutes).
POSTGRES_CONNECT_TIMEOUT_S = 10


class LedgerBusy(LedgerUnavailable):
    """Another writer held the SQLite ledger for longer than the retry budget."""


class StandbyCancelledRead(LedgerUnavailable):
    """A PostgreSQL hot standby cancelled a read that held back the replay of its primary's changes (docs/deployment.md)."""


class StandbyIsReadOnly(LedgerUnavailable):
    """A command that writes was pointed at a PostgreSQL hot standby (a read-only replica): nothing was written."""

    @classmethod
    def at(cls, where: str) -> StandbyIsReadOnly:
        return cls(
            f"the ledger at {where} is a PostgreSQL hot standby (a read-only replica): this command writes, "
            "and nothing was written; run it against the primary (docs/deployment.md)"
        )


# What a standby answers (SQLSTATE) to the first statement of a transaction that began READ WRITE (a pooled
# connection a read-only transaction used: the pool resets it to read-write), feature_not_supported, and to a
# write, read_only_sql_transaction. A primary never refuses a BEGIN READ WRITE.
STANDBY_REFUSALS = frozenset({"0A000", "25006"})


# What a standby answers a statement it cancelled because it held back the replay of its primary's WAL (a vacuum
# removing rows the statement still sees, a lock the replay needs) past max_standby_streaming_delay:
# serialization_failure, saying "conflict with recovery" (a read-only transaction on a primary never gets one).
RECOVERY_CONFLICT = "40001"
_STANDBY_ADVICE = (
    "a PostgreSQL hot standby does this to a read that held back the replay of its primary's changes for longer than "
    "max_standby_streaming_delay: run it again, or set hot_standby_feedback = on on the standby (docs/deployment.md)"
)


def _name_lost_reads(engine: Engine) -> None:
    """Make a standby's cancellation of a read, or a connection the server closed, one line saying what to do (not exit 70).

    A standby cancels a running statement with :data:`RECOVERY_CONFLICT`; a
    transaction caught between statements has its connection closed instead,
    which the driver reports without a reason, so that line names both causes.
    """
    where = shown_url(engine.url)

    @event.listens_for(engine, "handle_error")
    def _on_error(context: Any) -> None:
        original = context.original_exception
        if not isinstance(original, Exception):
            # Ctrl-C (SIGTERM too, on the command line) raised while a statement ran: SQLAlchemy counts it a disconnect, to drop the
            # connection, but nothing closed it; the interruption goes on, said as one (exit 130), not a lost server.
            return
        if getattr(original, "pgcode", None) == RECOVERY_CONFLICT and "conflict with recovery" in str(original):
            raise StandbyCancelledRead(f"the ledger at {where} cancelled this read: {_STANDBY_ADVICE}") from original
        if context.is_disconnect and context.connection is not None:  # (not a failed connect: that has its own line)
            raise LedgerUnavailable(
                f"the server of the ledger at {where} closed the connection: {_STANDBY_ADVICE}; otherwise the server "
                "restarted or the network dropped it (a write it interrupted is in the ledger whole or not at all)"
            ) from original


@contextmanager
def interruptions_deferred() -> Iterator[None]:
    """Ctrl-C and SIGTERM held back until the block ends, then handled as they would have been (in the main thread: only
    there may a handler be set, and only there does one run).

    A commit is where a write is kept, and what a write says it kept must be what it kept: an interruption that came
    while the commit ran (a SQLite checkpoint, a PostgreSQL round trip) was raised just after it returned, before the
    commit was counted (``Store.writes_committed``), so ``ingest-batches`` said "this transaction wrote nothing" of a
    transaction that had committed.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    before = {number: signal.signal(number, lambda number, frame: received.append(number)) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in before.items():
            signal.signal(number, handler)
        for number in dict.fromkeys(received):
            handler = before[number]
            if callable(handler):
                handler(number, None)
            elif handler == signal.SIG_DFL:
                signal.raise_signal(number)


def refuse_writes_on_standby(connection: Any, where: str, *, lock_key: int | None = None) -> None:
    """Raise :class:`StandbyIsReadOnly` when ``connection`` (PostgreSQL, a transaction just begun) reaches a hot standby;
    with ``lock_key``, the same statement takes that transaction-scoped advisory lock (no round trip more for a writer).

    Asked before a write, so that a standby refuses it in one line naming it
    rather than with the server's "cannot execute INSERT during recovery". A
    connection the pool handed back read-write fails at its ``BEGIN READ
    WRITE`` already, which only a server in recovery refuses. Refusing, it
    closes ``connection``, rolling back the transaction just begun (a
    context manager's ``__enter__`` that raises gets no ``__exit__`` to do it).
    """
    lock = "" if lock_key is None else ", pg_advisory_xact_lock(:key)"
    try:
        in_recovery = connection.execute(text(f"SELECT pg_is_in_recovery(){lock}"), {"key": lock_key}).scalar()
    except DBAPIError as exc:
        if getattr(exc.orig, "pgcode", None) not in STANDBY_REFUSALS:
            raise
        in_recovery = True
    if in_recovery:
        connection.close()
        raise StandbyIsReadOnly.at(shown_url(where))


# On a standby: when it last replayed a commit of its primary, and how far behind it is. Zero seconds when it has
# replayed every change it received (an idle primary sends none, however old the last commit); else the time
# since that commit. NULLs before its first replay.
_STANDBY_REPLAY = """
SELECT pg_last_xact_replay_timestamp(),
       CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
            ELSE extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp()) END
WHERE pg_is_in_recovery()
"""


def standby_replay(connection: Any) -> tuple[datetime | None, float | None] | None:
    """``(last replayed commit time, seconds behind)`` when ``connection`` (PostgreSQL) reaches a hot standby, else ``None``."""
    row = connection.execute(text(_STANDBY_REPLAY)).first()
    if row is None:
        return None
    replayed_at, lag = row
    return replayed_at, None if lag is None else float(lag)


class NotALedger(LedgerUnavailable):
    """The database holds another application's tables: benchledger refuses it and changes nothing."""


# What every benchledger ledger holds, at any schema revision; revisions are numbered 0001, 0002, ...
LEDGER_TABLES = frozenset({"alembic_version", "events", "stream_heads", "projection_rows"})
_REVISION_ID = re.compile(r"[0-9]{4}")
SQLITE_TABLES_QUERY = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"


def recognize_ledger(tables: Iterable[str], revision: str | None, where: str) -> str | None:
    """The schema revision of a benchledger ledger, ``None`` for an empty database (a ledger to create).

    Anything else raises :class:`NotALedger`, before benchledger has changed
    anything (no journal switch, no migration): a database with tables of its
    own, even one called ``events``, is someone else's.
    """
    tables = set(tables)
    if not tables:
        return None
    if LEDGER_TABLES <= tables and isinstance(revision, str) and _REVISION_ID.fullmatch(revision):
        return revision
    shown = ", ".join(sorted(tables)[:8]) + (", ..." if len(tables) > 8 else "")
    stamp = f"schema revision {revision!r}" if revision is not None else "no schema revision"
    raise NotALedger(
        f"{where} is not a benchledger ledger (it holds the tables {shown} and {stamp}); "
        "benchledger left it untouched: point --database-url at a benchledger ledger or a new database"
    )


def sqlite_tables_and_revision(cursor: Any) -> tuple[list[str], str | None]:
    """The tables of a SQLite database and its alembic revision (if it has a version table), read with a DB-API cursor."""
    tables = [row[0] for row in cursor.execute(SQLITE_TABLES_QUERY)]
    revision = None
    if "alembic_version" in tables:
        row = cursor.execute("SELECT version_num FROM alembic_version").fetchone()
        revision = row[0] if row else None
    return tables, revision


def normalize_url(url: str) -> str:
    """``postgresql://`` and ``postgres://`` mean psycopg2 (the ``postgres`` extra); an explicit driver is kept."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg2://" + url[len(prefix):]
    return url


SUPPORTED_URLS = "sqlite:///PATH or postgresql://USER@HOST/DATABASE"


def shown_url(url: URL | str) -> str:
    """``url`` as messages and ``info`` print it: password hidden, and ``postgresql://`` as the user wrote it, not
    the ``postgresql+psycopg2://`` :func:`normalize_url` made of it (a driver the user named is shown)."""
    shown = redact_url(url if isinstance(url, str) else url.render_as_string(hide_password=True))
    default = "postgresql+psycopg2://"
    return "postgresql://" + shown[len(default):] if shown.startswith(default) else shown


def _sqlite_file(path: str) -> bool:
    """Whether the file at ``path`` starts as a SQLite database does (or is empty: a ledger not written yet)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(16) in (b"SQLite format 3\x00", b"")
    except OSError:
        return True  # (unreadable: the URL it would be is still the advice; opening it says why it cannot be read)


def create_ledger_engine(url: str) -> Engine:
    """An engine for the ledger at ``url``; a URL benchledger cannot use raises :class:`LedgerUnavailable`."""
    try:
        parsed = make_url(normalize_url(url))
    except ArgumentError as exc:
        # (a path given as the URL: the file it names, if any, is what was meant; unless it is no SQLite file, such as
        # an export given to `merge --from`, whose sqlite:/// URL would only fail as "not a SQLite database")
        path = os.path.abspath(os.path.expanduser(url)) if "://" not in url else None
        meant = ""
        if path and os.path.isfile(path) and not _sqlite_file(path):
            meant = f"; {url} is a file but not a SQLite ledger: an export is read by `benchledger merge {url}` or `benchledger import-ndjson {url}`"
        elif path and (os.path.isfile(path) or url.endswith((".sqlite", ".db"))):
            meant = f"; for the file {url}: sqlite:///{path}"
        raise LedgerUnavailable(f"{redact_url(url)} is not a database URL (use {SUPPORTED_URLS}{meant})") from exc
    refuse_a_sqlite_host(parsed)
    backend = parsed.get_backend_name()
    if backend not in ("sqlite", "postgresql"):
        raise LedgerUnavailable(
            f"{redact_url(url)}: benchledger keeps its ledger in SQLite or PostgreSQL, not {backend} (use {SUPPORTED_URLS})"
        )
    try:
        return _create_engine(parsed)
    except (ImportError, NoSuchModuleError) as exc:
        # (the postgres extra is psycopg2, what postgresql:// uses; another driver named in the URL is the user's to install)
        extra = " (pip install 'benchledger[postgres]')" if parsed.get_driver_name() == "psycopg2" else (
            f" (install the {parsed.get_driver_name()} package, or write postgresql:// for psycopg2, the postgres extra)" if backend == "postgresql" else "")
        raise LedgerUnavailable(f"{redact_url(url)}: the database driver is not installed{extra}: {exc}") from exc


def _create_engine(url: URL) -> Engine:
    if url.get_backend_name() == "sqlite":
        in_memory = url.database in (None, "", ":memory:")
        engine = create_engine(
            url,
            connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S, "check_same_thread": False},
            poolclass=StaticPool if in_memory else None,
        )
        _configure_sqlite(engine, wal=not in_memory, where=shown_url(url))
        return engine
    # No pre-ping: a benchledger process is short-lived and opens few connections,
    # and a ping per checkout is a round trip on every query.
    options: dict[str, Any] = {}
    if url.get_driver_name() == "psycopg2":
        # psycopg2 runs an executemany as one round trip per row unless batched;
        # SQLAlchemy batches plain INSERTs itself but not the projection upsert
        # (INSERT .. ON CONFLICT) or the stream-head UPDATEs: 2,000 upserted rows
        # took 0.35 s unbatched, 0.15 s batched.
        options["executemany_mode"] = "values_plus_batch"
        # The ledger has no hstore column. Left on, the dialect asks every new connection for the
        # hstore type's oids in a transaction of its own (three round trips of a one-artifact
        # ingest's ~35), and where the extension exists would turn any dict parameter into an hstore.
        options["use_native_hstore"] = False
        if "connect_timeout" not in url.query:
            options["connect_args"] = {"connect_timeout": POSTGRES_CONNECT_TIMEOUT_S}
    engine = create_engine(url, **options)
    _name_lost_reads(engine)
    return engine


@contextmanager
def database_errors_as_unavailable(url: str) -> Iterator[None]:
    """Turn a driver's refusal to open or use the database at ``url`` into one :class:`LedgerUnavailable` line."""
    try:
        yield
    except DBAPIError as exc:
        if isinstance(exc, DataError | IntegrityError):
            raise
        raise LedgerUnavailable(f"cannot use the ledger at {shown_url(url)}: {_reason(exc, url)}") from exc


def _reason(exc: DBAPIError, url: str) -> str:
    """The driver's message, first line, with SQLite's terse ones made specific."""
    message = (str(exc.orig).strip().splitlines() or [type(exc.orig).__name__])[0]
    parsed = make_url(normalize_url(url))
    if "no schema has been selected to create in" in message:
        # PostgreSQL's words for a search_path whose schemas do not exist (CREATE SCHEMA forgotten).
        wanted = re.search(r"search_path\s*=\s*([^\s&,]+)", str(parsed.query.get("options", "")))
        schema = wanted.group(1) if wanted else "…"
        named = f" ({schema})" if wanted else ""
        return f"no schema of the search_path{named} exists: create it first (CREATE SCHEMA {schema}), then run `benchledger db upgrade` again"
    path = sqlite_file(parsed)
    if path is None:
        return message
    lowered = message.lower()
    if "unable to open database file" in lowered and not path.parent.is_dir():
        return f"the directory {path.parent} does not exist"
    if "unable to open database file" in lowered and path.is_dir():
        return f"{path} is a folder; name the ledger file (sqlite:///{path / 'ledger.sqlite'})"
    if "unable to open database file" in lowered and path.is_file() and not os.access(path.parent, os.W_OK):
        return (
            f"its folder {path.parent} is read-only, and SQLite writes its write-ahead-log index beside the ledger even "
            f"to read it: copy it to a writable folder, or read it in place with "
            f"--database-url 'sqlite:///file:{path}?immutable=1&uri=true' (only while nothing writes to it)"
        )
    if "file is not a database" in lowered:
        return f"{path} is not a SQLite database"
    if "readonly" in lowered or "read-only" in lowered:
        return f"{path} (or its directory) is read-only"
    return message


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


def _configure_sqlite(engine: Engine, *, wal: bool, where: str) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record) -> None:
        # Let SQLAlchemy, not the sqlite3 module, decide when transactions begin.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        if wal:
            # Before the journal switch, which would outlive this process: another application's file stays as it was.
            recognize_ledger(*sqlite_tables_and_revision(cursor), where)
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


def rows_changed(connection: Connection) -> int:
    """A count that differs from an earlier one of the same transaction once it has changed a row (``Store.writes_committed``):
    SQLite's rows changed by the connection so far; PostgreSQL's whether the transaction under way was given an id (a write
    gives one; 0 before it begins)."""
    if connection.dialect.name == "sqlite":
        return int(connection.connection.dbapi_connection.total_changes)  # type: ignore[union-attr]
    return int(connection.in_transaction() and connection.exec_driver_sql("SELECT txid_current_if_assigned() IS NOT NULL").scalar_one())
