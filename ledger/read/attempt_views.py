"""What ``show`` and ``history`` read of a goal's attempts (projections/attempts.py): its attempt rows and an attempt's span of events."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from benchledger.errors import InvalidInput
from benchledger.projections.attempts import ATTEMPT_ID_SYNTAX, valid_attempt_id
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


def require_attempt(goal_id: str, attempt: str, attempts: int) -> None:
    """Refuse ``history --attempt`` naming an attempt the goal does not hold (its ``attempts`` are numbered 1 to
    ``attempts``, ``projections.attempts``), as ``runs`` refuses a filter value no run has: naming the ones it holds.
    A goal whose attempt rows are not stored (0: until ``benchledger replay``) is judged by the id's syntax alone."""
    if not valid_attempt_id(attempt):
        raise InvalidInput(f"{attempt!r} is not an attempt id: {ATTEMPT_ID_SYNTAX}")
    if attempts and int(attempt) > attempts:
        held = "its only attempt is 1" if attempts == 1 else f"its attempts are 1 to {attempts}"
        raise InvalidInput(f"--attempt {attempt} is not an attempt of goal {goal_id!r}: {held}")
