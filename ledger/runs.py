"""The read side of ``benchledger runs``: run events from the store, shaped by ``projections.runs``.

Runs are computed at query time rather than materialized: the view spans
goals, and reading the run events of a ledger is one ordered scan.
"""

from __future__ import annotations

from typing import Any

from benchledger.ledger.store import Ledger
from benchledger.projections import runs


def list_runs(ledger: Ledger, *, goal_id: str | None = None) -> list[dict[str, Any]]:
    """Every run (imported LoopX rows and ingested compact runs), latest version of each."""
    if goal_id is not None:
        ledger.require_goal(goal_id)
    return runs.run_views(ledger.read_all(goal_id=goal_id))


def select_runs(
    ledger: Ledger,
    *,
    goal_id: str | None = None,
    benchmark: str | None = None,
    case: str | None = None,
    arm: str | None = None,
    mode: str | None = None,
    status: str | None = None,
    current: bool = False,
) -> list[dict[str, Any]]:
    """``benchledger runs``: the runs (or, with ``current``, each arm's current countable run) that match.

    ``goal_id``, ``benchmark`` and ``case`` choose the cases; ``arm``, ``mode``
    and ``status`` then filter the runs, or with ``current`` the arms by their
    current run (the rule: ``projections.runs``).
    """
    views = [v for v in list_runs(ledger, goal_id=goal_id) if runs.matches(v, benchmark=benchmark, case=case)]
    selected = {"arm": arm, "mode": mode, "status": status}
    if not current:
        return [v for v in views if runs.matches(v, **selected)]
    return [
        entry for entry in runs.current_runs(views)
        if not any(selected.values()) or (entry["current"] is not None and runs.matches(entry["current"], **selected))
    ]
