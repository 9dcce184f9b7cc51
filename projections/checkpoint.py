"""The projector checkpoint: a goal's fold state after its last event, so an ingest folds only its new events.

The ``projector-checkpoint [current]`` row holds where the attempt rule
stands (``projections.attempts``: the open attempt, the lifecycle kinds it
holds, the next number it would open), for each lifecycle kind which event or
batch holds the open attempt's newest evidence (:func:`evidence_payload`: each
attempt's ``attempt-evidence`` row holds the same for that attempt) (by id and stream version; the
payloads are read again on demand, a derived review reduced again from its
batch), the ids retracted so far, and every projection's version when it was
written. Events are named by id and stream version, never by ledger position,
so the same events make the same checkpoint in any ledger.

A checkpoint is never trusted to be right, only used when it can be read: one
of other versions or malformed is :class:`CheckpointUnusable`, and the ingest
folds the goal from its first event instead. It is a projection row like any
other, so replay rebuilds it and audit checks it (docs/linking.md,
"Incremental maintenance").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeAlias, TypeGuard

from benchledger.projections.attempts import Attempts, valid_attempt_id
from benchledger.projections.catalog import LIFECYCLE_KINDS, projection_versions

CHECKPOINT_SCHEMA = "benchledger_projector_checkpoint_v1"
NO_ATTEMPT = Attempts()

# Where the newest evidence of a lifecycle kind is: (stream version, ("event_id" | "batch_id", id)).
EvidenceRef: TypeAlias = tuple[int, tuple[str, str]]


class CheckpointUnusable(Exception):
    """A stored checkpoint an ingest cannot resume from: it folds the goal from its first event instead."""


def checkpoint_payload(
    stream_version: int, latest: Mapping[str, EvidenceRef], retracted: Iterable[str], attempts: Attempts = NO_ATTEMPT, last: str | None = None
) -> dict[str, Any]:
    """The checkpoint after the goal's event ``stream_version``: where the attempt rule stands, where the open attempt's newest
    evidence of each kind is, and the retracted ids."""
    return {
        "schema_version": CHECKPOINT_SCHEMA,
        "stream_version": stream_version,
        "versions": projection_versions(),
        "retracted": sorted(retracted),
        "attempt": {
            "open": attempts.open, "held": sorted(attempts.held), "next_number": attempts.next_number, "count": attempts.count,
            # the attempt of the goal's last event when a batch named it into an earlier one (the next step compares with that attempt)
            **({"last": last} if last is not None else {}),
        },
        "latest": evidence_payload(latest),
    }


def evidence_payload(latest: Mapping[str, EvidenceRef]) -> dict[str, Any]:
    """Where an attempt's newest evidence of each kind is, as a checkpoint's ``latest`` and an ``attempt-evidence`` row hold it."""
    return {kind: {"stream_version": latest[kind][0], latest[kind][1][0]: latest[kind][1][1]} for kind in LIFECYCLE_KINDS if kind in latest}


def evidence_refs(latest: Any) -> dict[str, EvidenceRef]:
    """The references of an :func:`evidence_payload`, or :class:`CheckpointUnusable`."""
    if not (isinstance(latest, dict) and set(latest) <= set(LIFECYCLE_KINDS)):
        raise CheckpointUnusable("malformed evidence")
    refs: dict[str, EvidenceRef] = {}
    for kind, entry in latest.items():
        fields = sorted(set(entry) - {"stream_version"}) if isinstance(entry, dict) else []
        if fields not in (["event_id"], ["batch_id"]) or not _is_count(entry.get("stream_version")) or not isinstance(entry[fields[0]], str):
            raise CheckpointUnusable(f"malformed evidence of {kind}")
        refs[kind] = (entry["stream_version"], (fields[0], entry[fields[0]]))
    return refs


def checkpoint_fields(checkpoint: Any) -> tuple[int, dict[str, EvidenceRef], set[str]]:
    """The stream version, evidence references and retracted ids of a checkpoint payload, or :class:`CheckpointUnusable`."""
    if not isinstance(checkpoint, dict) or checkpoint.get("schema_version") != CHECKPOINT_SCHEMA:
        raise CheckpointUnusable("not a projector checkpoint of this version")
    if checkpoint.get("versions") != projection_versions():
        raise CheckpointUnusable("written by other reducer or linking versions")
    stream_version, latest, retracted = checkpoint.get("stream_version"), checkpoint.get("latest"), checkpoint.get("retracted")
    if not _is_count(stream_version):
        raise CheckpointUnusable("malformed")
    if not (isinstance(retracted, list) and all(isinstance(i, str) for i in retracted)):
        raise CheckpointUnusable("malformed retracted ids")
    return stream_version, evidence_refs(latest), set(retracted)


def checkpoint_last_attempt(checkpoint: Any) -> str | None:
    """The earlier attempt a checkpoint says the goal's last event was named into, if any (read after :func:`checkpoint_attempts`)."""
    last = checkpoint["attempt"].get("last")
    if last is not None and not valid_attempt_id(last):
        raise CheckpointUnusable("malformed last attempt")
    return last if isinstance(last, str) else None


def checkpoint_attempts(checkpoint: Any) -> Attempts:
    """Where the attempt rule stands in a checkpoint payload (read after :func:`checkpoint_fields`), or :class:`CheckpointUnusable`."""
    entry = checkpoint.get("attempt") if isinstance(checkpoint, dict) else None
    if not isinstance(entry, dict) or sorted(set(entry) - {"last"}) != ["count", "held", "next_number", "open"]:
        raise CheckpointUnusable("malformed attempt")
    opened, held, number, count = entry["open"], entry["held"], entry["next_number"], entry["count"]
    if not (isinstance(opened, str) or opened is None) or not _is_count(number) or not (count == 0 or _is_count(count)):
        raise CheckpointUnusable("malformed attempt")
    if not (isinstance(held, list) and all(isinstance(k, str) and k in LIFECYCLE_KINDS for k in held)):
        raise CheckpointUnusable("malformed attempt evidence")
    return Attempts(opened, frozenset(held), number, count)


def checkpoint_references(checkpoint: Any) -> list[str]:
    """The ids of the events a checkpoint payload names (none if it is unusable): what resuming from it reads first."""
    try:
        _, latest, _ = checkpoint_fields(checkpoint)
    except CheckpointUnusable:
        return []
    return [ref_id for _, (_, ref_id) in latest.values()]


def _is_count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0
