"""Schema migrations (alembic, shipped in the ``migrations`` package).

A new SQLite ledger is created at the head revision when it is opened. An
existing SQLite ledger at an older revision is migrated only by a command that
writes (:data:`UPGRADE`) or by ``db upgrade``, and never silently: first a copy
of the file as it was is kept beside it (``ledger.sqlite.0004.bak``), then the
caller is told what changed (:class:`Upgraded`, which the command prints on
stderr), since an older benchledger can no longer open the file. A command that
only reads refuses it (:data:`REFUSE`), naming ``db upgrade``. A server
database is never migrated behind its owners' backs: opening one at an older
revision fails with an actionable message. Checking the revision costs one
query; alembic itself is only imported when a migration really runs.
"""

from __future__ import annotations

import io
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from sqlalchemy import Connection, Engine, inspect, text

from benchledger.errors import InvalidInput, LedgerUnavailable
from benchledger.ledger.storage.config import no_database_yet, sqlite_file
from benchledger.ledger.storage.engine import (
    SQLITE_TABLES_QUERY,
    create_ledger_engine,
    database_errors_as_unavailable,
    recognize_ledger,
    refuse_writes_on_standby,
    retry_sqlite_locked,
    shown_url,
)

# The newest revision in migrations/versions (a test keeps the two in step).
HEAD_REVISION = "0007"


class LedgerNeedsUpgrade(LedgerUnavailable):
    """A server ledger is at an older schema revision than this benchledger needs."""


class LedgerTooNew(LedgerUnavailable):
    """The ledger is at a schema revision newer than this benchledger knows: a newer release wrote it."""


class BackupFailed(LedgerUnavailable):
    """The copy of a SQLite ledger kept before migrating it could not be written: nothing was migrated."""


# What opening a ledger at an older schema revision does (a new, empty SQLite ledger is created either way):
# UPGRADE migrates a SQLite ledger, keeping a copy of the file first; REFUSE raises LedgerNeedsUpgrade naming
# `db upgrade`; AS_IS leaves it at its revision (``info``, which reports the revision). A server ledger is refused by both
# UPGRADE and REFUSE: it is migrated by `db upgrade` only.
UPGRADE: Literal["upgrade"] = "upgrade"
REFUSE: Literal["refuse"] = "refuse"
AS_IS: Literal["as-is"] = "as-is"
OlderRevision = Literal["upgrade", "refuse", "as-is"]


@dataclass(frozen=True)
class Upgraded:
    """A ledger migrated when it was opened (or by ``db upgrade``): from which revision to which, and the copy kept of a SQLite file."""

    where: str
    from_revision: str
    to_revision: str
    backup: Path | None  # (a SQLite ledger's file as it was; None on a server)


class UnknownRevision(InvalidInput, ValueError):
    """A revision (or revision range) that migrations/versions does not hold."""


# One cheap catalog query per backend instead of an inspector (this runs on every open).
_HAS_VERSION_TABLE = {
    "sqlite": "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'alembic_version'",
    "postgresql": "SELECT to_regclass('alembic_version')",
}


_TABLES = {
    "sqlite": SQLITE_TABLES_QUERY,
    "postgresql": "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()",
}


def recognized_revision(connection: Connection, *, refuse_newer: bool = True) -> str | None:
    """The revision of the benchledger ledger ``connection`` reaches (``None``: an empty database).

    Raises :class:`NotALedger` for another application's database and
    :class:`LedgerTooNew` for a ledger a newer benchledger wrote, before anything is changed.
    """
    where = shown_url(connection.engine.url)
    query = _TABLES.get(connection.dialect.name)
    tables = connection.execute(text(query)).scalars().all() if query else inspect(connection).get_table_names()
    # The table list names the version table: no second catalog query to ask whether it exists (one round trip less).
    revision = _stamped_revision(connection) if "alembic_version" in tables else None
    revision = recognize_ledger(tables, revision, where)
    if refuse_newer and revision is not None and revision > HEAD_REVISION:
        raise LedgerTooNew(
            f"the ledger at {where} is at schema revision {revision}, newer than this benchledger (revision {HEAD_REVISION}): "
            "it was written by a newer release; use that release (or newer), `db upgrade` cannot take a ledger back"
        )
    return revision


