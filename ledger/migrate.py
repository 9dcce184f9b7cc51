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

# The newest revision in migrations/versions (a test keeps the two in step).
HEAD_REVISION = "0003"


class LedgerNeedsUpgrade(LedgerUnavailable):
    """A server ledger is at an older schema revision than this benchledger needs."""


class UnknownRevision(InvalidInput, ValueError):
    """A revision (or revision range) that migrations/versions does not hold."""


# One cheap catalog query per backend instead of an inspector (this runs on every open).
_HAS_VERSION_TABLE = {
    "sqlite": "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'alembic_version'",
    "postgresql": "SELECT to_regclass('alembic_version')",
}


def current_revision(connection: Connection) -> str | None:
    probe = _HAS_VERSION_TABLE.get(connection.dialect.name)
    if probe is not None:
        exists = connection.execute(text(probe)).scalar() is not None
    else:
        exists = inspect(connection).has_table("alembic_version")
    if not exists:
        return None
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

    from benchledger.ledger.store import retry_sqlite_locked

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

    from benchledger.ledger.engine import create_ledger_engine

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
    """Bring an embedded SQLite ledger to head; refuse a server ledger that is behind."""
    with engine.connect() as connection:
        revision = current_revision(connection)
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
    from benchledger.ledger.engine import create_ledger_engine, database_errors_as_unavailable

    engine = create_ledger_engine(url)
    try:
        with database_errors_as_unavailable(url):
            upgrade(engine, revision)
            with engine.connect() as connection:
                return current_revision(connection)
    finally:
        engine.dispose()


def ledger_revision(url: str) -> str | None:
    """``benchledger db current``: the schema revision of the ledger at ``url`` (``None``: not initialized)."""
    from benchledger.ledger.engine import create_ledger_engine, database_errors_as_unavailable

    engine = create_ledger_engine(url)
    try:
        with database_errors_as_unavailable(url), engine.connect() as connection:
            return current_revision(connection)
    finally:
        engine.dispose()
