"""The read side of ``benchledger runs``: run events from the store, shaped by ``projections.runs``.

Runs are computed at query time rather than materialized: the view spans
goals, and reading the run events of a ledger is one ordered scan.

Filters are checked against what the ledger holds: a ``--status`` that is no
known status, or a benchmark, case, arm or mode that no run in the goal(s)
has, is an :class:`UnknownFilterValue` naming the values there are, not an
empty listing that looks like an answer.
"""

from __future__ import annotations

from typing import Any

from benchledger.errors import InvalidInput
from benchledger.ledger.storage.event_records import StoredEvent
from benchledger.ledger.storage.store import Store, one_snapshot
from benchledger.projections import retraction, runs

# filter -> the run field it matches
FILTER_FIELDS = {"benchmark": "benchmark_id", "case": "case_id", "arm": "arm", "mode": "mode"}
# How many valid values an error lists before it says how many more there are.
CHOICES_SHOWN = 12


class UnknownFilterValue(InvalidInput, ValueError):
    """A ``runs`` filter whose value no run can have: the valid choices are in the message."""


@one_snapshot
def _run_events(ledger: Store, goal_id: str | None) -> list[StoredEvent]:
    if goal_id is not None:
        ledger.require_goal(goal_id)
    # (a goal's retractions follow what they retract: retraction.visible reads each goal's in stream order)
    return retraction.visible(list(ledger.read_all(goal_id=goal_id, kinds=(*runs.RUN_KINDS, runs.COMPARISON_KIND, retraction.KIND))))


def list_runs(ledger: Store, *, goal_id: str | None = None) -> list[dict[str, Any]]:
    """Every run (imported LoopX rows and ingested compact runs), latest version of each."""
    return runs.run_views(_run_events(ledger, goal_id))


def _choices(values: set[Any]) -> str:
    shown = sorted(str(v) for v in values if v is not None)
    if not shown:
        return "(no runs)"
    more = len(shown) - CHOICES_SHOWN
    return ", ".join(shown[:CHOICES_SHOWN]) + (f" … ({more} more)" if more > 0 else "")


def check_filters(views: list[dict[str, Any]], **filters: str | None) -> None:
    """Refuse a filter value that cannot match (rule: module docstring)."""
    for name, value in filters.items():
        if value is None:
            continue
        if name == "status":
            known = {*runs.RUN_STATUSES, *runs.SCORE_STATUSES, *(v["status"] for v in views), *(v["score_status"] for v in views)}
            what = "a run or score status"
        else:
            known = {v[FILTER_FIELDS[name]] for v in views}
            what = f"the {name} of any run here"
        if value not in known:
            raise UnknownFilterValue(f"--{name} {value!r} is not {what}; choose from: {_choices(known)}")


def select_runs(
    ledger: Store,
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
    views = list_runs(ledger, goal_id=goal_id)
    check_filters(views, benchmark=benchmark, case=case, arm=arm, mode=mode, status=status)
    views = [v for v in views if runs.matches(v, benchmark=benchmark, case=case)]
    selected = {"arm": arm, "mode": mode, "status": status}
    if not current:
        return [v for v in views if runs.matches(v, **selected)]
    return [
        entry for entry in runs.current_runs(views)
        if not any(selected.values()) or (entry["current"] is not None and runs.matches(entry["current"], **selected))
    ]


def run_pass_rates(ledger: Store, *, current: bool = False, **filters: Any) -> list[dict[str, Any]]:
    """``runs --summary``: pass rates per benchmark and arm over the runs :func:`select_runs` selects.

    With ``current`` each arm counts its current countable run only.
    """
    selected = select_runs(ledger, current=current, **filters)
    return runs.pass_rates([e["current"] for e in selected if e["current"] is not None] if current else selected)


def select_pairs(ledger: Store, *, goal_id: str | None = None, **filters: str | None) -> list[dict[str, Any]]:
    """``runs --paired``: baseline and treatment side by side (rule: ``projections.runs.paired_runs``).

    The filters are :func:`select_runs`'s: ``goal_id``, ``benchmark`` and
    ``case`` choose the pairs; ``arm``, ``mode`` and ``status`` keep the pairs
    one of whose two runs matches.
    """
    events = _run_events(ledger, goal_id)
    views = runs.run_views(events)
    check_filters(views, **filters)
    pairs = runs.paired_runs(views, [e for e in events if e.kind == runs.COMPARISON_KIND])
    chosen = {name: filters.get(name) for name in ("benchmark", "case")}
    selected = {name: filters.get(name) for name in ("arm", "mode", "status")}
    return [
        p for p in pairs
        if runs.matches(p, **chosen)
        and (not any(selected.values()) or any(r is not None and runs.matches(r, **selected) for r in (p["baseline"], p["treatment"])))
    ]
