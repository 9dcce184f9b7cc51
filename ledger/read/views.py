"""Read-side queries: the ledger itself, goals, a goal's current projections, its lifecycle history.

Current state is read from the materialized rows; ``as_of`` answers "what did
the ledger say then" by folding only the events up to that point, in memory.
The history reads each event with its stored ``lifecycle-step`` (the lifecycle
after it), a page at a time: its cost follows what it shows, never the ledger.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC
from typing import Any

from sqlalchemy import exists, func, literal_column, select

from benchledger.errors import InvalidInput
from benchledger.ledger.read.attempt_views import SHOW_ATTEMPTS, attempt_entry, attempt_span, require_attempt
from benchledger.ledger.read.points import (
    MAX_POSITION,
    AsOf,
    as_of_fields,
    parse_point,
    refuse_an_empty_range,
    resolve_as_of,
    resolve_point,
)
from benchledger.ledger.storage.config import sqlite_file
from benchledger.ledger.storage.engine import shown_url, standby_replay
from benchledger.ledger.storage.event_records import StoredEvent, row_to_event
from benchledger.ledger.storage.schema import events, projection_rows, stream_heads
from benchledger.ledger.storage.store import Store, one_snapshot
from benchledger.projections import catalog, goal_archive, retraction
from benchledger.projections.history import artifact_time, event_outcome, event_summary, stored_summary
from benchledger.projections.projector import project_goal


def _payload(row: dict[str, Any]) -> Any:
    return None if row["payload"] is None else json.loads(row["payload"])


@one_snapshot
def info(ledger: Store) -> dict[str, Any]:
    """Which ledger this is: its URL (password redacted), backend, schema revision, size, and the build reading it."""
    from benchledger import __version__
    from benchledger.ledger.storage.migrate import HEAD_REVISION, current_revision

    with ledger.reading() as connection:
        revision = current_revision(connection)
    replay = standby(ledger)
    url = ledger.engine.url
    # (the file, also of a URI filename: file:PATH?immutable=1, the way to read a ledger on a read-only mount)
    file = sqlite_file(url) if ledger.persistent else None
    path = str(file) if file is not None else None
    return {
        "url": shown_url(url),
        "backend": ledger.dialect,
        "schema_revision": revision,
        "schema_head": HEAD_REVISION,
        "events": ledger.event_count(),
        "goals": len(ledger.heads()),
        "file_bytes": os.path.getsize(path) if path else None,
        # (committed writes not yet checkpointed into the file live here)
        "wal_bytes": os.path.getsize(path + "-wal") if path and os.path.exists(path + "-wal") else None,
        "benchledger_version": __version__,
        "standby": replay is not None,
        "replayed_at": None if replay is None else replay["replayed_at"],
        "replay_lag_seconds": None if replay is None else replay["lag_seconds"],
    }


def standby(ledger: Store) -> dict[str, Any] | None:
    """When the ledger is a PostgreSQL hot standby: the commit time (UTC) of the last transaction it replayed
    (``None`` before its first) and how many seconds it is behind its primary (0: it replayed all it received)."""
    if ledger.dialect != "postgresql":
        return None  # (without a read transaction: every command that writes asks)
    with ledger.reading() as connection:
        replay = standby_replay(connection)
    if replay is None:
        return None
    replayed_at, lag = replay
    shown = None if replayed_at is None else replayed_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return {"replayed_at": shown, "lag_seconds": None if lag is None else round(lag, 3)}


# Goals a listing reads per statement (their heads and current rows): its memory, however many goals there are.
GOALS_PAGE = 500


def archived_column(goal_id: Any) -> Any:
    """Whether the goal ``goal_id`` (a column) is archived, in SQL: its latest archive or unarchive event is an archive
    (``projections.goal_archive``). The archived goals are found once per statement from the archive events alone (their
    partial index, revision 0007), not probed goal by goal: counting goals then reads no range per goal of the ledger."""
    mark, later = events.alias("mark"), events.alias("later")
    kinds = [literal_column(f"'{kind}'") for kind in goal_archive.KINDS]  # constants, as the index's predicate: SQLite proves none from a parameter
    superseded = exists().where(later.c.goal_id == mark.c.goal_id, later.c.kind.in_(kinds), later.c.stream_version > mark.c.stream_version)
    return goal_id.in_(select(mark.c.goal_id).where(mark.c.kind.in_(kinds), mark.c.kind == goal_archive.ARCHIVE, ~superseded))


def goals(ledger: Store, *, limit: int | None = None, after: str | None = None, include_archived: bool = False) -> list[dict[str, Any]]:
    """Every goal (the first ``limit`` by id, of those after ``after``; archived ones only with ``include_archived``) with
    its size, last activity, lifecycle and latest claim/learning verdicts."""
    with ledger.snapshot() as view:
        return list(goal_listing(view, limit=limit, after=after, include_archived=include_archived))


def _heads_page(ledger: Store, *, after: str | None, limit: int, include_archived: bool) -> list[dict[str, Any]]:
    """A page of stream heads by goal id (after ``after``), each with ``archived``; archived goals left out unless ``include_archived``."""
    archived = archived_column(stream_heads.c.goal_id)
    query = select(stream_heads, archived.label("archived")).order_by(stream_heads.c.goal_id).limit(limit)
    if after is not None:
        query = query.where(stream_heads.c.goal_id > after)
    if not include_archived:
        query = query.where(~archived)
    with ledger.reading() as connection:
        return [dict(row._mapping) for row in connection.execute(query)]


def goal_listing(
    ledger: Store, *, limit: int | None = None, after: str | None = None, include_archived: bool = False
) -> Iterator[dict[str, Any]]:
    """:func:`goals` a page of :data:`GOALS_PAGE` goals at a time (read it inside one :meth:`Store.snapshot`)."""
    left = limit
    while left is None or left > 0:
        heads = _heads_page(ledger, after=after, limit=GOALS_PAGE if left is None else min(GOALS_PAGE, left), include_archived=include_archived)
        if not heads:
            return
        current = {
            (r["goal_id"], r["projection"]): r
            for r in ledger.current_rows([h["goal_id"] for h in heads], (catalog.LIFECYCLE, catalog.SUMMARY))
        }
        for head in heads:
            goal = head["goal_id"]
            lifecycle_row = current.get((goal, catalog.LIFECYCLE))
            lifecycle = (_payload(lifecycle_row) if lifecycle_row else None) or {}
            summary_row = current.get((goal, catalog.SUMMARY))
            summary = (_payload(summary_row) if summary_row else None) or {}
            yield goal_listing_row(head, lifecycle, summary, lifecycle_row is not None and lifecycle_row["status"] == "faulted")
        after = heads[-1]["goal_id"]
        left = None if left is None else left - len(heads)


def goal_listing_row(head: Mapping[str, Any], lifecycle: Mapping[str, Any], summary: Mapping[str, Any], faulted: bool) -> dict[str, Any]:
    """One goal as ``goals`` and the report's index list it: its stream head, how many attempts it holds, and its latest
    attempt's lifecycle and verdicts (the goal's current ones)."""
    return {
        "goal_id": head["goal_id"],
        "event_count": head["last_version"],
        "last_position": head["last_position"],
        "last_activity": head["last_recorded_at"],
        "attempts": summary.get("attempts"),
        "attempt": summary.get("attempt"),
        "current_phase": lifecycle.get("current_phase"),
        "first_blocker": lifecycle.get("first_blocker"),
        "claim_strength": summary.get("claim_strength"),
        "learning_status": summary.get("learning_status"),
        "faulted": faulted,
        "archived": bool(head.get("archived", False)),
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
def show(
    ledger: Store, goal_id: str, *, as_of: str | None = None, projection: str | None = None, key: str | None = None,
    limit: int | None = None, offset: int = 0,
) -> dict[str, Any]:
    """A goal's projections: the stored rows, or (``as_of``) a replay of the events up to then.

    By default its current state: the latest row of each projection (every
    ``current`` row, the newest per-batch / per-run / per-step row), and in
    ``counts`` how many rows each holds. ``projection`` lists that projection's
    rows instead (or its row ``key``), in position order, ``limit`` from ``offset``.
    """
    head = ledger.require_goal(goal_id)
    if projection is not None and projection not in catalog.projection_versions():
        raise InvalidInput(f"--projection {projection!r} is not a projection; known: {', '.join(sorted(catalog.projection_versions()))}")
    resolved = resolve_as_of(ledger, goal_id, as_of)
    position = None if resolved is None else resolved.position
    if position is None:
        if projection is None:
            counts, rows = ledger.goal_projections(goal_id)
        else:
            total, rows = ledger.goal_projection_page(goal_id, projection, key=key, limit=limit, offset=offset)
            counts = {projection: total} if total else {}
        rows = [{**r, "payload": _payload(r)} for r in rows]
        total = counts.get(catalog.ATTEMPT_LIFECYCLE, 0) if projection is None else ledger.projection_counts(goal_id).get(catalog.ATTEMPT_LIFECYCLE, 0)
        _, oldest_first = ledger.goal_projection_page(goal_id, catalog.ATTEMPT_LIFECYCLE, limit=SHOW_ATTEMPTS, offset=max(0, total - SHOW_ATTEMPTS))
        latest_attempts = [{**r, "payload": _payload(r)} for r in reversed(oldest_first)]
    else:
        projector = project_goal(ledger.read_goal(goal_id, upto_position=position), strict=False)
        folded = sorted(
            (
                {"projection": r.projection, "key": r.key, "position": r.position, "status": r.status, "payload": r.payload, "error": r.error}
                for r in projector.rows.values()
                if projection in (None, r.projection) and key in (None, r.key)
            ),
            key=lambda r: (r["projection"], r["position"], r["key"]),
        )
        latest_attempts = sorted(
            (
                {"key": r.key, "position": r.position, "status": r.status, "payload": r.payload, "error": r.error}
                for r in projector.rows.values()
                if r.projection == catalog.ATTEMPT_LIFECYCLE
            ),
            key=lambda r: r["position"],
            reverse=True,
        )[:SHOW_ATTEMPTS]
        counts = {}
        for row in folded:
            counts[row["projection"]] = counts.get(row["projection"], 0) + 1
        if projection is None:
            latest = {row["projection"]: row for row in folded}  # (sorted: the last of each projection is its latest)
            rows = list(latest.values())
        else:
            rows = folded[offset : None if limit is None else offset + limit]
    if key is not None and not rows:
        when = "" if position is None else f" as of position {position}"
        raise InvalidInput(f"no row {key!r} in projection {projection} of goal {goal_id!r}{when} (a key is an event id, 'current', or a step's 12-digit position)")
    return {
        "goal_id": goal_id,
        "as_of_position": position,
        **as_of_fields(resolved),
        "head_position": head["last_position"],
        "projections": _rows_by_projection(rows),
        "counts": dict(sorted(counts.items())),
        "attempts": [attempt_entry(row) for row in latest_attempts],
    }


# Events (and step rows) a history reads per statement: its memory, whatever the goal's length.
HISTORY_PAGE = 1000


@dataclass(frozen=True)
class HistoryFilter:
    """Which entries a history shows (all of them by default); the lifecycle of each still reflects every earlier event."""

    as_of: str | None = None
    kind: str | None = None
    since: str | None = None
    until: str | None = None
    limit: int | None = None  # the latest ``limit`` (at least 1) of the selected entries
    changes_only: bool = False
    attempt: str | None = None  # only the events of this attempt (projections/attempts.py)


@dataclass(frozen=True)
class LifecycleStep:
    """A ``lifecycle-step`` row: the lifecycle after the event at ``position`` (until the next step; ``None``: faulted)."""

    position: int
    payload: dict[str, Any] | None


@dataclass(frozen=True)
class HistoryView:
    """A goal's history as :func:`history_reader` streams it: what ``--as-of`` resolved to, and the entries."""

    as_of: AsOf | None
    entries: Iterator[dict[str, Any]]


