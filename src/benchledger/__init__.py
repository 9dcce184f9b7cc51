"""benchledger: the durable, auditable ledger of agent-benchmark evidence.

The repository keeps its layers as top-level folders; installed, they are the
subpackages of this one import package, and their imports run one way only:

* :mod:`benchledger.cli` – parsing and printing (click);
* :mod:`benchledger.ledger` – persistence and the application service; its
  :mod:`~benchledger.ledger.api` is the library API (``benchledger.open``, ``benchledger.Ledger``);
* :mod:`benchledger.projections` – pure LoopX semantics: normalizers, reducers, linking rules.

:mod:`benchledger.errors` holds the one error root every layer raises from.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# Loaded on first use: importing benchledger (or benchledger.errors) imports no database library.
_API = ("Ledger", "open")


def __getattr__(name: str) -> Any:
    if name not in _API:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module("benchledger.ledger.api"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))
