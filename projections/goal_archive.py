"""Archiving a goal: an event that hides it from ``goals`` and the report's index, never a deletion.

``benchledger goals archive G`` appends a ``goal_archive`` event to goal G,
``goals unarchive G`` a ``goal_unarchive`` event; the goal is archived while
the later of the two is an archive. The events are history like any other
(``history`` lists them, ``export`` and ``merge`` carry them); no projection
reads them, so archiving changes no review. They are benchledger's own, so
neither can be retracted: unarchiving undoes an archive.

Pure rules, no database: the events' payloads, and whether a goal is archived.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

ARCHIVE = "goal_archive"
UNARCHIVE = "goal_unarchive"
KINDS = (ARCHIVE, UNARCHIVE)
SCHEMA = "benchledger_goal_archive_v0"


def archive_payload(archived: bool, after_version: int) -> dict[str, Any]:
    """The payload of an archive (``archived``) or unarchive event appended after the goal's version ``after_version``
    (which makes each one a new event: archiving again after an unarchive is a new observation, not a duplicate)."""
    return {"schema_version": SCHEMA, "archived": archived, "after_version": after_version}


def kind_of(archived: bool) -> str:
    return ARCHIVE if archived else UNARCHIVE


def is_archived(kinds: Iterable[str]) -> bool:
    """Whether a goal whose archive and unarchive events are of ``kinds`` (in stream order) is archived: the last one decides."""
    last = None
    for kind in kinds:
        if kind in KINDS:
            last = kind
    return last == ARCHIVE