def history(ledger: Store, goal_id: str, **query: Any) -> dict[str, Any]:
    """Every event of the goal in order (or those ``query`` selects, :class:`HistoryFilter`), with the lifecycle after it."""
    with history_reader(ledger, goal_id, HistoryFilter(**query)) as view:
        return {"goal_id": goal_id, "as_of_position": None if view.as_of is None else view.as_of.position, "entries": list(view.entries)}


@contextmanager
def history_reader(ledger: Store, goal_id: str, query: HistoryFilter = HistoryFilter()) -> Iterator[HistoryView]:
    """The goal's history, streamed from one snapshot while the ``with`` lasts.

    Each event is read with the latest ``lifecycle-step`` row at or before it,
    a page of :data:`HISTORY_PAGE` at a time, so memory does not grow with the
    goal. A goal whose step rows are missing or stored by other code (a ledger
    from before they existed, until ``benchledger replay``) is folded instead,
    which costs what the goal holds.
    """
    with ledger.snapshot() as view, view.reading() as connection:
        view.require_goal(goal_id)
        if query.attempt is not None:
            require_attempt(goal_id, query.attempt, view.projection_counts(goal_id).get(catalog.ATTEMPT_LIFECYCLE, 0))
        as_of = resolve_as_of(view, goal_id, query.as_of)
        since = None if query.since is None else parse_point("--since", query.since)
        until = None if query.until is None else parse_point("--until", query.until)
        if query.since is not None and since is not None and query.until is not None and until is not None:
            refuse_an_empty_range(query.since, since, query.until, until)
        lowest = 0 if since is None else resolve_point(view, goal_id, since, latest_at_or_before=False)
        highest = min(
            MAX_POSITION,
            MAX_POSITION if as_of is None else as_of.position,
            MAX_POSITION if until is None else resolve_point(view, goal_id, until, latest_at_or_before=True),
        )
        withdrawn = withdrawn_by(goal_retractions(connection, goal_id, upto_position=None if as_of is None else as_of.position))
        if stored_steps(connection, goal_id):
            if query.attempt is not None:
                steps = connection.execute(_steps_of(goal_id).order_by(projection_rows.c.key))
                lowest, highest = attempt_span(steps, query.attempt, lowest, highest)
            entries = _stored_history(connection, goal_id, query, lowest, highest, withdrawn)
        else:
            entries = _folded_history(view, goal_id, query, lowest, highest, withdrawn)
        if query.attempt is not None:
            entries = (entry for entry in entries if entry["attempt"] == query.attempt)
        yield HistoryView(as_of, entries)


