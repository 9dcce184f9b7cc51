"""Read-side queries: the ledger itself, goals, a goal's current projections, its lifecycle history.

Current state is read from the materialized rows; ``as_of`` answers "what did
the ledger say then" by folding only the events up to that point, in memory.
The history is such a fold too (the lifecycle after every event): it reads one
goal's events, so its cost follows the goal, never the ledger.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from benchledger.errors import InvalidInput
from benchledger.ledger.store import Ledger, StoredEvent, one_snapshot, utc_timestamp
from benchledger.projections import linking
from benchledger.projections.history import artifact_time, changes, event_outcome, event_summary


class InvalidAsOf(InvalidInput, ValueError):
    """An ``--as-of`` value that is neither a position nor an ISO-8601 time."""


def _payload(row: dict[str, Any]) -> Any:
    return None if row["payload"] is None else json.loads(row["payload"])


# Positions are 64-bit on every backend (PostgreSQL BIGINT); a larger number names no position.
MAX_POSITION = 2**63 - 1
_DIGITS = re.compile(r"[0-9]+")


def resolve_as_of(ledger: Ledger, goal_id: str, as_of: str | None) -> int | None:
    """``as_of`` as a global position: ASCII digits are a position, anything else an ISO-8601 time.

    Refused with one line (:class:`InvalidAsOf`): other digits (``²``), a
    position beyond 64 bits, a date that does not exist (``2026-02-30``) or one
    outside the years a UTC timestamp can name.
    """
    if as_of is None:
        return None
    text = as_of.strip()
    if _DIGITS.fullmatch(text):
        if len(text.lstrip("0")) > 19 or int(text) > MAX_POSITION:
            raise InvalidAsOf(f"--as-of {_shown(text)} is beyond any position (at most {MAX_POSITION})")
        return int(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        reason = "" if str(exc).startswith("Invalid isoformat") else f" ({exc})"
        raise InvalidAsOf(f"--as-of {_shown(as_of)} is neither a position nor an ISO-8601 time{reason}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        cutoff = utc_timestamp(moment)
    except OverflowError:
        raise InvalidAsOf(f"--as-of {_shown(as_of)} is outside the times a UTC timestamp can name") from None
    earlier = [e.position for e in ledger.read_goal(goal_id) if e.recorded_at <= cutoff]
    return max(earlier) if earlier else 0


def _shown(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:37] + "...")


@one_snapshot
def info(ledger: Ledger) -> dict[str, Any]:
    """Which ledger this is: its URL (password redacted), backend, schema revision, size, and the build reading it."""
    from benchledger import __version__
    from benchledger.ledger.migrate import HEAD_REVISION, current_revision

    with ledger.reading() as connection:
        revision = current_revision(connection)
    url = ledger.engine.url
    path = url.database if ledger.dialect == "sqlite" and ledger.persistent else None
    return {
        "url": url.render_as_string(hide_password=True),
        "backend": ledger.dialect,
        "schema_revision": revision,
        "schema_head": HEAD_REVISION,
        "events": ledger.event_count(),
        "goals": len(ledger.heads()),
        "file_bytes": os.path.getsize(path) if path else None,
        # (committed writes not yet checkpointed into the file live here)
        "wal_bytes": os.path.getsize(path + "-wal") if path and os.path.exists(path + "-wal") else None,
        "benchledger_version": __version__,
    }


@one_snapshot
def goals(ledger: Ledger) -> list[dict[str, Any]]:
    """Every goal with its size, last activity, lifecycle and latest claim/learning verdicts."""
    current = {
        (r["goal_id"], r["projection"]): r
        for r in ledger.projection_rows(key=linking.CURRENT_KEY)
    }
    listing = []
    for head in ledger.heads():
        goal = head["goal_id"]
        lifecycle_row = current.get((goal, linking.LIFECYCLE))
        lifecycle = (_payload(lifecycle_row) if lifecycle_row else None) or {}
        summary_row = current.get((goal, linking.SUMMARY))
        summary = (_payload(summary_row) if summary_row else None) or {}
        listing.append(goal_listing_row(head, lifecycle, summary, lifecycle_row is not None and lifecycle_row["status"] == "faulted"))
    return listing


def goal_listing_row(head: Mapping[str, Any], lifecycle: Mapping[str, Any], summary: Mapping[str, Any], faulted: bool) -> dict[str, Any]:
    """One goal as ``goals`` and the report's index list it: its stream head plus its current lifecycle and verdicts."""
    return {
        "goal_id": head["goal_id"],
        "event_count": head["last_version"],
        "last_position": head["last_position"],
        "last_activity": head["last_recorded_at"],
        "current_phase": lifecycle.get("current_phase"),
        "first_blocker": lifecycle.get("first_blocker"),
        "claim_strength": summary.get("claim_strength"),
        "learning_status": summary.get("learning_status"),
        "faulted": faulted,
    }


def _rows_by_projection(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    shown: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        entry = {"key": row["key"], "position": row["position"], "status": row["status"]}
        if row["status"] == "faulted":
            entry["error"] = row["error"]
        else:
            entry["payload"] = row["payload"]
        shown.setdefault(row["projection"], []).append(entry)
    return shown


@one_snapshot
def show(ledger: Ledger, goal_id: str, *, as_of: str | None = None) -> dict[str, Any]:
    """A goal's projections: the stored rows, or (``as_of``) a replay of the events up to then."""
    head = ledger.require_goal(goal_id)
    position = resolve_as_of(ledger, goal_id, as_of)
    if position is None:
        rows = [{**r, "payload": _payload(r)} for r in ledger.projection_rows(goal_id=goal_id)]
    else:
        projector = linking.project_goal(ledger.read_goal(goal_id, upto_position=position), strict=False)
        rows = [
            {"projection": r.projection, "key": r.key, "position": r.position, "status": r.status, "payload": r.payload, "error": r.error}
            for r in projector.rows.values()
        ]
    return {
        "goal_id": goal_id,
        "as_of_position": position,
        "head_position": head["last_position"],
        "projections": _rows_by_projection(rows),
    }


@one_snapshot
def history(ledger: Ledger, goal_id: str, *, as_of: str | None = None, kind: str | None = None) -> dict[str, Any]:
    """Every event of the goal in order, with the lifecycle state after it and what changed."""
    ledger.require_goal(goal_id)
    position = resolve_as_of(ledger, goal_id, as_of)
    events: list[StoredEvent] = ledger.read_goal(goal_id, upto_position=position)
    entries = []
    previous = None
    for step in linking.project_goal(events, strict=False, lifecycle_history=True).history:
        event, lifecycle = step.event, step.lifecycle
        change = changes(previous, lifecycle) if lifecycle is not None else {"phase_changed": False, "gates_changed": []}
        if lifecycle is not None:
            previous = lifecycle
        if kind is not None and event.kind != kind:
            continue
        entries.append(
            {
                "position": event.position,
                "stream_version": event.stream_version,
                "recorded_at": event.recorded_at,
                "kind": event.kind,
                "event_id": event.event_id,
                "summary": event_summary(event.kind, event.payload),
                "outcome": event_outcome(event.kind, event.payload),
                "artifact_time": artifact_time(event.payload),
                "lifecycle": lifecycle,
                "lifecycle_status": "faulted" if step.error is not None else "ok",
                **change,
            }
        )
    return {"goal_id": goal_id, "as_of_position": position, "entries": entries}
