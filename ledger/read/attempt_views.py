"""What ``show`` and ``history`` read of a goal's attempts (projections/attempts.py): its attempt rows and an attempt's span of events."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from benchledger.projections.history import stored_summary

# The attempts ``show`` lists (the latest first): ``show --projection attempt-lifecycle-state`` lists every one.
SHOW_ATTEMPTS = 20


def attempt_entry(row: Mapping[str, Any]) -> dict[str, Any]:
    """An ``attempt-lifecycle-state`` row as ``show`` lists it: the attempt, where its last event is, its phase, first blocker and gates."""
    state = row["payload"] or {}
    return {
        "attempt": row["key"],
        "position": row["position"],
        "status": row["status"],
        "current_phase": state.get("current_phase"),
        "first_blocker": state.get("first_blocker"),
        "next_required_transition": state.get("next_required_transition"),
        "gates": stored_summary(state)["gates"] if row["status"] == "ok" else None,
        "error": row["error"],
    }


def attempt_span(steps: Iterable[tuple[int, str | None]], attempt: str, lowest: int, highest: int) -> tuple[int, int]:
    """``lowest`` and ``highest`` narrowed to the attempt's events, given the goal's steps (position, stored payload) in order:
    from its first step to the first step of another attempt after its last one (a step is stored wherever the attempt
    changes; an attempt without steps: an empty span)."""
    first, after = None, None
    for position, payload in steps:
        named = json.loads(payload).get("attempt") if payload is not None else None
        if named == attempt:
            first, after = first if first is not None else position, None
        elif named is not None and first is not None and after is None:
            after = position
    if first is None:
        return 1, 0
    return max(lowest, first), highest if after is None else min(highest, after - 1)
