"""Naming an event on the command line: its id, a unique prefix of it, or ``@POSITION`` (the ``pos`` column of ``history``).

``retract`` and ``prove`` take the same references, resolved here once; each command says in its own words what it
refused.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from benchledger.ledger.read.views import events_matching
from benchledger.ledger.storage.store import Store

# The shortest id prefix taken (git's rule): shorter ones name too many events to be meant.
MIN_PREFIX = 4
# Candidates an ambiguous prefix lists.
SHOWN_CANDIDATES = 10
_POSITION = re.compile(r"@[0-9]{1,19}")
_PREFIX = re.compile(r"[0-9a-fA-F-]+")


def resolve_references(ledger: Store, references: Sequence[str], goal_id: str | None = None) -> tuple[list[str], list[str]]:
    """The event ids ``references`` name (ids, unique prefixes of at least :data:`MIN_PREFIX` characters, ``@POSITION``), in
    order, and the problems of those that name none: a reference of another shape, one that names no event (of ``goal_id``
    when given), a prefix several events share (each candidate listed: id, goal, position, kind)."""
    ids: list[str] = []
    problems: list[str] = []
    for reference in references:
        text = reference.strip()
        if not _POSITION.fullmatch(text) and not (_PREFIX.fullmatch(text) and len(text) >= MIN_PREFIX):
            position = f" (position {text}: @{text})" if text.isdigit() else ""
            problems.append(
                f"{reference!r}: not an event id, a prefix of one (at least {MIN_PREFIX} characters of 0-9, a-f and -) or @POSITION{position}"
            )
            continue
        found = events_matching(ledger, text, goal_id=goal_id, limit=SHOWN_CANDIDATES + 1)
        where = "" if goal_id is None else f" of goal {goal_id!r}"
        if not found:
            what = "no event at position " + text[1:] if text.startswith("@") else "no event id starts with it"
            problems.append(f"{reference}: {what}{where}")
        elif len(found) > 1:
            count = f"more than {SHOWN_CANDIDATES}" if len(found) > SHOWN_CANDIDATES else str(len(found))
            listed = "; ".join(f"{e.event_id} (goal {e.goal_id}, position {e.position}, {e.kind})" for e in found[:SHOWN_CANDIDATES])
            problems.append(f"{reference}: {count} events{where} start with it, give more of the id: {listed}")
        else:
            ids.append(found[0].event_id)
    return ids, problems
