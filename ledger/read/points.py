"""``POSITION|TIME`` options (``--as-of``, ``--since``, ``--until``) as global positions of a goal's events.

ASCII digits are a position; anything else is an ISO-8601 time compared with
the ledger's recording time (``recorded_at``). One precision rule: a time
without a fraction names its whole week, day, hour, minute or second.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select, true

from benchledger.errors import InvalidInput
from benchledger.ledger.storage.event_records import utc_timestamp
from benchledger.ledger.storage.schema import events
from benchledger.ledger.storage.store import Store


class InvalidAsOf(InvalidInput, ValueError):
    """An ``--as-of`` value that is neither a position nor an ISO-8601 time."""


# Positions are 64-bit on every backend (PostgreSQL BIGINT); a larger number names no position.
MAX_POSITION = 2**63 - 1
_DIGITS = re.compile(r"[0-9]+")
# How much of an ISO-8601 time a value gives (the date: a calendar date, an ordinal date or an ISO
# week, with or without its day; then the hour, minute, second and a fraction, each optional).
_PRECISION = re.compile(
    r"(?P<date>[0-9]{4}-?(?:W[0-9]{2}(?P<weekday>-?[0-9])?|[0-9]{2}-?[0-9]{2}|[0-9]{3}))"
    r"(?:[Tt ](?P<hour>[0-9]{2})(?::?(?P<minute>[0-9]{2})(?::?(?P<second>[0-9]{2})(?P<fraction>[.,][0-9]+)?)?)?)?"
)
_MONTH = re.compile(r"(?P<year>[0-9]{4})-(?P<month>[0-9]{2})")
_PERIODS = {"week": timedelta(weeks=1), "day": timedelta(days=1), "hour": timedelta(hours=1), "minute": timedelta(minutes=1), "second": timedelta(seconds=1)}


@dataclass(frozen=True)
class Point:
    """A ``POSITION|TIME`` value as the ledger reads it: a position, or the instant (``recorded_at`` text) a time names.

    ``period``: the week, day, hour, minute or second a time without a fraction
    names (``None``: a position, or a time to the fraction, one instant).
    """

    position: int | None = None
    start: str | None = None  # the period's first instant
    end: str | None = None  # its last (the same as ``start`` for one instant)
    period: str | None = None


@dataclass(frozen=True)
class AsOf:
    """What ``--as-of`` resolved to: the position, the instant a TIME named (``None`` for a position), and when it is
    after the ledger's last event, that event's position and recording time (``after_last_event``: what is read is the
    current state, as without it)."""

    position: int
    time: str | None = None
    period: str | None = None
    after_last_event: dict[str, Any] | None = None


def resolve_as_of(ledger: Store, goal_id: str | None, as_of: str | None) -> AsOf | None:
    """``as_of`` as a global position: ASCII digits are a position, anything else an ISO-8601 time.

    A time names the last event of the goal (``None``: of the ledger) the ledger
    recorded at or before it (0: none); a time given to the day, hour, minute or
    second (no fraction) takes in that whole period. Refused with one line
    (:class:`InvalidAsOf`): other digits (``²``), a position beyond 64 bits, a
    date that does not exist (``2026-02-30``) or one outside the years a UTC
    timestamp can name.
    """
    if as_of is None:
        return None
    point = parse_point("--as-of", as_of)
    position = resolve_point(ledger, goal_id, point, latest_at_or_before=True)
    return AsOf(position, point.end, point.period, _after_the_last_event(ledger, point))


def as_of_fields(resolved: AsOf | None) -> dict[str, Any]:
    """What an answer read as of ``resolved`` says of it besides its position (``show``'s, ``history``'s)."""
    if resolved is None:
        return {"as_of_time": None, "as_of_period": None, "as_of_after_last_event": None}
    return {"as_of_time": resolved.time, "as_of_period": resolved.period, "as_of_after_last_event": resolved.after_last_event}


def _after_the_last_event(ledger: Store, point: Point) -> dict[str, Any] | None:
    """The ledger's last event (``position``, ``recorded_at``) when ``point`` is after it (a position past it, a time whose
    whole period is after its recording), else ``None``."""
    with ledger.reading() as connection:
        last = connection.execute(select(events.c.position, events.c.recorded_at).order_by(events.c.position.desc()).limit(1)).first()
    if last is None:
        return None
    # (a time's whole period: a day that holds the last event is read as that day, which its own line says)
    after = point.position > last.position if point.position is not None else point.start is not None and point.start > last.recorded_at
    return {"position": last.position, "recorded_at": last.recorded_at} if after else None


def resolve_point(ledger: Store, goal_id: str | None, point: Point, *, latest_at_or_before: bool) -> int:
    """A ``POSITION|TIME`` option as a position: a time is the goal's (``None``: the ledger's) last event recorded at or before
    its period's end (``latest_at_or_before``) or its first event recorded at or after its period's start (otherwise; none: past the end)."""
    if point.position is not None:
        return point.position
    recorded = events.c.recorded_at
    of_goal = events.c.goal_id == goal_id if goal_id is not None else true()  # (None: the whole ledger)
    with ledger.reading() as connection:
        if latest_at_or_before:
            found = connection.execute(select(func.max(events.c.position)).where(of_goal, recorded <= point.end)).scalar()
            return found or 0
        found = connection.execute(select(func.min(events.c.position)).where(of_goal, recorded >= point.start)).scalar()
        return MAX_POSITION if found is None else found


def refuse_an_empty_range(since: str, start: Point, until: str, end: Point) -> None:
    """``--since`` after ``--until`` (two positions, or two times) selects nothing: say so rather than print an empty table."""
    # (a position and a time are compared once resolved, per goal)
    if (start.position is not None and end.position is not None and start.position > end.position) or (
        start.start is not None and end.end is not None and start.start > end.end
    ):
        raise InvalidAsOf(f"--since {_shown(since)} is after --until {_shown(until)}: no entry lies between them")


def parse_point(option: str, value: str | int | datetime) -> Point:
    """A position (ASCII digits) or an ISO-8601 time as the ledger's ``recorded_at`` text; :class:`InvalidAsOf` otherwise.

    A time without a fraction names a period, the whole of it: ``2026-12`` the
    month, ``2026-12-04`` the day, ``2026-12-04T08:30`` that minute, ``…T08:30:15`` that second
    (the ledger records microseconds); its start and end are the first and last microsecond.
    """
    if isinstance(value, datetime):  # (the library takes a position or a time as Python has them, too)
        value = value.isoformat()
    elif isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    elif not isinstance(value, str):
        raise InvalidAsOf(f"{option} must be a position or an ISO-8601 time (an int, a str or a datetime), not {type(value).__name__}")
    text = value.strip()
    if _DIGITS.fullmatch(text):
        if len(text.lstrip("0")) > 19 or int(text) > MAX_POSITION:
            raise InvalidAsOf(f"{option} {_shown(text)} is beyond any position (at most {MAX_POSITION})")
        return Point(position=int(text))
    month = _MONTH.fullmatch(text)
    if month:  # (a calendar month, which fromisoformat does not read: the whole month)
        year, number = int(month["year"]), int(month["month"])
        if not 1 <= number <= 12:
            raise InvalidAsOf(f"{option} {_shown(value)} is neither a position nor an ISO-8601 time (month must be in 1..12)")
        start = datetime(year, number, 1, tzinfo=UTC)
        after = datetime(year + number // 12, number % 12 + 1, 1, tzinfo=UTC) if year < 9999 or number < 12 else None
        end = after - timedelta(microseconds=1) if after else datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
        return Point(start=utc_timestamp(start), end=utc_timestamp(end), period="month")
    try:
        # (RFC 3339 allows a lower-case "z", and "t" between date and time)
        moment = datetime.fromisoformat(re.sub("[Zz]$", "+00:00", text))
    except ValueError as exc:
        reason = "" if str(exc).startswith("Invalid isoformat") else f" ({exc})"
        raise InvalidAsOf(f"{option} {_shown(value)} is neither a position nor an ISO-8601 time{reason}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    period = _period(text)
    try:
        end = moment + _PERIODS[period] - timedelta(microseconds=1) if period else moment
        return Point(start=utc_timestamp(moment), end=utc_timestamp(end), period=period)
    except OverflowError:
        raise InvalidAsOf(f"{option} {_shown(value)} is outside the times a UTC timestamp can name") from None


def _period(text: str) -> str | None:
    """The period a time ``text`` (one ``fromisoformat`` reads) names: its finest field, ``None`` when it has a fraction."""
    given = _PRECISION.match(text)
    if given is None or given["fraction"]:
        return None
    for field in ("second", "minute", "hour"):
        if given[field]:
            return field
    return "week" if "W" in given["date"] and not given["weekday"] else "day"


def _shown(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:37] + "...")