def current_revision(connection: Connection) -> str | None:
    probe = _HAS_VERSION_TABLE.get(connection.dialect.name)
    if probe is not None:
        exists = connection.execute(text(probe)).scalar() is not None
    else:
        exists = inspect(connection).has_table("alembic_version")
    return _stamped_revision(connection) if exists else None


def _stamped_revision(connection: Connection) -> str | None:
    return connection.execute(text("SELECT version_num FROM alembic_version")).scalar()


def _alembic_config(**kwargs):
    from alembic.config import Config

    from benchledger import migrations

    config = Config(**kwargs)
    config.set_main_option("script_location", str(Path(migrations.__file__).parent))
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Migrate to ``revision`` in one transaction.

    On SQLite the transaction takes the write lock up front (``BEGIN
    IMMEDIATE``) and concurrent openers of a fresh embedded ledger wait their
    turn, then find it migrated; a deferred transaction would fail at once with
    "database is locked" when upgrading its read lock. Waits longer than the
    busy timeout are retried with backoff for a bounded time (``LedgerBusy``).
    """
    from alembic import command


    def attempt() -> None:
        with engine.connect() as connection:
            connection.execution_options(benchledger_write=True)
            with connection.begin():
                if engine.dialect.name == "postgresql":
                    # (at head alembic writes nothing, and `db upgrade` would report a standby "upgraded")
                    refuse_writes_on_standby(connection, shown_url(engine.url))
                config = _alembic_config()
                config.attributes["connection"] = connection
                with _revisions_named_by_user():
                    command.upgrade(config, revision)

    retry_sqlite_locked(engine.dialect.name, attempt)


def upgrade_sql(url: str, revision: str = "head", from_revision: str | None = None) -> str:
    """The SQL that upgrading the ``url`` ledger to ``revision`` runs, rendered for the URL's dialect (alembic's
    offline mode), so a server operator can review it before ``benchledger db upgrade``.

    From ``from_revision`` when given (connecting to nothing), else from the
    revision the database is at, which is read and nothing else (a SQLite file
    that does not exist is an empty database; so is a database without tables).
    """
    from alembic import command

    # Creating the engine connects to nothing; it refuses a URL benchledger cannot use.
    engine = create_ledger_engine(url)
    engine.dispose()
    where = shown_url(engine.url)
    if from_revision is None:
        ledger_file = _sqlite_file(engine)
        from_revision = None if ledger_file is not None and not ledger_file.exists() else ledger_revision(url)
        if from_revision is not None and from_revision >= (script_head() if revision == "head" else revision):
            return f"-- the ledger at {where} is at schema revision {from_revision}: nothing to run\n"
    buffer = io.StringIO()
    config = _alembic_config(output_buffer=buffer)
    # The URL only names the dialect; ConfigParser would read a '%' of a password as interpolation.
    config.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False).replace("%", "%%"))
    with _revisions_named_by_user():
        command.upgrade(config, f"{from_revision}:{revision}" if from_revision else revision, sql=True)
    target = script_head() if revision == "head" else revision
    return f"-- the ledger at {where}: schema revision {from_revision or 'none (empty)'} to {target}\n" + buffer.getvalue()


@contextmanager
def _revisions_named_by_user() -> Iterator[None]:
    """alembic's "can't locate revision" becomes :class:`UnknownRevision` (a usage error, not a bug)."""
    from alembic.util import CommandError

    try:
        yield
    except CommandError as exc:
        raise UnknownRevision(f"{exc} (revisions: migrations/versions, head {HEAD_REVISION})") from exc


def script_head() -> str:
    from alembic.script import ScriptDirectory

    from benchledger import migrations

    return ScriptDirectory(str(Path(migrations.__file__).parent)).get_current_head()