def goal_retractions(connection: Any, goal_id: str, *, upto_position: int | None = None) -> list[StoredEvent]:
    """The goal's retractions up to ``upto_position`` (all: ``None``), in stream order.

    Retractions are few: read whole through the (goal_id, kind) index, sorted
    after reading (ordered in SQL, SQLite walks the goal's whole key range instead).
    """
    selected = select(events).where(events.c.goal_id == goal_id, events.c.kind == retraction.KIND)
    if upto_position is not None:
        selected = selected.where(events.c.position <= upto_position)
    return sorted(map(row_to_event, connection.execute(selected)), key=lambda event: event.position)


def withdrawn_by(retractions: list[StoredEvent]) -> dict[str, dict[str, Any]]:
    """Each event id the ``retractions`` withdraw, with the retraction that did (its event id, position and reason)."""
    return {
        event_id: {"event_id": r.event_id, "position": r.position, "reason": r.payload.get("reason")}
        for r in retractions
        for event_id in retraction.retracted_by(r)
    }


def retraction_list(ledger: Store, connection: Any, goal_id: str) -> list[dict[str, Any]]:
    """The goal's retractions, newest first, each with its reason and the events it withdrew (position, kind, summary)."""
    retractions = goal_retractions(connection, goal_id)
    withdrawn = ledger.events_by_id([i for r in retractions for i in retraction.retracted_by(r)])
    return [
        {
            "event_id": r.event_id,
            "position": r.position,
            "recorded_at": r.recorded_at,
            "reason": r.payload.get("reason"),
            "retracts": [
                {"event_id": i, "position": e.position, "kind": e.kind, "summary": event_summary(e.kind, e.payload)}
                for i in retraction.retracted_by(r)
                if (e := withdrawn.get(i)) is not None
            ],
        }
        for r in reversed(retractions)
    ]


