"""Claim bundles (``publish``, ``verify``): a comparison's reviews, the events they were computed from, an inclusion
proof of each against a signed checkpoint, and the checkpoint; checked offline by recomputing the reviews.

A bundle is one JSON document (docs/proofs.md, "Claim bundles"). ``publish``
takes the goal's events up to the batch of the named comparison (the events
its reviews are a fold of), folds them with the reducers every ingest runs
(:func:`benchledger.projections.projector.project_goal`), signs the log's
current tree head (kept, as ``checkpoint --key`` keeps it) and proves every
event in that tree. :func:`verify_bundle` needs neither the ledger nor the
network: it checks the signature, every event's hashes and chain, every
inclusion proof, and folds the events again, refusing when a published
review is not what the evidence implies.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from benchledger.errors import CheckFailed, InvalidInput
from benchledger.ledger.service.signing import verified_text
from benchledger.ledger.storage.event_records import EVENT_COLUMNS, StoredEvent, event_from_record
from benchledger.ledger.storage.verification import verify_events
from benchledger.projections import catalog, merkle
from benchledger.projections.projector import project_goal
from benchledger.projections.tlog_checkpoint import NoteKey, parse_checkpoint

if TYPE_CHECKING:
    from benchledger.ledger.service.signing import Signer
    from benchledger.ledger.storage.store import Store
    from benchledger.ledger.storage.transaction import Transaction

FORMAT = "benchledger-claim-bundle/1"
# What a verified bundle shows, and what it cannot.
CHECKED = [
    "the checkpoint is signed by a trusted key",
    "every event's payload hash, id and chain hash, and the goal's chain from its first event",
    "every event is in the log's tree of the checkpoint's size (an RFC 9162 inclusion proof each)",
    "the published reviews are what the reducers compute from the included events",
]
NOT_CHECKED = [
    "that the runs were honest or the artifacts true: the evidence is what was recorded",
    "that nothing was withheld from the ledger before it was recorded",
    "when the events were recorded, beyond before the checkpoint (recorded_at is the ledger holder's clock)",
    "that the log was not rewritten after the checkpoint: keep the checkpoint and verify-consistency a later one against it",
]


# How many of a goal's comparison names a refusal lists.
SHOWN_COMPARISONS = 5


def _comparison_named(tx: Transaction, goal_id: str, given: str) -> tuple[str, StoredEvent]:
    """The comparison ``given`` names in ``goal_id`` (its comparison_id, or the id of its comparison event, as
    `history` shows it) and the batch that holds it; else :class:`InvalidInput` listing the goal's comparisons."""
    name = given
    if tx.projection_row_of_goals([goal_id], catalog.COMPARISON_INDEX, catalog.comparison_key(name)).get(goal_id) is None:
        event = tx.events_by_id([given]).get(given)
        if event is not None and event.goal_id == goal_id and event.kind == "comparison" and isinstance(event.payload.get("comparison_id"), str):
            name = event.payload["comparison_id"]
    row = tx.projection_row_of_goals([goal_id], catalog.COMPARISON_INDEX, catalog.comparison_key(name)).get(goal_id)
    if row is None or row["payload"] is None:
        keys = [key for _, key, _ in tx.stored_row_keys(goal_id, projection=catalog.COMPARISON_INDEX, per_fetch=100)]
        names = [key.removeprefix("id:") if key.startswith("id:") else "(a name longer than 120 characters)" for key in keys]
        listed = ", ".join(names[:SHOWN_COMPARISONS]) + (f", … ({len(names)} in all)" if len(names) > SHOWN_COMPARISONS else "")
        held = f"its comparisons: {listed}" if names else "it holds none"
        raise InvalidInput(f"goal {goal_id!r} holds no comparison {given!r} (a comparison_id, or its comparison event's id): {held}")
    batch_id = json.loads(row["payload"])["batch_id"]
    batch = tx.events_by_id([batch_id]).get(batch_id)
    if batch is None:
        raise InvalidInput(f"comparison {name!r}: its batch {batch_id} is not in the ledger")
    return name, batch


def _reviews(events: Sequence[StoredEvent], comparison_id: str) -> tuple[str | None, list[dict[str, Any]]]:
    """The batch the fold of ``events`` names for ``comparison_id``, and the rows it makes for that batch (its claim
    review and the other reviews of that batch)."""
    folded = project_goal(events, strict=False).rows
    index = folded.get((catalog.COMPARISON_INDEX, catalog.comparison_key(comparison_id)))
    batch_id = index.payload.get("batch_id") if index is not None and index.payload else None
    rows = [
        {"projection": row.projection, "key": row.key, "position": row.position, "payload": row.payload, "error": row.error}
        for (_, key), row in sorted(folded.items())
        if key == batch_id
    ]
    return batch_id, rows


