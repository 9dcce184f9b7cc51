"""What the report and ``serve`` pages show: bounded reads of goals, attempts, charts and reviews.

Every function here answers one part of a page with a few SQL statements whose
result size is bounded by the page, not by the goal: listings are paged
(goals by ``limit``/``offset``, attempts by key), chart series are aggregated in the database (counts
per label, ``ledger.read.report_charts``) or bucketed to a bounded number of points, and the few
fields a page needs are extracted from stored JSON inside the database
(``ledger.read.json_sql``) instead of decoding every payload. Rendering (HTML,
figures, the server) belongs to the command-line layer (``cli/web``).

The comparisons table (:func:`attempts`, a name from before attempts existed) lists the
batches that held a comparison: each one's ``review-claim`` row, with the
``learning-ledger`` and ``review-verifier-attribution`` rows of the same batch
(docs/linking.md), all keyed by the batch's event id, and the attempt it belongs
to. The goal's attempts themselves (``attempt-lifecycle-state`` rows), each with its
timeline and the reviews of its comparisons, are ``ledger.read.report_attempts``'.

The comparison tables are ``compare``'s own answer (``ledger.read.compare``) over the
runs model of the goals shown (:func:`goal_runs`), so they cost what ``compare``
costs (docs/performance.md), not a page's worth; the goals' pass rates and failure
labels are counted from the same model, so a page reads a goal's runs once.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import and_, bindparam, func, literal, or_, select
from sqlalchemy.sql.elements import ColumnElement

from benchledger.ledger.read.compare import compare_model
from benchledger.ledger.read.json_sql import (
    Path,
    decode_values,
    json_array_length,
    json_is,
    json_scalar,
    json_values,
    readable,
)
from benchledger.ledger.read.runs import collector_paused, goal_pass_rates, runs_model_and_events
from benchledger.ledger.read.views import (
    LifecycleStep,
    archived_column,
    goal_listing_row,
    goal_retractions,
    history,
    history_entry,
    retraction_list,
    stored_steps,
    withdrawn_by,
)
from benchledger.ledger.storage.event_records import row_to_event
from benchledger.ledger.storage.goal_names import unknown_goal
from benchledger.ledger.storage.schema import events, projection_rows, stream_heads
from benchledger.ledger.storage.store import Store
from benchledger.projections import catalog, runs

INDEX_PAGE_SIZE = 100
BATCHES_PAGE_SIZE = 50  # rows of the comparisons table a page shows
# Most lifecycle changes a timeline shows (the latest ones).
TIMELINE_POINTS = 400

CLAIM_FIELDS: tuple[Path, ...] = (
    ("task_id",), ("comparison_id",), ("official_task_score_delta",), ("decision", "claim_strength"), ("decision", "blockers"),
)
LEARNING_FIELDS: tuple[Path, ...] = (("learning_status",), ("lifecycle_gate", "budget_count_allowed"))
# The rows of one attempt (keyed by its batch's event id), in the order its page lists them.
ATTEMPT_REVIEWS = (catalog.CLAIM, catalog.LEARNING, catalog.VERIFIER)
VERIFIER_FIELDS: tuple[Path, ...] = (("baseline_run_index",), ("run_reviews",))


def require_goals(ledger: Store, goal_ids: Sequence[str]) -> None:
    with ledger.reading() as connection:
        found = set(connection.execute(select(stream_heads.c.goal_id).where(stream_heads.c.goal_id.in_(goal_ids))).scalars())
    missing = [g for g in goal_ids if g not in found]
    if missing:
        raise unknown_goal(missing[0], (h["goal_id"] for h in ledger.heads()))


def rows_of(projection: str, goal_id: str | ColumnElement[Any], *, alias: str) -> Any:
    table = projection_rows.alias(alias)
    return table, and_(table.c.projection == projection, table.c.goal_id == goal_id)


# -- the index ---------------------------------------------------------------------------------


def goal_index(
    ledger: Store, goal_ids: Sequence[str] | None = None, *, limit: int = INDEX_PAGE_SIZE, offset: int = 0, pass_rates: bool = True,
    include_archived: bool = False,
) -> dict[str, Any]:
    """One page of goals (by id): size, last activity, phase, first blocker, claim strength, learning status, attempts, comparisons, pass rates.

    ``pass_rates=False`` leaves the pass rates out (``None``): they read every run of the goals. Archived goals
    (``goals archive``) are left out unless named in ``goal_ids`` or ``include_archived``; listed, they say so.
    """
    if goal_ids:
        require_goals(ledger, goal_ids)
    dialect = ledger.dialect
    archived = archived_column(stream_heads.c.goal_id)
    heads = select(stream_heads, archived.label("archived"))
    count = select(func.count()).select_from(stream_heads)
    if goal_ids:
        heads = heads.where(stream_heads.c.goal_id.in_(goal_ids))
        count = count.where(stream_heads.c.goal_id.in_(goal_ids))
    elif not include_archived:
        heads = heads.where(~archived)
        count = count.where(~archived)
    with ledger.reading() as connection:
        total = connection.execute(count).scalar_one()
        page = [dict(r._mapping) for r in connection.execute(heads.order_by(stream_heads.c.goal_id).limit(limit).offset(offset))]
        ids = [h["goal_id"] for h in page]
        current = {}
        names = ("current_phase", "first_blocker", "claim_strength", "learning_status", "attempt", "attempts")
        fields = tuple((name,) for name in names)
        for row in connection.execute(
            select(projection_rows.c.goal_id, projection_rows.c.projection, projection_rows.c.status,
                   json_values(projection_rows.c.payload, fields, dialect))
            .where(projection_rows.c.key == catalog.CURRENT_KEY, projection_rows.c.goal_id.in_(ids),
                   projection_rows.c.projection.in_((catalog.LIFECYCLE, catalog.SUMMARY)))
        ):
            current[(row[0], row[1])] = (row[2], dict(zip(names, decode_values(row[3], fields), strict=True)))
        comparisons_held = dict(
            connection.execute(
                select(projection_rows.c.goal_id, func.count())
                .where(projection_rows.c.projection == catalog.CLAIM, projection_rows.c.goal_id.in_(ids))
                .group_by(projection_rows.c.goal_id)
            ).all()
        )
    rates = goal_pass_rates(ledger, ids) if pass_rates else {}
    listing = []
    for head in page:
        goal = head["goal_id"]
        lifecycle_status, lifecycle = current.get((goal, catalog.LIFECYCLE), (None, {}))
        summary = current.get((goal, catalog.SUMMARY), (None, {}))[1]
        listing.append(
            {
                **goal_listing_row(head, lifecycle, summary, lifecycle_status == "faulted"),
                "comparisons": comparisons_held.get(goal, 0),
                "pass_rates": rates.get(goal, []) if pass_rates else None,
            }
        )
    return {"total": total, "offset": offset, "limit": limit, "goals": listing}


# -- a goal ------------------------------------------------------------------------------------


def goal_overview(ledger: Store, goal_id: str, *, pass_rates: bool = True) -> dict[str, Any]:
    """The head of a goal's page: its index entry (with its attempt and comparison counts) and current lifecycle state (one snapshot).

    The attempts pages after the first leave the pass rates out (``pass_rates=False``): they
    read every run of the goal, and a report of a goal with 10^4 attempts writes 200 such pages.
    """
    with ledger.snapshot() as view, view.reading() as connection:
        (entry,) = goal_index(view, [goal_id], limit=1, pass_rates=pass_rates)["goals"]
        row = connection.execute(
            select(projection_rows.c.status, projection_rows.c.payload, projection_rows.c.error).where(
                projection_rows.c.projection == catalog.LIFECYCLE,
                projection_rows.c.goal_id == goal_id,
                projection_rows.c.key == catalog.CURRENT_KEY,
            )
        ).first()
    lifecycle = json.loads(row.payload) if row is not None and row.payload is not None else None
    return {**entry, "lifecycle": lifecycle, "lifecycle_error": row.error if row is not None else None}


PageKey = tuple[int, str]
"""Where a page of attempts starts: its first row's (position, key), in the order of the pages (position descending, then key)."""