def events_matching(ledger: Store, reference: str, *, goal_id: str | None = None, limit: int = 11) -> list[StoredEvent]:
    """The events (at most ``limit``, of ``goal_id`` when given) a ``retract`` reference names: ``@POSITION``
    the event at that global position, anything else the events whose id starts with it (lower case)."""
    selected = select(events)
    if goal_id is not None:
        selected = selected.where(events.c.goal_id == goal_id)
    if reference.startswith("@"):
        selected = selected.where(events.c.position == int(reference[1:]))
    else:
        selected = selected.where(events.c.event_id.like(reference.lower() + "%"))
    with ledger.reading() as connection:
        return [row_to_event(row) for row in connection.execute(selected.order_by(events.c.position).limit(limit))]


def stored_steps(connection: Any, goal_id: str) -> bool:
    """Whether the goal's ``lifecycle-step`` rows are stored by this code (else a history folds the goal)."""
    found = connection.execute(
        select(projection_rows.c.key)
        .where(projection_rows.c.projection == catalog.STEP, projection_rows.c.goal_id == goal_id, projection_rows.c.projection_version == catalog.STEP_VERSION)
        .limit(1)
    ).first()
    return found is not None


def _steps_of(goal_id: str) -> Any:
    return select(projection_rows.c.position, projection_rows.c.payload).where(
        projection_rows.c.projection == catalog.STEP, projection_rows.c.goal_id == goal_id
    )


