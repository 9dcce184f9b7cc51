"""Goal names one typo apart: the rule that tells a typo from a new goal, and the suggestion a refusal makes.

Two names are *close* when both have at least :data:`MIN_LENGTH` characters, they are not the same apart from their
digits and their one-character parts (``run-07`` and ``run-08``, ``exp-a`` and ``exp-b`` are a series, not a typo),
and, ignoring case, one becomes the other by at most one edit — two when the longer name has :data:`TWO_EDITS_FROM`
characters or more — an edit being inserting, deleting or replacing a character, or swapping two adjacent ones.

A write refuses a new goal close to one the ledger holds (``ledger.service.goal_names``); a read of a goal the ledger
does not hold names the close ones (:func:`unknown_goal`). Names are the stored goal ids: this module knows no review.

A name may also be a file's given where the goal's name goes (``ingest --goal run.json run.json``): :func:`names_a_file`
says whether it names a file here, which a write refuses and a read of an unknown goal says.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from benchledger.errors import UnknownGoal

MIN_LENGTH = 5
TWO_EDITS_FROM = 10
# What a series of goals numbers or letters its members by: a run of digits, or a part of one character between
# separators (``run-07``/``run-08``, ``tb2-…``/``tb3-…``, ``exp-a``/``exp-b``).
_SERIES_MARK = re.compile(r"[0-9]+|(?<![^-_.:])[^-_.:](?![^-_.:])")
# How many close names a refusal suggests.
SUGGESTED = 3


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


def names_a_file(name: str) -> bool:
    """Whether ``name`` is the path of a file from the working directory (where a user typing a goal's name stands;
    a name no path can be, with a NUL or too long, is none).

    A directory is not asked: a folder named after its goal is how runs are kept (``ingest --goal db-wal db-wal/``),
    and a name written as a directory's path (``results/``, ``./results``) is no goal's name to begin with."""
    return os.path.isfile(name)


def unknown_goal(goal_id: str, names: Iterable[str]) -> UnknownGoal:
    """The error for a goal the ledger does not hold, naming the goals of ``names`` close to it (a typo?), and saying
    so when its name is a file's (a path given for the goal)."""
    if not isinstance(goal_id, str):
        return UnknownGoal.named(goal_id)
    return UnknownGoal.named(goal_id, GoalNames(names).close_to(goal_id)[:SUGGESTED], names_a_file=names_a_file(goal_id))
