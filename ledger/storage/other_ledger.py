"""Another ledger, opened only to read it (``merge --from``): never created, never migrated, never written."""

from __future__ import annotations

import os

from benchledger.errors import LedgerUnavailable
from benchledger.ledger.storage.engine import create_ledger_engine, database_errors_as_unavailable, shown_url
from benchledger.ledger.storage.migrate import HEAD_REVISION, recognized_revision
from benchledger.ledger.storage.store import Store


def open_to_read(url: str) -> Store:
    """The ledger at ``url`` to read from; refused (:class:`LedgerUnavailable`) unless it exists and is a benchledger
    ledger at this benchledger's schema revision (a SQLite file is not created, nor any ledger migrated)."""
    engine = create_ledger_engine(url)
    where = shown_url(engine.url)
    try:
        if engine.dialect.name == "sqlite" and not (engine.url.database and os.path.isfile(engine.url.database)):
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
