"""Goal hygiene: a new goal whose name is one typo away from an existing goal's, or a file's, is refused unless it is meant.

A goal is created by the first write that names it, and kept for ever: a
typo in ``--goal`` (``tb2-db-wall`` for ``tb2-db-wal``) would otherwise start
a second, permanent goal without a word. Every write that may create a goal
passes :func:`refuse_unmeant_names` (in ``service.ingest.Ingest``, the one write
path; ``ingest-batches`` also while it validates its file, so that no
transaction of it is refused half-way). The rule (docs/cli.md, "New goals"):

* two names are *close* by :mod:`ledger.storage.goal_names`'s rule (one typo
  apart, a series such as ``run-07``/``run-08`` excepted), which a read of an
  unknown goal uses for its suggestion too;
* a new goal close to a goal the ledger holds (or to one created earlier in
  the same write) is refused with "did you mean …", unless the caller said it
  is meant (``--new-goal``; an ``ingest-batches`` line's ``"new_goal": true``);
* so is a new goal whose name is the path of a file here, or ends
  in ``.json`` or ``.ndjson`` (``ingest --goal run.json run.json``: a file's name
  given where the goal's goes), before its closeness is asked.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from benchledger.errors import InvalidInput
from benchledger.ledger.storage.goal_names import SUGGESTED, GoalNames, names_a_file
from benchledger.ledger.storage.transaction import Transaction

# The suffixes of the files a write reads (artifacts, an ingest-batches file): a new goal named so is a file's name.
FILE_SUFFIXES = (".json", ".ndjson")


class UnmeantGoalName(InvalidInput):
    """A new goal's name is close to an existing goal's (a typo?) or is a file's; nothing was written."""


def close_name_problem(goal_id: str, close: Sequence[str], *, how_meant: str) -> str:
    """What a refusal says of new goal ``goal_id``, close to the existing ``close`` (the most alike first)."""
    shown = ", ".join(repr(other) for other in close[:SUGGESTED]) + (", ..." if len(close) > SUGGESTED else "")
    return (
        f"goal {goal_id!r} does not exist and its name is close to the existing goal{'s' if len(close) > 1 else ''} {shown}: "
        f"did you mean {close[0]!r}? Nothing was written; {how_meant} if a new goal is meant"
    )


def file_name_problem(goal_id: str, *, how_meant: str) -> str | None:
    """What a refusal says of new goal ``goal_id`` when its name is a file's (see the module); ``None`` when it is not."""
    suffix = next((suffix for suffix in FILE_SUFFIXES if goal_id.lower().endswith(suffix)), None)
    if names_a_file(goal_id):
        what = "is that of a file here"
    elif suffix is not None:
        what = f"ends in {goal_id[-len(suffix):]}, as a file's does"
    else:
        return None
    return (
        f"goal {goal_id!r} does not exist and its name {what}: was a file given where the goal's name goes? "
        f"Nothing was written; {how_meant} if a new goal of that name is meant"
    )


def new_goal_problem(goal_id: str, known: GoalNames, *, how_meant: str) -> str | None:
    """Why new goal ``goal_id``, not said to be meant, is refused: its name is a file's, or close to one of ``known``."""
    file_problem = file_name_problem(goal_id, how_meant=how_meant)
    if file_problem is not None:
        return file_problem
    close = known.close_to(goal_id)
    return close_name_problem(goal_id, close, how_meant=how_meant) if close else None


def refuse_unmeant_names(tx: Transaction, goal_ids: Sequence[str], meant: Collection[str], *, how_meant: str) -> None:
    """Refuse (:class:`UnmeantGoalName`) the goals of ``goal_ids`` (in the order a write creates them) that the ledger
    lacks and are not ``meant``, whose names are a file's or close to a goal the ledger holds or one created before
    them in the same write (:func:`new_goal_problem`)."""
    ordered = list(dict.fromkeys(goal_ids))
    held = tx.heads_of(ordered)
    new = [goal for goal in ordered if goal not in held]
    if all(goal in meant for goal in new):
        return
    known = GoalNames(tx.goal_ids())
    problems = []
    for goal in new:
        problem = None if goal in meant else new_goal_problem(goal, known, how_meant=how_meant)
        if problem:
            problems.append(problem)
        known.add(goal)
    if problems:
        raise UnmeantGoalName("; ".join(problems))