@functools.cache
def _batch_page(dialect: str, limit: int, from_start: bool) -> Any:
    """The page's attempts with their fields: the page's keys picked on the index first, then only those rows read.

    Picking the keys apart keeps the reads to the page's rows whatever order a planner sorts in
    (on PostgreSQL, the order of the pages is no index's order: a plan that joins before it sorts
    would join every attempt below the page's start). The goal and the start (``from_start``) are
    parameters (``goal``, ``start_position``, ``start_key``): the statement is built once per
    process, not per page (building it was a quarter of a listing page's cost).
    """
    goal_id = bindparam("goal", type_=projection_rows.c.goal_id.type)
    claim, claim_on = rows_of(catalog.CLAIM, goal_id, alias="claim")
    keys = select(claim.c.position, claim.c.key).where(claim_on)
    if from_start:
        position, key = bindparam("start_position", type_=claim.c.position.type), bindparam("start_key", type_=claim.c.key.type)
        # (position <= p) bounds the index range; the rest picks the rows of position p from key k on
        keys = keys.where(claim.c.position <= position, or_(claim.c.position < position, claim.c.key >= key))
    page = keys.order_by(claim.c.position.desc(), claim.c.key).limit(limit).subquery("page")

    def of_page(projection: str, column: Any) -> Any:
        """``column`` of the goal's ``projection`` row keyed as the page's row: a primary-key read per row (NULL: none)."""
        table, on = rows_of(projection, goal_id, alias=projection.replace("-", "_"))
        return select(column(table)).where(on, table.c.key == page.c.key).scalar_subquery()

    # One read by key per column and row of the page, each by a primary key: a join here, planned without
    # statistics (PostgreSQL before its first ANALYZE), scanned every row of the goal for each row of the page.
    return select(
        page.c.key, page.c.position,
        of_page(catalog.CLAIM, lambda t: t.c.status),
        select(events.c.recorded_at).where(events.c.event_id == page.c.key).scalar_subquery(),
        of_page(catalog.CLAIM, lambda t: json_values(t.c.payload, CLAIM_FIELDS, dialect)),
        of_page(catalog.LEARNING, lambda t: json_values(t.c.payload, LEARNING_FIELDS, dialect)),
        of_page(catalog.VERIFIER, lambda t: json_values(t.c.payload, VERIFIER_FIELDS, dialect)),
        of_page(catalog.LEARNING, lambda t: t.c.key), of_page(catalog.VERIFIER, lambda t: t.c.key),
        attempt_of_batch(goal_id, page.c.key, dialect),
    ).order_by(page.c.position.desc(), page.c.key)


