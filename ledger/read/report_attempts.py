"""The goal page's attempts (docs/linking.md, "Attempts inside a goal"): a page of them, each with its lifecycle timeline and reviews.

An attempt's stored ``attempt-lifecycle-state`` row sits at the position of its
last event, and attempts follow each other in the goal's stream (every event
joins the open attempt), so the attempts newest first are the rows by position
descending, and an attempt's events are those after the previous attempt's row
up to its own. Everything an attempt shows is read inside that span through an
index: its lifecycle changes (the ``lifecycle-step`` rows, keyed by position),
its comparisons (the goal's batches that hold a ``review-claim`` row: the
comparisons table's rows, ``report_views.batches``) and the latest of them,
whose claim, learning and verifier reviews the attempt links. A page reads
:data:`ATTEMPTS_PAGE_SIZE` attempts by key (the comparisons table's keyset
paging), each timeline its latest :data:`TIMELINE_POINTS` changes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sqlalchemy import and_, exists, func, or_, select

from benchledger.ledger.read.attempt_views import attempt_entry
from benchledger.ledger.read.json_sql import json_array_length, json_is, readable
from benchledger.ledger.read.report_views import ATTEMPT_REVIEWS, page_start, timeline_step
from benchledger.ledger.read.views import (
    LifecycleStep,
    goal_retractions,
    history,
    history_entry,
    retraction_list,
    stored_steps,
    withdrawn_by,
)
from benchledger.ledger.storage.event_records import row_to_event
from benchledger.ledger.storage.schema import events, projection_rows
from benchledger.ledger.storage.store import Store
from benchledger.projections import catalog
from benchledger.projections.batch_manifest import BATCH_KIND
from benchledger.projections.history import changes

# Attempts a page shows, each with its timeline chart.
ATTEMPTS_PAGE_SIZE = 10
# Most lifecycle changes an attempt's timeline shows (its latest ones).
TIMELINE_POINTS = 200
# Past any position: the newest attempt's span is open (its row is at its last event so far).
_END = 2**62


def attempts_page_start(ledger: Store, goal_id: str, *, offset: int) -> tuple[int, str] | None:
    """Where the attempts page holding the attempt ``offset`` from the newest starts (``None``: no such attempt), from the index alone."""
    return page_start(ledger, goal_id, catalog.ATTEMPT_LIFECYCLE, offset=offset)


def lifecycle_attempts(ledger: Store, goal_id: str, *, limit: int = ATTEMPTS_PAGE_SIZE, start: tuple[int, str] | None = None) -> dict[str, Any]:
    """A page of the goal's attempts, newest first, from ``start`` (``None``: the newest), each with its lifecycle
    (phase, first blocker, gates: ``show``'s attempt entry), its span of positions, timeline, comparisons and latest comparison's reviews.

    ``next`` is where the following page starts (``None`` after the last).
    """
    with ledger.snapshot() as view, view.reading() as connection:
        view.require_goal(goal_id)
        table = projection_rows
        selected = select(table.c.key, table.c.position, table.c.status, table.c.payload, table.c.error).where(
            table.c.projection == catalog.ATTEMPT_LIFECYCLE, table.c.goal_id == goal_id
        )
        if start is not None:
            selected = selected.where(table.c.position <= start[0], or_(table.c.position < start[0], table.c.key >= start[1]))
        # one row past the page: where the next page starts, and where the page's oldest attempt begins
        rows = connection.execute(selected.order_by(table.c.position.desc(), table.c.key).limit(limit + 1)).all()
        newest = start is None
        steps_stored = stored_steps(connection, goal_id)
        folded = None if steps_stored else _folded_changes(view, goal_id)
        withdrawn = withdrawn_by(goal_retractions(connection, goal_id)) if steps_stored else {}
        listing = []
        for index, row in enumerate(rows[:limit]):
            lowest = rows[index + 1].position + 1 if index + 1 < len(rows) else 0  # (no row after it: the goal's first attempt)
            highest = _END if newest and index == 0 else row.position
            entry = attempt_entry({**row._mapping, "payload": None if row.payload is None else json.loads(row.payload)})
            if steps_stored:
                timeline = _timeline(connection, ledger.dialect, goal_id, lowest, highest, withdrawn)
            else:
                of_attempt = folded.get(row.key, []) if folded is not None else []
                opened = of_attempt[0]["position"] if of_attempt else None
                timeline = {"changes": len(of_attempt), "steps": of_attempt[-TIMELINE_POINTS:], "opened": opened}
            first = timeline.pop("opened", None)
            listing.append(
                {**entry, "first_position": lowest if first is None else first, "timeline": timeline, **_comparisons(connection, goal_id, lowest, highest)}
            )
    following = rows[limit] if len(rows) > limit else None
    return {"limit": limit, "rows": listing, "next": None if following is None else (following.position, following.key)}


def _timeline(connection: Any, dialect: str, goal_id: str, lowest: int, highest: int, withdrawn: Mapping[str, Any]) -> dict[str, Any]:
    """The attempt's lifecycle changes: its first step (where it opened) and every step that changed the phase or a gate, the latest :data:`TIMELINE_POINTS`."""
    step = projection_rows
    in_span = and_(
        step.c.projection == catalog.STEP, step.c.goal_id == goal_id,
        step.c.key >= catalog.step_key(lowest), step.c.key <= catalog.step_key(min(highest, 10**12 - 1)),
        readable(step.c.payload, dialect), step.c.payload.is_not(None),
    )
    opened = connection.execute(select(step.c.key).where(in_span).order_by(step.c.key).limit(1)).scalar_one_or_none()
    changed = and_(
        in_span,
        or_(
            step.c.key == opened,
            json_is(step.c.payload, ("phase_changed",), "true", dialect),
            json_array_length(step.c.payload, ("gates_changed",), dialect) > 0,
        ),
    )
    total = connection.execute(select(func.count()).select_from(step).where(changed)).scalar_one() if opened is not None else 0
    latest = [] if opened is None else connection.execute(
        select(*events.c, step.c.payload.label("step_payload"), step.c.key.label("step_key")).select_from(step).join(events, events.c.position == step.c.position)
        .where(changed).order_by(step.c.key.desc()).limit(TIMELINE_POINTS)
    ).all()
    width = len(events.c)
    shown = [
        timeline_step(history_entry(row_to_event(row[:width]), LifecycleStep(row.position, _step_of_attempt(row, opened)), withdrawn.get(row.event_id)))
        for row in reversed(latest)
    ]
    return {"changes": total, "steps": shown, "opened": None if opened is None else int(opened)}


def _step_of_attempt(row: Any, opened: str) -> dict[str, Any]:
    """A step's payload as its attempt's timeline reads it: the attempt's first step changed what an attempt with nothing
    open would have (as the goal's first step is stored), not what the previous attempt left open."""
    payload = json.loads(row.step_payload)
    return {**payload, **changes(None, payload)} if row.step_key == opened else payload


def _folded_changes(ledger: Store, goal_id: str) -> dict[str, list[dict[str, Any]]]:
    """Each attempt's changes, from a fold of the goal (a ledger whose steps are not stored by this code, until ``replay``)."""
    by_attempt: dict[str, list[dict[str, Any]]] = {}
    for entry in history(ledger, goal_id)["entries"]:
        attempt = entry["attempt"]
        if attempt is None or entry["lifecycle"] is None:
            continue
        if attempt not in by_attempt:  # the attempt's first step (as :func:`_step_of_attempt` reads a stored one)
            by_attempt[attempt] = [timeline_step({**entry, **changes(None, entry["lifecycle"])})]
        elif entry["phase_changed"] or entry["gates_changed"]:
            by_attempt[attempt].append(timeline_step(entry))
    return by_attempt


def _comparisons(connection: Any, goal_id: str, lowest: int, highest: int) -> dict[str, Any]:
    """How many of the goal's comparisons (batches holding a ``review-claim`` row) the span holds, and the latest one's reviews."""
    claim = projection_rows.alias("claim")
    held = and_(
        events.c.goal_id == goal_id, events.c.kind == BATCH_KIND, events.c.position >= lowest, events.c.position <= highest,
        exists().where(claim.c.projection == catalog.CLAIM, claim.c.goal_id == goal_id, claim.c.key == events.c.event_id),
    )
    count = connection.execute(select(func.count()).select_from(events).where(held)).scalar_one()
    latest = connection.execute(select(events.c.event_id).where(held).order_by(events.c.position.desc()).limit(1)).scalar_one_or_none()
    reviews: list[str] = []
    if latest is not None:
        found = set(connection.execute(
            select(projection_rows.c.projection).where(
                projection_rows.c.goal_id == goal_id, projection_rows.c.key == latest, projection_rows.c.projection.in_(ATTEMPT_REVIEWS)
            )
        ).scalars())
        reviews = [name for name in ATTEMPT_REVIEWS if name in found]
    return {"comparisons": count, "latest_comparison": latest, "reviews": reviews}


def retractions(ledger: Store, goal_id: str) -> list[dict[str, Any]]:
    """The goal's retractions, newest first, with their reasons and what they withdrew (few: read whole)."""
    with ledger.snapshot() as view, view.reading() as connection:
        view.require_goal(goal_id)
        return retraction_list(view, connection, goal_id)
