"""Where the ledger lives.

Resolution order: an explicit URL (``--database-url``), then the
``BENCHLEDGER_DATABASE_URL`` environment variable, then the embedded default:
a SQLite file ``ledger.sqlite`` in ``$BENCHLEDGER_HOME``, else
``$XDG_DATA_HOME/benchledger``, else ``~/.local/share/benchledger``, created on
first use.
"""

from __future__ import annotations

import os
from pathlib import Path

from benchledger.errors import LedgerUnavailable

IN_MEMORY_URL = "sqlite://"


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


def new_default_ledger(explicit: str | None = None) -> Path | None:
    """The embedded default's path when ``explicit`` and the environment name no ledger and that file does not exist yet."""
    if _named_url(explicit):
        return None
    path = default_ledger_path()
    return None if path.exists() else path


def existing_url(explicit: str | None = None) -> str | None:
    """:func:`resolve_url`, but ``None`` where that would create the embedded default (for shell completion)."""
    url = _named_url(explicit)
    if url:
        return url
    path = default_ledger_path()
    return f"sqlite:///{path}" if path.is_file() else None
