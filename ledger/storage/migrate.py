"""Schema migrations (alembic, shipped in the ``migrations`` package).

The embedded SQLite ledger is migrated automatically when it is opened. A
server database is never migrated behind its owners' backs: opening one at an
older revision fails with an actionable message. Checking the revision costs
one query; alembic itself is only imported when a migration really runs.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Connection, Engine, inspect, text

from benchledger.errors import InvalidInput, LedgerUnavailable
from benchledger.ledger.storage.engine import (
    SQLITE_TABLES_QUERY,
    create_ledger_engine,
    database_errors_as_unavailable,
    recognize_ledger,
    retry_sqlite_locked,
)

# The newest revision in migrations/versions (a test keeps the two in step).
HEAD_REVISION = "0006"


class LedgerNeedsUpgrade(LedgerUnavailable):
    """A server ledger is at an older schema revision than this benchledger needs."""


class LedgerTooNew(LedgerUnavailable):
    """The ledger is at a schema revision newer than this benchledger knows: a newer release wrote it."""


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
    where = connection.engine.url.render_as_string(hide_password=True)
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
                config = _alembic_config()
                config.attributes["connection"] = connection
                with _revisions_named_by_user():
                    command.upgrade(config, revision)

    retry_sqlite_locked(engine.dialect.name, attempt)


def upgrade_sql(url: str, revision: str = "head", from_revision: str | None = None) -> str:
    """The SQL that upgrading a ``url`` ledger from ``from_revision`` (an empty database when
    ``None``) to ``revision`` runs, rendered for the URL's dialect without connecting (alembic's
    offline mode), so a server operator can review it before ``benchledger db upgrade``."""
    from alembic import command


    # Creating the engine connects to nothing; it refuses a URL benchledger cannot use.
    engine = create_ledger_engine(url)
    engine.dispose()
    buffer = io.StringIO()
    config = _alembic_config(output_buffer=buffer)
    # The URL only names the dialect; ConfigParser would read a '%' of a password as interpolation.
    config.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False).replace("%", "%%"))
    with _revisions_named_by_user():
        command.upgrade(config, f"{from_revision}:{revision}" if from_revision else revision, sql=True)
    return buffer.getvalue()


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


def ensure_current(engine: Engine) -> None:
    """Bring an embedded SQLite ledger to head; refuse a server ledger that is behind, and any database
    that is not a benchledger ledger or is newer than this benchledger (:func:`recognized_revision`)."""
    with engine.connect() as connection:
        revision = recognized_revision(connection)
    if revision == HEAD_REVISION:
        return
    if engine.dialect.name == "sqlite":
        upgrade(engine)
        return
    where = engine.url.render_as_string(hide_password=True)
    found = f"at revision {revision}" if revision else "not initialized"
    raise LedgerNeedsUpgrade(
        f"the ledger at {where} is {found}; this benchledger needs revision {HEAD_REVISION}: "
        f"run `benchledger --database-url URL db upgrade`"
    )


def upgrade_ledger(url: str, revision: str = "head") -> str | None:
    """``benchledger db upgrade``: migrate the ledger at ``url`` to ``revision``; returns the revision it is now at."""

    engine = create_ledger_engine(url)
    try:
        with database_errors_as_unavailable(url):
            with engine.connect() as connection:
                recognized_revision(connection)  # (alembic would take over a foreign database's tables, or fail half-way)
            upgrade(engine, revision)
            with engine.connect() as connection:
                return current_revision(connection)
    finally:
        engine.dispose()


def ledger_revision(url: str) -> str | None:
    """``benchledger db current``: the schema revision of the ledger at ``url`` (``None``: not initialized)."""

    engine = create_ledger_engine(url)
    try:
        with database_errors_as_unavailable(url), engine.connect() as connection:
            return recognized_revision(connection, refuse_newer=False)
    finally:
        engine.dispose()
