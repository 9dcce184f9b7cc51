"""benchledger's library API: open a ledger, put evidence in, ask it questions.

Every ``benchledger`` command is one call of a :class:`Ledger` method (the
facade :mod:`benchledger.ledger.api`); the answers are the typed results of
:mod:`benchledger.ledger.results`, whose ``as_dict()`` is what the command
prints with ``--format json``::

    import benchledger

    with benchledger.open("sqlite:///team.sqlite") as ledger:   # None: the environment's, else the embedded default
        ledger.ingest("goal-1", ["run.json"], source="nightly")
        with ledger.history("goal-1") as history:
            for entry in history:
                print(entry.position, entry.kind, entry.lifecycle.current_phase)

Every error a caller can cause is a :class:`benchledger.errors.BenchledgerError`.
docs/python-api.md lists it all. The rooms below (``storage``, ``service``,
``read``) are the implementation, not the API.

Importing this package is cheap on purpose: the names below are loaded on
first use, so SQLAlchemy is only imported once something talks to a database.
"""

from __future__ import annotations

import importlib
from typing import Any

from benchledger._layers import refuse_bare_name

refuse_bare_name(__name__)

_FACADE = "benchledger.ledger.api"
_RESULTS = "benchledger.ledger.results"

# public name -> the module that defines it
_API = {
    **dict.fromkeys(
        (
            "FilesPlan", "Ledger", "LoopxPlan", "ReportViews", "escape_lone_surrogates", "evaluate_review",
            "execute_baseline_failure_gate", "is_goal_id", "load_artifacts", "open", "open_existing", "plan_ingest",
            "plan_ingest_tree", "plan_loopx_import", "read_json", "schema_head", "schema_revision", "upgrade_schema",
            "upgrade_schema_sql", "writes_committed",
        ),
        _FACADE,
    ),
    # Proofs from the Merkle log (docs/proofs.md).
    **dict.fromkeys(("generate_key", "verify_claim", "verify_consistency"), _FACADE),
    **dict.fromkeys(
        ("ClaimBundle", "ClaimCheck", "ConsistencyCheck", "ConsistencyProof", "InclusionProof", "InclusionProofs", "SignedCheckpoint", "TreeHead"),
        _RESULTS,
    ),
    **dict.fromkeys(
        (
            "Attempt", "AuditProblem", "AuditReport", "Comparison", "Comparisons", "CurrentRun", "FaultedRow", "FoldedByOtherVersions", "GoalRow", "Goals", "GoalView", "History",
            "HistoryEntry", "LaggingGoal", "LedgerInfo", "Lifecycle", "Listing", "LoopxImport", "MissingProjection",
            "Outcome", "PassRate", "ProjectionRow", "Refusal", "ReplayReport", "RetractedBy", "RetractedEvent", "Retraction", "Review", "Run",
            "RunListing", "RunPair", "SchemaUpgrade", "StaleProjection", "StandbyReplay", "StatusReport",
        ),
        _RESULTS,
    ),
    # What an ingest (its batches, their members), ingest-batches and import-ndjson return, and the refusal
    # import-ndjson raises with its problems listed.
    **dict.fromkeys(("IngestOutcome", "BatchOutcome", "MemberOutcome"), "benchledger.ledger.service.ingest_outcome"),
    "BatchFileIngest": "benchledger.ledger.service.bulk_report",
    "ImportedExport": "benchledger.ledger.service.exchange",
    "ExportRefused": "benchledger.ledger.service.exchange",
    # What merge returns, and the refusal it raises when goals both ledgers hold have parted.
    **dict.fromkeys(("MergeReport", "MergedGoal", "MergeRefused"), "benchledger.ledger.service.merge"),
    "GoalArchive": "benchledger.ledger.service.goal_archive",
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
