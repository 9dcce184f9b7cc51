"""The batch manifest: the ``ingest_batch`` event that says which evidence was ingested together.

An ingest appends its artifacts, then one batch event listing them. Batches
are the unit that says "these runs belong to this comparison": a batch's
reviews (claim review, learning ledger, verifier attribution, the review a
command ran) read its members and nothing else (docs/linking.md), so the
manifest keeps them in argument order, duplicates included, as LoopX reads
the files it is given.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

BATCH_KIND = "ingest_batch"
BATCH_SCHEMA = "benchledger_ingest_batch_v0"


class MemberEvent(Protocol):
    """A batch's member as its reviews read it."""

    @property
    def kind(self) -> str: ...

    @property
    def payload(self) -> Any: ...


def batch_manifest(members: list[dict[str, Any]], review: Mapping[str, Any] | None = None, attempt: str | None = None) -> dict[str, Any]:
    """The payload of an ``ingest_batch`` event: its members in argument order, duplicates included.

    ``review`` records the review command (and its options) that ingested the
    batch, so the stored projection of that review is rebuilt with the same flags.
    ``attempt`` records the attempt the batch was named into (``ingest --attempt``): its new
    members and itself join that attempt (``projections.attempts.named_attempt``).
    """
    manifest: dict[str, Any] = {"schema_version": BATCH_SCHEMA, "members": members}
    if review is not None:
        manifest["review"] = dict(review)
    if attempt is not None:
        manifest["attempt"] = attempt
    return manifest


def claim_review_without_runs(member_kinds: Iterable[str]) -> bool:
    """Whether a batch of these kinds derives a claim review from its comparison alone.

    ``review-claim`` reads the runs of the comparison's own batch (as LoopX reads the runs given with
    it), so a comparison ingested on its own, e.g. a re-generated comparison file, yields the verdict
    LoopX gives without runs, and that review becomes the goal's latest.
    """
    kinds = set(member_kinds)
    return "comparison" in kinds and "run" not in kinds


def holds_comparison(manifest: Mapping[str, Any]) -> bool:
    """Whether a batch lists a comparison (and so derives a claim review and a learning ledger)."""
    return any(m["kind"] == "comparison" for m in manifest["members"])


def batch_inputs(manifest: Mapping[str, Any], events_by_id: Mapping[str, MemberEvent]) -> dict[str, list[Any]]:
    """A batch's member payloads grouped by kind, in argument order: a review's ``inputs``."""
    inputs: dict[str, list[Any]] = {}
    for member in manifest["members"]:
        event = events_by_id[member["event_id"]]
        inputs.setdefault(event.kind, []).append(event.payload)
    return inputs