def attempt_of_batch(goal_id: str | ColumnElement[Any], batch_id: Any, dialect: str) -> Any:
    """SQL: the attempt of the goal's batch event ``batch_id`` (a column), named by the latest ``lifecycle-step`` row at or before
    its position (a step is stored wherever the attempt changes), read through the (goal, projection, position) index; NULL
    before attempts were stored. (Not the claim row's position: a retraction rewrites rows at its own, later one.)"""
    step = projection_rows.alias("attempt_step")
    # (correlated with the page's row, two queries up: SQLAlchemy correlates the nearest enclosing query only by itself)
    position = select(events.c.position).where(events.c.event_id == batch_id).correlate_except(events).scalar_subquery()
    return (
        select(json_scalar(step.c.payload, ("attempt",), dialect))
        .where(
            step.c.projection == catalog.STEP, step.c.goal_id == goal_id, step.c.position <= position,
            step.c.payload.is_not(None), readable(step.c.payload, dialect),
        )
        .order_by(step.c.position.desc()).limit(1).scalar_subquery()
    )


def _arm_scores(baseline_index: Any, run_reviews: Any) -> tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]:
    """The baseline run review (the verifier review's ``baseline_run_index``) and the first other one (the treatment)."""
    reviews = [r for r in run_reviews if isinstance(r, Mapping)] if isinstance(run_reviews, list) else []
    index = baseline_index if isinstance(baseline_index, int) and 0 <= baseline_index < len(reviews) else None
    baseline = reviews[index] if index is not None else None
    treatment = next((r for i, r in enumerate(reviews) if i != index), None)
    return baseline, treatment


def goal_last_position(ledger: Store, goal_id: str) -> int | None:
    """The position of the goal's last event (``None``: no such goal): what a page's cache compares, one primary-key read."""
    with ledger.reading() as connection:
        return connection.execute(select(stream_heads.c.last_position).where(stream_heads.c.goal_id == goal_id)).scalar_one_or_none()


def batches_page_start(ledger: Store, goal_id: str, *, offset: int) -> PageKey | None:
    """The key of the comparison row ``offset`` rows from the newest (``None``: the goal has no more), for ``serve``'s ``batches-N.html``.

    Read from the (goal, projection, position, key) index alone (revision 0004), never the rows nor
    their events: skipping 10^5 index entries costs milliseconds, where the old OFFSET over the page's
    joins built every skipped attempt (290 s for page 500 of a 10^5-event goal on PostgreSQL).
    """
    return page_start(ledger, goal_id, catalog.CLAIM, offset=offset)


def page_start(ledger: Store, goal_id: str, projection: str, *, offset: int) -> PageKey | None:
    """The (position, key) of the goal's ``projection`` row ``offset`` rows from its newest (``None``: no more), from the index alone."""
    table, on = rows_of(projection, goal_id, alias="page_start")
    with ledger.reading() as connection:
        row = connection.execute(
            select(table.c.position, table.c.key).where(on).order_by(table.c.position.desc(), table.c.key).limit(1).offset(offset)
        ).first()
    return None if row is None else (row.position, row.key)


