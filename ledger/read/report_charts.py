"""The goal page's charts, read for the report and ``serve``: each series aggregated in the database (counts per label)
or bucketed to at most :data:`CHART_POINTS` points, so its cost follows what a chart shows, not the goal's size."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, not_, select
from sqlalchemy.sql.elements import ColumnElement

from benchledger.ledger.read.json_sql import (
    Path,
    decode_values,
    json_scalar,
    json_values,
    readable,
    values_in,
)
from benchledger.ledger.read.report_views import require_goals, rows_of
from benchledger.ledger.storage.schema import events
from benchledger.ledger.storage.store import Store, one_snapshot
from benchledger.projections import catalog

# Most points a chart series holds; longer series are bucketed (equal counts of attempts, in order).
CHART_POINTS = 300


def buckets(points: Sequence[Any], most: int = CHART_POINTS) -> list[list[Any]]:
    """``points`` (in order) cut into at most ``most`` consecutive groups of (nearly) equal size."""
    if len(points) <= most:
        return [[p] for p in points]
    size = len(points) / most
    return [list(points[round(i * size) : round((i + 1) * size)]) for i in range(most)]


@one_snapshot
def chart_series(ledger: Store, goal_id: str) -> dict[str, Any]:
    """The goal page's charts, each bounded by :data:`CHART_POINTS` or by its number of distinct labels.

    * ``score_delta``: the official task score delta of each attempt over time
      (bucketed: the mean, min and max of each bucket's finite deltas, at its last attempt's time);
    * ``claim_strengths``: attempts per claim strength;
    * ``learning_status``: learning ledgers per status in each bucket of time.
    """
    require_goals(ledger, [goal_id])
    dialect = ledger.dialect
    claim, claim_on = rows_of(catalog.CLAIM, goal_id, alias="claim")
    learning, learning_on = rows_of(catalog.LEARNING, goal_id, alias="learning")
    delta_path, strength_path, status_path = (("official_task_score_delta",),), (("decision", "claim_strength"),), (("learning_status",),)
    with ledger.reading() as connection:
        deltas = connection.execute(
            select(events.c.recorded_at, json_values(claim.c.payload, delta_path, dialect))
            .select_from(claim).join(events, events.c.event_id == claim.c.key).where(claim_on).order_by(claim.c.position)
        ).all()
        strengths = _counts(connection, claim, claim_on, strength_path, dialect)
        statuses = connection.execute(
            select(events.c.recorded_at, json_values(learning.c.payload, status_path, dialect))
            .select_from(learning).join(events, events.c.event_id == learning.c.key).where(learning_on).order_by(learning.c.position)
        ).all()
    delta_points = []
    for bucket in buckets([(at, decode_values(values, delta_path)[0]) for at, values in deltas]):
        finite = [v for _, v in bucket if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]
        delta_points.append(
            {
                "at": bucket[-1][0],
                "attempts": len(bucket),
                "mean": sum(finite) / len(finite) if finite else None,
                "min": min(finite) if finite else None,
                "max": max(finite) if finite else None,
            }
        )
    status_points = []
    for bucket in buckets([(at, decode_values(values, status_path)[0]) for at, values in statuses]):
        counts: dict[str, int] = {}
        for _, value in bucket:
            counts[str(value)] = counts.get(str(value), 0) + 1
        status_points.append({"at": bucket[-1][0], "counts": counts})
    return {
        "score_delta": delta_points,
        "claim_strengths": [{"claim_strength": value, "attempts": n} for (value,), n in sorted(strengths.items(), key=_label_order)],
        "learning_status": status_points,
    }


def _label_order(item: tuple[tuple[Any, ...], int]) -> tuple[Any, ...]:
    return tuple((value is not None, str(value)) for value in item[0])


def _counts(connection: Any, table: Any, where: ColumnElement, paths: Sequence[Path], dialect: str) -> dict[tuple[Any, ...], int]:
    """Rows of ``table`` per distinct values at ``paths`` of their payload: grouped in SQL, unreadable rows in Python."""
    payload = table.c.payload
    values = [json_scalar(payload, path, dialect) for path in paths]
    counts: dict[tuple[Any, ...], int] = {}
    for *found, n in connection.execute(select(*values, func.count()).where(where, readable(payload, dialect)).group_by(*values)):
        counts[tuple(found)] = counts.get(tuple(found), 0) + n
    for (text_value,) in connection.execute(select(payload).where(where, not_(readable(payload, dialect)))):
        found = tuple(values_in(text_value, paths))
        counts[found] = counts.get(found, 0) + 1
    return counts
