"""The rows an append stores: an events-table record chained to its predecessor, and the stream head it leaves.

Pure (no database, no clock): the store's append builds every event row here,
and so does the benchmark's synthetic ledger (benchmarks/synthetic_ledger.py),
which clones real goals into 10^6-event ledgers. One builder means the clones
hash exactly as an append does (docs/hash-chain.md), and cannot drift from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchledger.ledger.storage import canonical


def chained_record(
    prev_hash: str,
    *,
    position: int,
    event_id: str,
    goal_id: str,
    stream_version: int,
    kind: str,
    schema_version: str | None,
    payload: str,
    payload_sha256: str,
    source_sha256: str | None,
    recorded_at: str,
    source: str,
) -> dict[str, Any]:
    """The events-table record of one new event that follows ``prev_hash`` in its stream.

    ``payload`` is the canonical JSON text and ``payload_sha256`` its hash;
    the chain hash covers every other stored field.
    """
    return {
        "position": position,
        "event_id": event_id,
        "goal_id": goal_id,
        "stream_version": stream_version,
        "kind": kind,
        "schema_version": schema_version,
        "payload": payload,
        "payload_sha256": payload_sha256,
        "source_sha256": source_sha256,
        "prev_hash": prev_hash,
        "chain_hash": canonical.chain_hash(
            prev_hash,
            goal_id=goal_id,
            stream_version=stream_version,
            kind=kind,
            schema_version=schema_version,
            payload_sha256=payload_sha256,
            event_id=event_id,
            recorded_at=recorded_at,
            source=source,
            source_sha256=source_sha256,
        ),
        "recorded_at": recorded_at,
        "source": source,
    }


def head_record(last: Mapping[str, Any]) -> dict[str, Any]:
    """The ``stream_heads`` row of a goal whose newest event record is ``last``."""
    return {
        "goal_id": last["goal_id"],
        "last_version": last["stream_version"],
        "last_chain_hash": last["chain_hash"],
        "last_position": last["position"],
        "last_recorded_at": last["recorded_at"],
    }