def batches(ledger: Store, goal_id: str, *, limit: int = BATCHES_PAGE_SIZE, start: PageKey | None = None) -> dict[str, Any]:
    """One page of the goal's comparisons table, newest first, from ``start`` (``None``: the newest): the attempt, task, arm scores,
    delta, claim strength, blockers, budget gate, and which of the batch's reviews exist.

    The page is read by key (keyset), so page 200 costs what page 1 does; ``next`` is where the
    following page starts (``None`` after the last).
    """
    require_goals(ledger, [goal_id])
    with ledger.reading() as connection:
        bounds = {} if start is None else {"start_position": start[0], "start_key": start[1]}
        rows = connection.execute(_batch_page(ledger.dialect, limit + 1, start is not None), {"goal": goal_id, **bounds}).all()
    following = rows[limit] if len(rows) > limit else None
    listing = []
    for key, position, status, recorded_at, claim_json, learning_json, verifier_json, learning_key, verifier_key, attempt in rows[:limit]:
        task, comparison, delta, strength, blockers = decode_values(claim_json, CLAIM_FIELDS)
        learning_status, budget_allowed = decode_values(learning_json, LEARNING_FIELDS)
        baseline, treatment = _arm_scores(*decode_values(verifier_json, VERIFIER_FIELDS))
        listing.append(
            {
                "key": key,
                "attempt": attempt,
                "position": position,
                "recorded_at": recorded_at,
                "status": status,
                "task_id": task,
                "comparison_id": comparison,
                "baseline": _arm(baseline),
                "treatment": _arm(treatment),
                "score_delta": delta,
                "claim_strength": strength,
                "blockers": blockers if isinstance(blockers, list) else [],
                "learning_status": learning_status,
                "budget_count_allowed": None if budget_allowed is None else bool(budget_allowed),
                # This attempt's own rows (attempt_reviews), not the goal's latest.
                "reviews": [
                    name for name, found in zip(ATTEMPT_REVIEWS, (key, learning_key, verifier_key), strict=True) if found is not None
                ],
            }
        )
    return {"limit": limit, "rows": listing, "next": None if following is None else (following.position, following.key)}


def attempt_reviews(ledger: Store, goal_id: str, key: str) -> list[dict[str, Any]]:
    """One comparison's own review rows (:data:`ATTEMPT_REVIEWS` keyed by its batch's event id ``key``), payload decoded, each
    with the attempt the batch belongs to; empty: no such comparison."""
    require_goals(ledger, [goal_id])
    order = {name: i for i, name in enumerate(ATTEMPT_REVIEWS)}
    with ledger.reading() as connection:
        found = connection.execute(
            select(projection_rows.c.projection, projection_rows.c.key, projection_rows.c.position, projection_rows.c.status,
                   projection_rows.c.payload, projection_rows.c.error)
            .where(projection_rows.c.goal_id == goal_id, projection_rows.c.key == key, projection_rows.c.projection.in_(ATTEMPT_REVIEWS))
        ).all()
        if not any(row.projection == catalog.CLAIM for row in found):
            return []
        attempt = connection.execute(select(attempt_of_batch(goal_id, literal(key), ledger.dialect))).scalar_one_or_none()
    return sorted(
        (
            {"goal_id": goal_id, "projection": row.projection, "key": row.key, "position": row.position, "status": row.status,
             "payload": None if row.payload is None else json.loads(row.payload), "error": row.error, "attempt": attempt}
            for row in found
        ),
        key=lambda review: order[review["projection"]],
    )


@collector_paused
def goal_runs(ledger: Store, goal_ids: Sequence[str] | None = None) -> dict[str, Any]:
    """What the pages show of the runs of ``goal_ids`` (default: the whole ledger), from one runs model: the goals' runs read once.

    ``comparisons``: ``compare`` over them (every arm pair that pairs name, per benchmark); per goal of the scope,
    ``pass_rates``: its pass rates per benchmark and arm (``runs --summary --goal G`` counts the same runs, streamed), and
    per goal named, ``failure_labels``: its runs per failure label and arm (``projections.runs.FailureLabelCounts``: a chart of its page).
    """
    model, read = runs_model_and_events(ledger, goal_ids=goal_ids or ())
    payloads = {event.event_id: event.payload for event in read if event.kind in runs.RUN_KINDS}
    by_goal: dict[str, list[dict[str, Any]]] = {goal: [] for goal in goal_ids or ()}
    for view in model.runs:
        by_goal.setdefault(view["goal_id"], []).append(view)
    labels: dict[str, list[dict[str, Any]]] = {}
    for goal in goal_ids or ():  # (a goal's page shows them; the index, over the ledger, does not)
        counts = runs.FailureLabelCounts()
        for view in by_goal[goal]:
            counts.add(view, payloads[view["event_id"]])
        labels[goal] = counts.entries()
    return {
        "comparisons": compare_model(model, goal_ids=goal_ids or ()),
        "pass_rates": {goal: runs.pass_rates(views) for goal, views in by_goal.items()},
        "failure_labels": labels,
    }


