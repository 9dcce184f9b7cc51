"""One read snapshot shared by a command and its ``--jobs`` worker processes (``audit --jobs N``).

An audit proves the ledger as it was at one moment. Its workers open the
database themselves, so what they read is that moment only if nothing was
committed in between, or if they read the caller's very snapshot:

* **PostgreSQL**: the caller exports its snapshot (``pg_export_snapshot()``, in
  its ``REPEATABLE READ`` transaction, open for the whole audit) and each worker
  reads inside it (``SET TRANSACTION SNAPSHOT``): the same rows, whatever
  commits meanwhile (the way ``pg_dump --jobs`` shares one).
* **SQLite** cannot share a snapshot between processes. A fence tells whether
  anything was committed since the caller's snapshot began: a connection
  outside any transaction reads ``PRAGMA data_version`` before the snapshot
  begins, and reads it again whenever a worker's answer comes back; while it
  is the same, no other connection committed, so the worker's snapshot (begun
  in between) is the caller's. Once it changes, the caller no longer trusts
  what a worker read from stored rows (:meth:`SharedSnapshot.unchanged`).

A snapshot opened before (a caller already inside :meth:`Store.snapshot`)
cannot be fenced on SQLite: there is no :class:`SharedSnapshot` then.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from benchledger.errors import LedgerError
from benchledger.ledger.storage.store import Store

# What pg_export_snapshot() returns (e.g. 00000004-000002D0-1): SET TRANSACTION SNAPSHOT takes no parameter, so it is checked before it is spelt.
_TOKEN = re.compile(r"[0-9A-Fa-f]+(-[0-9A-Fa-f]+)+")


@dataclass
class SharedSnapshot:
    """How a worker reads the caller's snapshot: ``token`` (PostgreSQL), or a fence that says whether its own snapshot is the caller's (SQLite)."""

    token: str | None
    _fence: Any = None  # (SQLite) a DB-API connection outside any transaction
    _version: int | None = None  # (SQLite) its data_version before the caller's snapshot began

    def unchanged(self) -> bool:
        """Whether a worker's snapshot begun since the caller's is the caller's (PostgreSQL: always, it imports it)."""
        return self._fence is None or _data_version(self._fence) == self._version


def _data_version(connection: Any) -> int:
    cursor = connection.cursor()
    try:
        return int(cursor.execute("PRAGMA data_version").fetchone()[0])
    finally:
        cursor.close()


@contextmanager
def sharing(store: Store) -> Iterator[tuple[Store, SharedSnapshot | None]]:
    """A snapshot of ``store`` (:meth:`Store.snapshot`), and how workers read it (None when they cannot: see the module docstring)."""
    if store.dialect == "postgresql":
        with store.snapshot() as view, view.reading() as connection:
            yield view, SharedSnapshot(connection.exec_driver_sql("SELECT pg_export_snapshot()").scalar_one())
        return
    fence = store.engine.raw_connection()  # (the engine's SQLite connections begin no transaction of their own)
    try:
        version = _data_version(fence)
        with store.snapshot() as view:
            # (a view yields itself: its snapshot began before the fence was read, so nothing says it is the workers')
            yield view, None if view is store else SharedSnapshot(None, fence, version)
    finally:
        fence.close()


@contextmanager
def joined(store: Store, token: str | None) -> Iterator[Store]:
    """A view of ``store`` at the shared snapshot ``token`` (a worker's, PostgreSQL), or at a snapshot of now (``None``)."""
    if token is None:
        with store.snapshot() as view:
            yield view
        return
    if _TOKEN.fullmatch(token) is None:
        raise LedgerError(f"not an exported snapshot: {token!r}")
    with store.reading() as connection:
        connection.exec_driver_sql(f"SET TRANSACTION SNAPSHOT '{token}'")  # (the transaction's first statement, as PostgreSQL requires)
        yield Store(store.engine, snapshot_connection=connection)