def _step(row: Any) -> LifecycleStep:
    return LifecycleStep(row.position, None if row.payload is None else json.loads(row.payload))


def _stored_history(
    connection: Any, goal_id: str, query: HistoryFilter, lowest: int, highest: int, withdrawn: Mapping[str, dict[str, Any]]
) -> Iterator[dict[str, Any]]:
    # Within a goal stream versions follow positions: the bounds become a range of the (goal, version) index.
    version = events.c.stream_version
    selected = select(events).where(events.c.goal_id == goal_id)
    if lowest > 0:
        selected = selected.where(version >= select(func.min(version)).where(events.c.goal_id == goal_id, events.c.position >= lowest).scalar_subquery())
    if highest < MAX_POSITION:
        selected = selected.where(version <= select(func.max(version)).where(events.c.goal_id == goal_id, events.c.position <= highest).scalar_subquery())
    if query.kind is not None:
        selected = selected.where(events.c.kind == query.kind)
    if query.changes_only:
        selected = selected.where(events.c.position.in_(_steps_of(goal_id).with_only_columns(projection_rows.c.position)))
    if query.limit is not None:
        # The latest ``limit`` entries: start at the limit-th newest one.
        newest = selected.with_only_columns(version).order_by(version.desc())
        first = connection.execute(newest.limit(1).offset(query.limit - 1)).scalar()
        if first is not None:
            selected = selected.where(version >= first)

    def pages() -> Iterator[StoredEvent]:
        after = 0
        while True:
            page = [row_to_event(r) for r in connection.execute(selected.where(version > after).order_by(version).limit(HISTORY_PAGE))]
            yield from page
            if len(page) < HISTORY_PAGE:
                return
            after = page[-1].stream_version

    def steps_from(position: int) -> Iterator[LifecycleStep]:
        """The latest step at or before ``position``, then every later one, in order."""
        key = catalog.step_key(position)
        latest = connection.execute(_steps_of(goal_id).where(projection_rows.c.key <= key).order_by(projection_rows.c.key.desc()).limit(1)).first()
        if latest is not None:
            yield _step(latest)
        while True:
            page = connection.execute(_steps_of(goal_id).where(projection_rows.c.key > key).order_by(projection_rows.c.key).limit(HISTORY_PAGE)).all()
            yield from map(_step, page)
            if len(page) < HISTORY_PAGE:
                return
            key = catalog.step_key(page[-1].position)

    return _entries(pages(), steps_from, withdrawn)