def _arm(review: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if review is None:
        return None
    return {"mode": review.get("mode"), "official_score": review.get("official_score"), "official_passed": review.get("official_passed")}


# -- the lifecycle timeline and the reviews ----------------------------------------------------


def lifecycle_timeline(ledger: Store, goal_id: str, *, limit: int = TIMELINE_POINTS) -> dict[str, Any]:
    """The goal's lifecycle changes (the phase after each event where the phase or a gate changed), the latest ``limit``.

    Read from the stored ``lifecycle-step`` rows (docs/linking.md): the changes
    are counted in the database and only the latest ``limit`` are read, with
    their events, so the page costs the same however long the goal. A goal
    without current steps (a ledger not yet replayed) is read through
    :func:`benchledger.ledger.read.views.history`, which folds it. ``retractions``:
    the goal's retractions with their reasons and what they withdrew (few: read whole).
    """
    with ledger.snapshot() as view, view.reading() as connection:
        head = view.require_goal(goal_id)
        retractions = retraction_list(view, connection, goal_id)
        if not stored_steps(connection, goal_id):
            entries = history(view, goal_id, changes_only=True)["entries"]
            changes = [timeline_step(e) for e in entries if e["phase_changed"] or e["gates_changed"]]
            return {"events": head["last_version"], "changes": len(changes), "steps": changes[-limit:] if limit else [], "retractions": retractions}
        step = projection_rows
        changed = and_(
            step.c.projection == catalog.STEP, step.c.goal_id == goal_id, readable(step.c.payload, ledger.dialect),
            or_(json_is(step.c.payload, ("phase_changed",), "true", ledger.dialect), json_array_length(step.c.payload, ("gates_changed",), ledger.dialect) > 0),
        )
        total = connection.execute(select(func.count()).select_from(step).where(changed)).scalar_one()
        latest = connection.execute(
            select(*events.c, step.c.payload.label("step_payload")).select_from(step).join(events, events.c.position == step.c.position)
            .where(changed).order_by(step.c.key.desc()).limit(limit)
        ).all()
        withdrawn = withdrawn_by(goal_retractions(connection, goal_id))
    width = len(events.c)
    shown = [
        timeline_step(history_entry(row_to_event(row[:width]), LifecycleStep(row.position, json.loads(row.step_payload)), withdrawn.get(row.event_id)))
        for row in reversed(latest)
    ]
    return {"events": head["last_version"], "changes": total, "steps": shown, "retractions": retractions}


def timeline_step(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A history entry as the timeline shows it."""
    lifecycle = entry["lifecycle"] or {}
    gates = lifecycle.get("gates") or {}
    return {
        "position": entry["position"],
        "recorded_at": entry["recorded_at"],
        "kind": entry["kind"],
        "summary": entry["summary"],
        "phase": lifecycle.get("current_phase"),
        "first_blocker": lifecycle.get("first_blocker"),
        "phase_changed": entry["phase_changed"],
        "gates_opened": [g for g in entry["gates_changed"] if gates.get(g) is True],
        "gates_closed": [g for g in entry["gates_changed"] if gates.get(g) is not True],
        "faulted": entry["lifecycle_status"] == "faulted",
        "retracted_by": entry["retracted_by"],
    }


def latest_reviews(ledger: Store, goal_id: str) -> list[dict[str, Any]]:
    """The latest stored row of each of the goal's reviews (by position, then key), payload decoded.

    Lifecycle steps (the timeline shows them), the projector's checkpoint and comparison index (its own bookkeeping) are no reviews.
    """
    require_goals(ledger, [goal_id])
    return [
        {**row, "payload": None if row["payload"] is None else json.loads(row["payload"])}
        for row in ledger.goal_projections(goal_id)[1]
        if row["projection"] not in (catalog.STEP, catalog.CHECKPOINT, catalog.COMPARISON_INDEX)
    ]
