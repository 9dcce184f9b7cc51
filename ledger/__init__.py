"""benchledger's library API: persistence and the application service.

Open a ledger, put evidence in, ask it questions; every ``benchledger``
command is one call into these names::

    from benchledger.ledger import open_ledger, ingest, history
    from benchledger.ledger.intake.artifacts import collect_artifacts

    ledger = open_ledger("sqlite:///team.sqlite")   # None: the embedded default
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
    "Ledger": "benchledger.ledger.store",
    "open_ledger": "benchledger.ledger.store",
    "ingest": "benchledger.ledger.application",
    "ingest_many": "benchledger.ledger.application",
    "BatchRequest": "benchledger.ledger.application",
    "evaluate_review": "benchledger.ledger.application",
    "evaluate_and_keep": "benchledger.ledger.application",
    "execute_baseline_failure_gate": "benchledger.ledger.application",
    "replay": "benchledger.ledger.application",
    "retract": "benchledger.ledger.application",
    "status": "benchledger.ledger.application",
    "audit": "benchledger.ledger.application",
    "goals": "benchledger.ledger.views",
    "info": "benchledger.ledger.views",
    "show": "benchledger.ledger.views",
    "history": "benchledger.ledger.views",
    "list_runs": "benchledger.ledger.runs",
    "select_runs": "benchledger.ledger.runs",
    "select_pairs": "benchledger.ledger.runs",
    "run_pass_rates": "benchledger.ledger.runs",
    "export_lines": "benchledger.ledger.exchange",
    "import_export": "benchledger.ledger.exchange",
    "plan_import": "benchledger.ledger.loopx_import",
    "import_plan": "benchledger.ledger.loopx_import",
    "upgrade_ledger": "benchledger.ledger.migrate",
    "upgrade_sql": "benchledger.ledger.migrate",
    "ledger_revision": "benchledger.ledger.migrate",
    "HEAD_REVISION": "benchledger.ledger.migrate",
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
