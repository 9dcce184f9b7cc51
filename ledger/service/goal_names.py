"""Goal hygiene: a new goal whose name is one typo away from an existing goal's is refused unless it is meant.

A goal is created by the first write that names it, and kept for ever: a
typo in ``--goal`` (``tb2-db-wall`` for ``tb2-db-wal``) would otherwise start
a second, permanent goal without a word. Every write that may create a goal
passes :func:`refuse_close_names` (in ``service.ingest.Ingest``, the one write
path; ``ingest-batches`` also while it validates its file, so that no
transaction of it is refused half-way). The rule (docs/cli.md, "New goals"):

* two names are *close* by :mod:`ledger.storage.goal_names`'s rule (one typo
  apart, a series such as ``run-07``/``run-08`` excepted), which a read of an
  unknown goal uses for its suggestion too;
* a new goal close to a goal the ledger holds (or to one created earlier in
  the same write) is refused with "did you mean …", unless the caller said it
  is meant (``--new-goal``; an ``ingest-batches`` line's ``"new_goal": true``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from benchledger.errors import InvalidInput
from benchledger.ledger.storage.goal_names import SUGGESTED, GoalNames
from benchledger.ledger.storage.transaction import Transaction


class CloseGoalName(InvalidInput):
    """A new goal's name is close to an existing goal's (a typo?); nothing was written."""


def close_name_problem(goal_id: str, close: Sequence[str], *, how_meant: str) -> str:
    """What a refusal says of new goal ``goal_id``, close to the existing ``close`` (the most alike first)."""
    shown = ", ".join(repr(other) for other in close[:SUGGESTED]) + (", ..." if len(close) > SUGGESTED else "")
    return (
        f"goal {goal_id!r} does not exist and its name is close to the existing goal{'s' if len(close) > 1 else ''} {shown}: "
        f"did you mean {close[0]!r}? Nothing was written; {how_meant} if a new goal is meant"
    )


def refuse_close_names(tx: Transaction, goal_ids: Sequence[str], meant: Collection[str], *, how_meant: str) -> None:
    """Refuse (:class:`CloseGoalName`) the goals of ``goal_ids`` (in the order a write creates them) that the ledger
    lacks, are not ``meant`` and are close to a goal the ledger holds or one created before them in the same write."""
    ordered = list(dict.fromkeys(goal_ids))
    held = tx.heads_of(ordered)
    new = [goal for goal in ordered if goal not in held]
    if all(goal in meant for goal in new):
        return
    known = GoalNames(tx.goal_ids())
    problems = []
    for goal in new:
        close = [] if goal in meant else known.close_to(goal)
        if close:
            problems.append(close_name_problem(goal, close, how_meant=how_meant))
        known.add(goal)
    if problems:
        raise CloseGoalName("; ".join(problems))
