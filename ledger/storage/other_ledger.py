"""Another ledger, opened only to read it (``merge --from``): never created, never migrated, never written."""

from __future__ import annotations

import os
import uuid
from typing import Any

from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError

from benchledger.errors import LedgerUnavailable
from benchledger.ledger.storage.config import sqlite_file
from benchledger.ledger.storage.engine import create_ledger_engine, database_errors_as_unavailable, shown_url
from benchledger.ledger.storage.migrate import HEAD_REVISION, recognized_revision
from benchledger.ledger.storage.store import Store


def open_to_read(url: str) -> Store:
    """The ledger at ``url`` to read from; refused (:class:`LedgerUnavailable`) unless it exists and is a benchledger
    ledger at this benchledger's schema revision (a SQLite file is not created, nor any ledger migrated)."""
    engine = create_ledger_engine(url)
    where = shown_url(engine.url)
    try:
        file = sqlite_file(engine.url)  # (a URI filename too: file:PATH?immutable=1, a ledger read in place)
        if engine.dialect.name == "sqlite" and not (file is not None and file.is_file()):
            raise LedgerUnavailable(f"{where}: no ledger file there (a ledger to read from must exist)")
        with database_errors_as_unavailable(url), engine.connect() as connection:
            revision = recognized_revision(connection)
        if revision != HEAD_REVISION:
            found = f"at schema revision {revision}" if revision else "an empty database, not a ledger"
            raise LedgerUnavailable(
                f"the ledger at {where} is {found}; this benchledger reads revision {HEAD_REVISION} "
                "(`benchledger --database-url URL db upgrade` brings a ledger to it)"
            )
    except BaseException:
        engine.dispose()
        raise
    return Store(engine)


def same_ledger(one: Engine, other: Engine) -> bool:
    """Whether two engines reach one ledger (``merge --from`` the ledger it merges into), whatever the URLs' spelling: one
    SQLite file, its path resolved (symlinks, ``..``, a hard link), or one PostgreSQL server, database and schema as the
    servers themselves say (:func:`_same_postgresql`: ``localhost`` and ``127.0.0.1``, a socket, another port forwarded
    to it, are one server)."""
    if one.dialect.name != other.dialect.name:
        return False
    if one.dialect.name == "sqlite":
        first, second = sqlite_file(one.url), sqlite_file(other.url)  # (a URI filename too: file:PATH?immutable=1)
        if first is None or second is None:  # (each in-memory ledger is its own)
            return False
        try:
            return os.path.samefile(first, second)
        except OSError:
            return os.path.realpath(first) == os.path.realpath(second)
    try:
        return _same_postgresql(one, other)
    except DBAPIError:  # (a server that will not say: the URLs' server, database and schema, as they are spelled)
        return _server_database_schema(one) == _server_database_schema(other)


def _same_postgresql(one: Engine, other: Engine) -> bool:
    """Whether ``other`` reaches the very server, database and schema of ``one``, by asking it.

    A connection of ``one`` names itself, for its transaction only, with a name no other session has (its
    ``application_name``, which ``pg_stat_activity`` shows every role, privileged or not); ``other``'s server is
    the same one if it sees that session, in its own database, and its schema is the same. Neither the URLs' host
    names (``localhost``, ``127.0.0.1``, a socket directory, a forwarded port) nor a copy of the server (a
    promoted replica shares its ``system_identifier``) can mislead it.
    """
    probe = f"benchledger-same-ledger-{uuid.uuid4().hex}"
    with one.connect() as mine:
        mine.execute(text("SELECT set_config('application_name', :probe, true)"), {"probe": probe})  # (true: this transaction's)
        schema = mine.execute(text("SELECT current_schema()")).scalar_one()
        with other.connect() as theirs:
            seen = theirs.execute(
                text(
                    "SELECT current_schema() FROM pg_stat_activity "
                    "WHERE application_name = :probe AND datname = current_database()"
                ),
                {"probe": probe},
            ).first()
        mine.rollback()
    return seen is not None and seen[0] == schema


def _server_database_schema(engine: Engine) -> tuple[str, int, Any]:
    """A PostgreSQL ledger's server (host, port: libpq's defaults when the URL leaves them out), database and schema."""
    with engine.connect() as connection:
        where = tuple(connection.execute(text("SELECT current_database(), current_schema()")).one())
    return (engine.url.host or "localhost").lower(), engine.url.port or 5432, where
