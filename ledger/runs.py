"""The read side of ``benchledger runs``: run events from the store, shaped by ``projections.runs``.

Runs are computed at query time rather than materialized: the view spans
goals, and reading the run events of a ledger is one ordered scan.
"""

from __future__ import annotations

from typing import Any

from benchledger.ledger.store import Ledger
from benchledger.ledger.views import UnknownGoal
from benchledger.projections import runs


def list_runs(ledger: Ledger, *, goal_id: str | None = None) -> list[dict[str, Any]]:
    """Every run (imported LoopX rows and ingested compact runs), latest version of each."""
    if goal_id is not None and ledger.head(goal_id) is None:
        raise UnknownGoal(f"no goal {goal_id!r} in this ledger")
    return runs.run_views(ledger.read_all(goal_id=goal_id))