def publish(ledger: Store, goal_id: str, comparison_id: str, key: Signer, *, origin: str | None = None) -> tuple[dict[str, Any], dict[str, Any], bool]:
    """The claim bundle of ``comparison_id`` in ``goal_id``, against a checkpoint of the log signed by ``key``: the one it
    signed of the log as it is now, if kept, else one signed now (and kept); with that checkpoint, and whether it was kept already."""
    # (the storage modules, and SQLAlchemy with them, are imported here: ``verify`` runs this module's other half with no ledger)
    from benchledger.ledger.service import proofs
    from benchledger.ledger.storage import merkle_log
    from benchledger.ledger.storage.transaction import Transaction

    ledger.require_goal(goal_id)
    with ledger.reading() as connection:  # (the comparison first: a refusal signs and keeps no checkpoint)
        _comparison_named(Transaction(connection), goal_id, comparison_id)
    signed, reused = proofs.checkpoint_to_publish(ledger, key, origin=origin)
    with ledger.snapshot() as view, view.reading() as connection:
        tx = Transaction(connection)
        comparison_id, batch = _comparison_named(tx, goal_id, comparison_id)
        events = tx.read_goal(goal_id, upto_position=batch.position)
        size = signed["tree_size"]
        paths = [merkle_log.proof(tx, merkle.inclusion_proof_ranges(event.position - 1, size)) for event in events]
    bundle = {
        "format": FORMAT,
        "goal_id": goal_id,
        "comparison_id": comparison_id,
        "batch_id": batch.event_id,
        "reviews": _reviews(events, comparison_id)[1],
        "events": [_record(event) for event in events],
        "tree_size": size,
        "inclusion_proofs": [[node.hex() for node in path] for path in paths],
        "checkpoint": signed["note"],
    }
    return bundle, signed, reused


def _record(event: StoredEvent) -> dict[str, Any]:
    values = dict(zip(StoredEvent.__dataclass_fields__, (getattr(event, f) for f in StoredEvent.__dataclass_fields__), strict=True))
    return {column: values["payload_text" if column == "payload" else column] for column in EVENT_COLUMNS}


def _refuse(problem: str) -> CheckFailed:
    return CheckFailed(f"claim bundle refused: {problem}")


def verify_bundle(text: str, keys: Sequence[NoteKey], where: str) -> dict[str, Any]:
    """Check a claim bundle with no ledger (see module docstring); what was checked, or :class:`CheckFailed` naming the first problem."""
    try:
        bundle = json.loads(text)
        if not isinstance(bundle, dict) or bundle.get("format") != FORMAT:
            raise ValueError(f"not a {FORMAT} document")
        goal_id, comparison_id, batch_id = bundle["goal_id"], bundle["comparison_id"], bundle["batch_id"]
        events = [event_from_record({column: record[column] for column in EVENT_COLUMNS}) for record in bundle["events"]]
        paths = [[bytes.fromhex(node) for node in path] for path in bundle["inclusion_proofs"]]
        published = list(bundle["reviews"])
        note, tree_size = bundle["checkpoint"], bundle["tree_size"]
        if not all(isinstance(value, str) for value in (note, goal_id, comparison_id)) or len(paths) != len(events):
            raise ValueError("a checkpoint note, a goal and comparison id, and one inclusion proof an event")
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InvalidInput(f"{where}: not a claim bundle as `benchledger publish` writes it ({exc})") from None

    try:
        signed_text, signed_by = verified_text(note, keys, f"{where}: its checkpoint")
    except merkle.ProofError as exc:
        raise _refuse(str(exc)) from None
    checkpoint = parse_checkpoint(signed_text)
    if tree_size != checkpoint.size:
        raise _refuse(f"its proofs are for a tree of {tree_size} events, its checkpoint is of {checkpoint.size}")
    if not events:
        raise _refuse("it holds no event")
    if any(event.goal_id != goal_id for event in events):
        raise _refuse(f"an event of another goal than {goal_id!r}")
    try:
        problems = [p for p in verify_events(events, [], scope_goal=goal_id).problems if p.kind != "head_missing"]
    except (TypeError, ValueError, AttributeError) as exc:  # (a field of the wrong type: the hashes cannot even be computed)
        raise _refuse(f"an event that is not an event record ({exc})") from None
    if problems:
        first = problems[0]
        raise _refuse(f"{first.kind} at position {first.position}: {first.detail}")
    for event, path in zip(events, paths, strict=True):
        try:
            merkle.verify_inclusion(event.position - 1, checkpoint.size, merkle.event_leaf_hash(event.chain_hash), path, checkpoint.root)
        except merkle.ProofError as exc:
            raise _refuse(f"event {event.event_id} (position {event.position}): {exc}") from None
    if events[-1].event_id != batch_id:
        raise _refuse(f"its events end at {events[-1].event_id}, not at the comparison's batch {batch_id}")
    folded_batch, recomputed = _reviews(events, comparison_id)
    if folded_batch != batch_id:
        raise _refuse(f"the included events do not make {batch_id} the batch of comparison {comparison_id!r}")
    if recomputed != published:
        names = sorted({(r.get("projection"), r.get("key")) for r in published if r not in recomputed} | {(r["projection"], r["key"]) for r in recomputed if r not in published}, key=str)
        raise _refuse(f"the published reviews are not what the included events imply ({', '.join(f'{n} [{k}]' for n, k in names)} differ)")
    claim = next((r["payload"] for r in recomputed if r["projection"] == catalog.CLAIM and r["payload"]), None)
    return {
        "ok": True,
        "goal_id": goal_id,
        "comparison_id": comparison_id,
        "origin": checkpoint.origin,
        "tree_size": checkpoint.size,
        "root_hash": checkpoint.root.hex(),
        "signed_by": signed_by,
        "events": len(events),
        "reviews": [f"{r['projection']} [{r['key']}]" for r in recomputed],
        "claim_strength": (claim or {}).get("decision", {}).get("claim_strength"),
        "checked": CHECKED,
        "not_checked": NOT_CHECKED,
    }