def _folded_history(
    ledger: Store, goal_id: str, query: HistoryFilter, lowest: int, highest: int, withdrawn: Mapping[str, dict[str, Any]]
) -> Iterator[dict[str, Any]]:
    """The history of a goal without current step rows: its events up to ``highest`` folded now (see :func:`history_reader`)."""
    folded = ledger.read_goal(goal_id, upto_position=highest)
    projector = project_goal(folded, strict=False, lifecycle_only=True)
    steps = [
        LifecycleStep(row.position, row.payload) for (name, _), row in sorted(projector.rows.items()) if name == catalog.STEP
    ]
    stepped = {step.position for step in steps}
    shown = [
        e for e in folded
        if e.position >= lowest and query.kind in (None, e.kind) and (not query.changes_only or e.position in stepped)
    ]
    if query.limit is not None:
        shown = shown[-query.limit :]
    return _entries(iter(shown), lambda _: iter(steps), withdrawn)


def _entries(
    shown: Iterator[StoredEvent], steps_from: Callable[[int], Iterator[LifecycleStep]], withdrawn: Mapping[str, dict[str, Any]]
) -> Iterator[dict[str, Any]]:
    """``shown`` (in order), each with the latest step at or before it and the retraction that withdrew it: the history's entries."""
    first = next(shown, None)
    if first is None:
        return
    steps = steps_from(first.position)
    current, pending = None, next(steps, None)
    for event in itertools.chain([first], shown):
        while pending is not None and pending.position <= event.position:
            current, pending = pending, next(steps, None)
        yield history_entry(event, current, withdrawn.get(event.event_id))


def history_entry(event: StoredEvent, step: LifecycleStep | None, retracted_by: dict[str, Any] | None = None) -> dict[str, Any]:
    """A history entry: ``event``, the lifecycle after it, ``step`` (the latest step at or before it), and the retraction
    that withdrew it (:func:`withdrawn_by`; ``None``: none)."""
    payload = event.payload
    here = step is not None and step.position == event.position and step.payload is not None
    lifecycle = None if step is None or step.payload is None else stored_summary(step.payload)
    return {
        "position": event.position,
        "stream_version": event.stream_version,
        "recorded_at": event.recorded_at,
        "kind": event.kind,
        "event_id": event.event_id,
        "attempt": None if step is None or step.payload is None else step.payload.get("attempt"),
        "summary": event_summary(event.kind, payload),
        "outcome": event_outcome(event.kind, payload),
        "artifact_time": artifact_time(payload),
        "lifecycle": lifecycle,
        "lifecycle_status": "ok" if lifecycle is not None else "faulted",
        "phase_changed": step.payload["phase_changed"] if here else False,
        "gates_changed": step.payload["gates_changed"] if here else [],
        "retracted_by": retracted_by,
    }
