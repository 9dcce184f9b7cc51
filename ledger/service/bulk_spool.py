"""The spool of ``ingest-batches`` (``service.bulk``): a validated batch as one line of a temporary file, and read back.

Pass 1 (validation) writes each valid line of the batch file here, normalized and guarded; pass 2 (the append) reads
it back in file order. A spool line holds what the append needs and nothing it would compute again: the batch's head
(goal, source, the guard's receipt, its artifacts' kinds, hashes and origins, ``new_goal``, ``attempt``, its line in
the file) and each payload as the canonical JSON its event id was computed from.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from benchledger.ledger.service.ingest import member_event
from benchledger.ledger.storage.canonical import parse_json
from benchledger.ledger.storage.event_records import NewEvent
from benchledger.projections.artifacts import Artifact

if TYPE_CHECKING:  # (bulk reads the batch file and imports this module)
    from benchledger.ledger.service.bulk import BatchLine

# Between the parts of a spool line: JSON holds no raw control character (a string escapes them), so neither does a part.
SPOOL_PART_SEPARATOR = "\x1e"


def spool_line(batch: BatchLine, members: Sequence[NewEvent], receipt: bytes, number: int = 0) -> bytes:
    """One validated batch as a line of the spool: ``[goal, source, receipt, [[kind, source hash, origin], ...], new_goal,
    attempt, number]`` then each payload, apart (:data:`SPOOL_PART_SEPARATOR`); ``number``: its line in the file.

    The payloads are written as the canonical JSON their event ids were
    computed from (``members``: the batch's member events), which is what the
    store keeps, and read back as such: spooling serializes nothing twice.
    ``receipt`` is the guard's (:func:`check_batch`), so the append does not
    guard the batch again.
    """
    head = [batch.goal_id, batch.source, receipt.hex(), [[a.kind, a.source_sha256, a.origin] for a in batch.artifacts], batch.new_goal, batch.attempt, number]
    # (the head in ASCII: an origin names the file, whose name may hold undecodable bytes, i.e. lone surrogates)
    return (SPOOL_PART_SEPARATOR.join([json.dumps(head), *(new.canonical[0] for new in members)]) + "\n").encode()


@dataclass(frozen=True)
class SpooledBatch:
    goal_id: str
    artifacts: list[Artifact]
    source: str
    receipt: bytes
    new_goal: bool
    attempt: str | None
    members: list[NewEvent]  # (the artifacts' events, their canonical JSON and ids computed: ready to append)
    size: int  # (the spool line's bytes)
    line: int = 0  # (its line in the file)


def unspooled(line: bytes) -> SpooledBatch:
    """A spool line read back, its member events built (what of the append needs no database: done ahead, :class:`_Transactions`)."""
    head, *bodies = line.decode().rstrip("\n").split(SPOOL_PART_SEPARATOR)
    goal_id, source, receipt, listed, new_goal, attempt, number = parse_json(head)  # (json.loads' values, mostly by orjson)
    artifacts = [Artifact(kind, parse_json(body), sha, origin=origin) for (kind, sha, origin), body in zip(listed, bodies)]
    members = [member_event(artifact).with_canonical(body) for artifact, body in zip(artifacts, bodies)]
    for new in members:
        new.event_id(goal_id)  # (its ids, computed once: cached by the event)
    return SpooledBatch(goal_id, artifacts, source, bytes.fromhex(receipt), new_goal, attempt, members, len(line), number)


def spooled_head(line: bytes) -> tuple[str, str | None]:
    """A spool line's goal and named attempt, its payloads left unread."""
    end = line.find(SPOOL_PART_SEPARATOR.encode())
    head = parse_json((line[:end] if end >= 0 else line).decode())
    return head[0], head[5]
