"""Where the ledger lives.

Resolution order: an explicit URL (``--database-url``), then the
``BENCHLEDGER_DATABASE_URL`` environment variable, then the embedded default:
a SQLite file ``ledger.sqlite`` in ``$BENCHLEDGER_HOME``, else
``$XDG_DATA_HOME/benchledger``, else ``~/.local/share/benchledger``, created on
first use. A SQLite file a URL names is created by a command that writes, and
refused by one that only reads while it does not exist (:class:`NoLedger`): a
typo in a path must not pass for an empty ledger.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from benchledger.errors import LedgerUnavailable

IN_MEMORY_URL = "sqlite://"


class NoLedger(LedgerUnavailable):
    """A command that only reads named a SQLite file that does not exist: nothing was created there."""


def default_ledger_path() -> Path:
    home = os.environ.get("BENCHLEDGER_HOME")
    if home:
        return Path(home).expanduser() / "ledger.sqlite"
    data_home = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(data_home) / "benchledger" / "ledger.sqlite"


def _named_url(explicit: str | None) -> str | None:
    """The URL ``--database-url`` or else ``BENCHLEDGER_DATABASE_URL`` names, if either does (else the embedded default is meant)."""
    return explicit or os.environ.get("BENCHLEDGER_DATABASE_URL") or None


def resolve_url(explicit: str | None = None) -> str:
    url = _named_url(explicit)
    if url:
        return url
    path = default_ledger_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as exc:
        # BENCHLEDGER_HOME set to the ledger file itself (or below a file): name the setting, not the OSError.
        if os.environ.get("BENCHLEDGER_HOME"):
            raise LedgerUnavailable(
                f"BENCHLEDGER_HOME is {path.parent}, which is not a directory: it must name the folder that holds ledger.sqlite"
            ) from exc
        raise LedgerUnavailable(f"cannot create the ledger's folder {path.parent}: a file stands in its path") from exc
    except OSError as exc:
        raise LedgerUnavailable(f"cannot create the ledger's folder {path.parent}: {exc.strerror or exc}") from exc
    return f"sqlite:///{path}"


def sqlite_file(url: Any) -> Path | None:
    """The file a SQLite ``url`` (text or a SQLAlchemy URL) names; ``None`` for a server, an in-memory database or
    text that is no URL (opening it says what is wrong)."""
    from sqlalchemy import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except ArgumentError:
        return None
    database = parsed.database
    if parsed.get_backend_name() != "sqlite" or database in (None, "", ":memory:"):
        return None
    if database.startswith("file:"):  # (a URI filename: file:PATH?...)
        database = database[len("file:") :].split("?", 1)[0]
    return Path(database)


def refuse_a_sqlite_host(url: Any) -> None:
    """Raise :class:`~benchledger.errors.LedgerUnavailable` for a SQLite URL that names a host: ``sqlite://tmp/x.sqlite``,
    a slash short, is the file ``x.sqlite`` here (SQLAlchemy takes ``tmp`` for a host and drops it), not ``/tmp/x.sqlite``."""
    from sqlalchemy import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except ArgumentError:
        return
    if parsed.get_backend_name() == "sqlite" and parsed.host:
        meant = f"{parsed.host}/{parsed.database or ''}"
        raise LedgerUnavailable(
            f"{url}: a SQLite URL names no host, and this one names {parsed.host!r} (two slashes after 'sqlite:'): "
            f"write sqlite:///{meant} for the file {meant} here, or sqlite:////{meant} for /{meant}"
        )


def new_ledger_file(explicit: str | None = None, *, create: bool = True) -> Path | None:
    """The SQLite file opening the ledger would create, as it does not exist yet: the embedded default, or the file
    ``explicit`` (else the environment's URL) names; ``None`` when the ledger exists or is on a server.

    ``create=False`` (a command that only reads) refuses a file a URL names instead (:class:`NoLedger`), so that
    nothing is created; the embedded default is created either way, as docs/configuration.md promises.
    """
    named = _named_url(explicit)
    if named:
        refuse_a_sqlite_host(named)
    path = sqlite_file(named) if named else default_ledger_path()
    if path is None or not no_database_yet(path):
        return None
    if named and not create and path.parent.is_dir():  # (a missing folder is named as such when it is opened: nothing created either)
        raise NoLedger(
            f"no ledger at {path}: {'it is an empty file, ' if path.exists() else ''}nothing has been ingested there; "
            "check --database-url (or BENCHLEDGER_DATABASE_URL), or run `benchledger db upgrade` to create an empty one"
        )
    return path


def no_database_yet(path: Path) -> bool:
    """Whether opening the SQLite file ``path`` would create its database: there is no file, or one of no bytes
    (``touch``, ``mktemp``, a copy that failed), which SQLite opens as a new database just as well (a write-ahead log
    beside it, were there one, would hold pages)."""
    if not path.exists():
        return True
    wal = path.with_name(path.name + "-wal")
    return path.is_file() and path.stat().st_size == 0 and not (wal.is_file() and wal.stat().st_size > 0)


def existing_url(explicit: str | None = None) -> str | None:
    """:func:`resolve_url`, but ``None`` where opening it would create a SQLite file (for shell completion)."""
    url = _named_url(explicit)
    path = sqlite_file(url) if url else default_ledger_path()
    if path is not None and (not path.is_file() or no_database_yet(path)):
        return None
    return url or f"sqlite:///{path}"
