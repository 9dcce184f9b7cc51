"""Goal hygiene: a new goal whose name is one typo away from an existing goal's is refused unless it is meant.

A goal is created by the first write that names it, and kept for ever: a
typo in ``--goal`` (``tb2-db-wall`` for ``tb2-db-wal``) would otherwise start
a second, permanent goal without a word. Every write that may create a goal
passes :func:`refuse_close_names` (in ``service.ingest.Ingest``, the one write
path; ``ingest-batches`` also while it validates its file, so that no
transaction of it is refused half-way). The rule (docs/cli.md, "New goals"):

* two names are *close* when both have at least :data:`MIN_LENGTH` characters,
  they are not the same apart from their digits and their one-character parts
  (``run-07`` and ``run-08``, ``exp-a`` and ``exp-b`` are a series, not a
  typo), and, ignoring case, one becomes the other by at most
  one edit — two when the longer name has :data:`TWO_EDITS_FROM` characters or
  more — an edit being inserting, deleting or replacing a character, or
  swapping two adjacent ones;
* a new goal close to a goal the ledger holds (or to one created earlier in
  the same write) is refused with "did you mean …", unless the caller said it
  is meant (``--new-goal``; an ``ingest-batches`` line's ``"new_goal": true``).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence

from benchledger.errors import InvalidInput
from benchledger.ledger.storage.transaction import Transaction

MIN_LENGTH = 5
TWO_EDITS_FROM = 10
# What a series of goals numbers or letters its members by: a run of digits, or a part of one character between
# separators (``run-07``/``run-08``, ``tb2-…``/``tb3-…``, ``exp-a``/``exp-b``).
_SERIES_MARK = re.compile(r"[0-9]+|(?<![^-_.:])[^-_.:](?![^-_.:])")
# How many close names a refusal suggests.
SUGGESTED = 3


class CloseGoalName(InvalidInput):
    """A new goal's name is close to an existing goal's (a typo?); nothing was written."""


def _edits(a: str, b: str, limit: int) -> int | None:
    """How many edits make ``a`` into ``b`` (insert, delete, replace, swap adjacent: optimal string alignment), if at most ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return None
    before: list[int] | None = None
    previous = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            row[j] = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + cost)
            if before is not None and i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], before[j - 2] + 1)
        if min(row) > limit:
            return None
        before, previous = previous, row
    return previous[-1] if previous[-1] <= limit else None


def are_close(new: str, existing: str) -> bool:
    """Whether ``new`` is close to ``existing`` by the module's rule (a different name one typo away)."""
    return _closeness(new, existing) is not None


def _closeness(new: str, existing: str) -> int | None:
    """How many edits apart two close names are (0: they differ in case only); ``None`` when they are not close."""
    if new == existing or min(len(new), len(existing)) < MIN_LENGTH:
        return None
    a, b = new.casefold(), existing.casefold()
    if a == b:
        return 0
    if _SERIES_MARK.sub("#", a) == _SERIES_MARK.sub("#", b):
        return None
    return _edits(a, b, 2 if max(len(a), len(b)) >= TWO_EDITS_FROM else 1)


class GoalNames:
    """Goal names, kept by length so that a new name is compared only with those it can be close to, each with the
    set of its characters (:func:`_letters`): most names share too few of them to be close, told in one operation."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        self._by_length: dict[int, list[tuple[str, int]]] = {}
        for name in names:
            self.add(name)

    def add(self, name: str) -> None:
        self._by_length.setdefault(len(name), []).append((name, _letters(name)))

    def close_to(self, name: str) -> list[str]:
        """The names close to ``name`` (:func:`are_close`), the most alike first."""
        if len(name) < MIN_LENGTH:
            return []
        letters = _letters(name)
        found = []
        for length in range(len(name) - 2, len(name) + 3):
            # (an edit changes the set of a name's characters by two at most: one gone, one new)
            most_apart = 2 * (2 if max(length, len(name)) >= TWO_EDITS_FROM else 1)
            for other, other_letters in self._by_length.get(length, ()):
                if (letters ^ other_letters).bit_count() > most_apart:
                    continue
                edits = _closeness(name, other)
                if edits is not None:
                    found.append((edits, other))
        return [other for _, other in sorted(found)]


def _letters(name: str) -> int:
    """The set of ``name``'s characters, case folded, as bits (a character's code modulo 64: characters that share a bit
    can only make two sets look closer than they are, never further apart, so no close name is passed over)."""
    bits = 0
    for character in name.casefold():
        bits |= 1 << (ord(character) % 64)
    return bits


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
