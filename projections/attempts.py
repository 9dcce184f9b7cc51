"""The attempt rule: which attempt of its goal each event belongs to (docs/linking.md, "Attempts inside a goal").

LoopX's ``lifecycle-state`` answers where *one attempt* is, from that
attempt's preflight, launch, post-launch, runs, comparison, claim review and
learning ledger. A goal may hold several attempts (a first case run to its
budget count, then a second case preflighted and launched), so before the
lifecycle is reduced every event is placed in an attempt, in stream order, by
:func:`place` (pure: the same events give the same attempts in any ledger, in
an ingest, a replay or an audit).

The rule:

* the goal's first event opens attempt ``1``;
* a **preflight** opens the next attempt, unless the open one holds no
  lifecycle evidence but preflights (a preflight taken again before its launch
  is the same attempt);
* a **launch** opens the next attempt once the open one holds evidence of a
  later stage (a post-launch, a run, a comparison, a claim review or a
  learning ledger): the case was launched again;
* everything else (post-launches, runs, comparisons, claim reviews, learning
  ledgers, and the kinds that feed no lifecycle) joins the open attempt.

Attempts the rule opens are numbered ``1``, ``2``, … in stream order.

An attempt can also be **named** (``ingest --attempt N``: the batch manifest
records it, ``projections.batch_manifest``): the events a batch appends, and
its manifest, then join attempt ``N`` whatever the rule says
(:func:`place_named`). Naming the next number opens it; naming an attempt
already opened adds to it (an earlier, closed one included) and leaves the
rule's open attempt as it was. Un-named events join the most recently opened
attempt, as before. Attempt ids are positive decimal numbers
(:func:`valid_attempt_id`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from benchledger.projections.catalog import LIFECYCLE_KINDS

PREFLIGHT, LAUNCH = "preflight", "launch"
# The evidence an attempt holds: lifecycle-state's inputs.
LIFECYCLE_EVIDENCE = frozenset(LIFECYCLE_KINDS)
# Evidence of a stage after the launch: once the open attempt holds some, a launch opens the next attempt.
AFTER_LAUNCH = LIFECYCLE_EVIDENCE - {PREFLIGHT, LAUNCH}
FIRST_ATTEMPT = "1"
# An attempt's id: a positive decimal number without leading zeros, as the rule numbers them (so a named attempt and
# the rule's next number are one sequence: naming attempt N moves the rule's next number past N).
ATTEMPT_ID = re.compile(r"[1-9][0-9]{0,8}")
ATTEMPT_ID_SYNTAX = "a positive whole number such as 1 or 2 (no sign, no leading zero, at most 9 digits)"


def valid_attempt_id(value: object) -> bool:
    """Whether ``value`` is an attempt id (:data:`ATTEMPT_ID`)."""
    return isinstance(value, str) and ATTEMPT_ID.fullmatch(value) is not None


@dataclass(frozen=True)
class Attempts:
    """Where the rule stands after a goal's events: the open attempt, what it holds, and the next number it would open."""

    open: str | None = None  # the attempt the next event joins; None before the goal's first event
    held: frozenset[str] = frozenset()  # the lifecycle kinds the open attempt holds
    next_number: int = 1
    count: int = 0  # attempts opened so far


def place(attempts: Attempts, kind: str) -> Attempts:
    """The rule's state after an event of ``kind``: its ``open`` attempt is the event's."""
    evidence = frozenset({kind}) & LIFECYCLE_EVIDENCE
    if attempts.open is None or _opens(attempts.held, kind):
        return Attempts(str(attempts.next_number), evidence, attempts.next_number + 1, attempts.count + 1)
    return replace(attempts, held=attempts.held | evidence) if evidence - attempts.held else attempts


def _opens(held: frozenset[str], kind: str) -> bool:
    """Whether an event of ``kind`` opens the next attempt, the open one holding ``held``."""
    if kind == PREFLIGHT:
        return not held <= {PREFLIGHT}
    return kind == LAUNCH and bool(held & AFTER_LAUNCH)


def named_attempt(manifest: object) -> str | None:
    """The attempt a batch manifest (``projections.batch_manifest``) names, if it names a valid one (anything else in its
    place names none: the rule places the batch)."""
    attempt = manifest.get("attempt") if isinstance(manifest, dict) else None
    return attempt if valid_attempt_id(attempt) else None


def place_named(attempts: Attempts, kind: str, named: str) -> Attempts:
    """The rule's state after an event of ``kind`` placed in the attempt ``named`` (a valid id), whatever the rule says.

    The open attempt named: the event joins it (no opening: a preflight named so stays in it). A number at or
    past the rule's next: that attempt opens, and un-named events join it from now on. An earlier attempt: the
    event joins that one; the open attempt and what it holds stay as they are.
    """
    evidence = frozenset({kind}) & LIFECYCLE_EVIDENCE
    if named == attempts.open:
        return replace(attempts, held=attempts.held | evidence) if evidence - attempts.held else attempts
    if int(named) >= attempts.next_number:
        return Attempts(named, evidence, int(named) + 1, attempts.count + 1)
    return attempts