def ensure_current(engine: Engine, older: OlderRevision = UPGRADE) -> Upgraded | None:
    """Bring a new SQLite ledger to head, and an older one as ``older`` says (:data:`UPGRADE`, :data:`REFUSE`,
    :data:`AS_IS`); refuse a server ledger that is behind (unless :data:`AS_IS`), and any database that is not a
    benchledger ledger or (unless :data:`AS_IS`) is newer than this benchledger (:func:`recognized_revision`).

    Returns what was migrated, if anything (:class:`Upgraded`).
    """
    with engine.connect() as connection:
        revision = recognized_revision(connection, refuse_newer=older != AS_IS)
    if revision == HEAD_REVISION or (older == AS_IS and revision is not None):
        return None
    sqlite = engine.dialect.name == "sqlite"
    if sqlite and revision is None:  # a new ledger: nothing to keep a copy of, nobody to tell but the creating command
        upgrade(engine)
        return None
    if sqlite and older == UPGRADE:
        return _upgrade_with_backup(engine, revision)
    where = shown_url(engine.url)
    found = f"at schema revision {revision}" if revision else "not initialized"
    if sqlite:  # (a command that only reads)
        raise LedgerNeedsUpgrade(
            f"the ledger at {where} is {found}; this benchledger needs revision {HEAD_REVISION} and a command that only reads "
            f"does not upgrade it: run `benchledger db upgrade` (it keeps a copy of the file as it was)"
        )
    raise LedgerNeedsUpgrade(
        f"the ledger at {where} is {found}; this benchledger needs revision {HEAD_REVISION}: "
        f"run `benchledger --database-url URL db upgrade`"
    )


def _sqlite_file(engine: Engine) -> Path | None:
    """The file of a SQLite ledger (None on a server, or for an in-memory database)."""
    return sqlite_file(engine.url)


def _upgrade_with_backup(engine: Engine, revision: str | None, target: str = "head") -> Upgraded:
    """Migrate a SQLite ledger to ``target``, first keeping a copy of its file as it was: ``FILE.<revision>.bak``
    (``FILE.<revision>.2.bak``, ... when that name is taken: a copy is never overwritten)."""
    where = shown_url(engine.url)
    source = _sqlite_file(engine)
    assert source is not None
    backup = source.with_name(f"{source.name}.{revision or 'empty'}.bak")
    number = 1
    while backup.exists():
        number += 1
        backup = source.with_name(f"{source.name}.{revision or 'empty'}.{number}.bak")
    try:
        # SQLite's backup API copies a consistent snapshot, the write-ahead log's committed pages included.
        with engine.connect() as connection, closing(sqlite3.connect(backup)) as copy:
            connection.connection.driver_connection.backup(copy)
    except (OSError, sqlite3.Error) as exc:
        backup.unlink(missing_ok=True)
        raise BackupFailed(
            f"cannot keep a copy of the ledger at {where} before upgrading it from schema revision {revision} ({backup}: {exc}); "
            "nothing was changed: make its folder writable, or copy the file yourself and run `benchledger db upgrade` there"
        ) from exc
    upgrade(engine, target)
    with engine.connect() as connection:
        now = current_revision(connection) or "none"
    return Upgraded(where, revision or "none", now, backup)


def upgrade_ledger(url: str, revision: str = "head") -> tuple[str | None, str | None, Upgraded | None]:
    """``benchledger db upgrade``: migrate the ledger at ``url`` to ``revision`` (a SQLite file: keeping a copy of it first);
    returns the revision it was at (``None``: an empty database, now a new ledger), the one it is now at, and what was
    migrated (None: nothing, or a new ledger created)."""

    engine = create_ledger_engine(url)
    try:
        with database_errors_as_unavailable(url):
            with engine.connect() as connection:
                # (alembic would take over a foreign database's tables, or fail half-way)
                before = recognized_revision(connection)
            target = script_head() if revision == "head" else revision
            upgraded = None
            if engine.dialect.name == "sqlite" and before is not None and before < target:
                upgraded = _upgrade_with_backup(engine, before, revision)
            else:
                upgrade(engine, revision)
            with engine.connect() as connection:
                now = current_revision(connection)
            if upgraded is None and before is not None and now != before:
                upgraded = Upgraded(shown_url(engine.url), before, now or "none", None)
            return before, now, upgraded
    finally:
        engine.dispose()


def ledger_revision(url: str) -> str | None:
    """``benchledger db current``: the schema revision of the ledger at ``url`` (``None``: not initialized)."""

    engine = create_ledger_engine(url)
    try:
        ledger_file = _sqlite_file(engine)
        if ledger_file is not None and ledger_file.parent.is_dir() and no_database_yet(ledger_file):
            return None  # (connecting would create the file: a look must not leave an empty database behind)
        with database_errors_as_unavailable(url), engine.connect() as connection:
            return recognized_revision(connection, refuse_newer=False)
    finally:
        engine.dispose()
