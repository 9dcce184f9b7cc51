"""benchledger's library API: persistence and the application service.

Open a ledger, put evidence in, ask it questions; every ``benchledger``
command is one call into these names::

    from benchledger.ledger import open_store, ingest, history
    from benchledger.ledger.service.intake.artifacts import collect_artifacts

    ledger = open_store("sqlite:///team.sqlite")   # None: the embedded default
    try:
        artifacts, sources, errors = collect_artifacts(["run.json"], None)
        ingest(ledger, "goal-1", artifacts, source="nightly")
        print(history(ledger, "goal-1")["entries"][-1]["lifecycle"])
    finally:
        ledger.close()

Every error a caller can cause is a :class:`benchledger.errors.BenchledgerError`.
Importing this package is cheap on purpose (the review commands import it on
every call): the names below are loaded on first use, so SQLAlchemy is only
imported once something talks to a database.
"""

from __future__ import annotations

import importlib
from typing import Any

# public name -> the module that defines it
_API = {
    "Store": "benchledger.ledger.storage.store",
    "open_store": "benchledger.ledger.storage.store",
    "ingest": "benchledger.ledger.service.ingest",
    "ingest_many": "benchledger.ledger.service.ingest",
    "BatchRequest": "benchledger.ledger.service.ingest",
    "evaluate_review": "benchledger.ledger.service.reviews",
    "evaluate_and_keep": "benchledger.ledger.service.reviews",
    "execute_baseline_failure_gate": "benchledger.ledger.service.reviews",
    "replay": "benchledger.ledger.service.maintenance",
    "retract": "benchledger.ledger.service.retract",
    "status": "benchledger.ledger.service.maintenance",
    "audit": "benchledger.ledger.service.maintenance",
    "goals": "benchledger.ledger.read.views",
    "info": "benchledger.ledger.read.views",
    "show": "benchledger.ledger.read.views",
    "history": "benchledger.ledger.read.views",
    "list_runs": "benchledger.ledger.read.runs",
    "select_runs": "benchledger.ledger.read.runs",
    "select_pairs": "benchledger.ledger.read.runs",
    "run_pass_rates": "benchledger.ledger.read.runs",
    "export_lines": "benchledger.ledger.service.exchange",
    "import_export": "benchledger.ledger.service.exchange",
    "plan_import": "benchledger.ledger.service.loopx_import",
    "import_plan": "benchledger.ledger.service.loopx_import",
    "upgrade_ledger": "benchledger.ledger.storage.migrate",
    "upgrade_sql": "benchledger.ledger.storage.migrate",
    "ledger_revision": "benchledger.ledger.storage.migrate",
    "HEAD_REVISION": "benchledger.ledger.storage.migrate",
}

__all__ = sorted(_API)


def __getattr__(name: str) -> Any:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
