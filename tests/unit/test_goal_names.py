"""The close-name check's shortcut (a new goal's name against every goal's, by the sets of their characters) passes
over no close name: it finds exactly what comparing with every name finds, in the same order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from benchledger.ledger.storage.goal_names import GoalNames, _closeness, are_close

# Few characters, names of lengths around the two-edit threshold: close pairs, series and case variants are common.
NAMES = st.text(alphabet="abAB-_.:019", min_size=3, max_size=13)


WIDE = "abcdefghijklmnopqrstuvwxyzABZ0123456789-_.:"


@st.composite
def edited(draw, name: str) -> str:
    """``name`` after one or two edits (replace, insert, delete, swap) with characters it may not hold."""
    text = list(name)
    for _ in range(draw(st.integers(1, 2))):
        at = draw(st.integers(0, max(len(text) - 1, 0)))
        how = draw(st.sampled_from(["replace", "insert", "delete", "swap"]))
        if how == "replace" and text:
            text[at] = draw(st.sampled_from(WIDE))
        elif how == "insert":
            text.insert(at, draw(st.sampled_from(WIDE)))
        elif how == "delete" and len(text) > 1:
            del text[at]
        elif how == "swap" and at + 1 < len(text):
            text[at], text[at + 1] = text[at + 1], text[at]
    return "".join(text)


@given(st.data(), st.text(alphabet=WIDE, min_size=3, max_size=14), st.lists(NAMES, max_size=30))
def test_close_to_finds_what_comparing_with_every_name_finds(data, name, others):
    held = [*others, *data.draw(st.lists(edited(name), max_size=6))]
    names = GoalNames(held)
    everyone = sorted((_closeness(name, other), other) for other in held if are_close(name, other))
    assert names.close_to(name) == [other for _, other in everyone]


def test_typos_are_still_found_among_many_names():
    held = [f"skills-{n:05d}-pilot" for n in range(5000)] + ["tb2-db-wal", "skills-pilot"]
    names = GoalNames(held)
    assert names.close_to("tb2-db-wall") == ["tb2-db-wal"]
    assert names.close_to("SKILLS-PILOTS") == ["skills-pilot"]
    assert names.close_to("tb2-bd-wal") == ["tb2-db-wal"]  # a swap
    assert names.close_to("tb2-db-wax") == ["tb2-db-wal"]  # a replace: one character gone, one new
    assert names.close_to("tb3-db-wal") == []  # a series, not a typo
