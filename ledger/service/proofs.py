"""Proofs from the ledger's Merkle log (``prove``, ``prove-consistency``, ``checkpoint``), and their checks without a ledger.

The log is the RFC 9162 tree of the events in position order
(docs/proofs.md): the tree of size ``n`` holds the first ``n`` events, leaf
``i`` the event at position ``i + 1``. Every proof is read in one snapshot,
from the nodes the appends stored (``ledger.storage.merkle_log``); a log that
lacks a node it needs is refused (``replay`` rebuilds it), never recomputed
silently. :func:`verify_consistency` needs no ledger: a monitor runs it on
two checkpoints it kept and the proof the ledger's holder gave it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from benchledger.errors import CheckFailed, InvalidInput, capped
from benchledger.ledger.read.event_references import resolve_references
from benchledger.ledger.storage import merkle_log
from benchledger.ledger.storage.event_records import utc_timestamp
from benchledger.ledger.storage.store import Store, one_snapshot
from benchledger.ledger.storage.transaction import Transaction
from benchledger.projections import merkle
from benchledger.projections.tlog_checkpoint import (
    Checkpoint,
    MalformedNote,
    NoteKey,
    parse_checkpoint,
    parse_signed_note,
)

if TYPE_CHECKING:
    from benchledger.ledger.service.signing import Signer

DEFAULT_ORIGIN = "benchledger"


def _tree_size(tx: Transaction, tree_size: int | None) -> int:
    """``tree_size``, or the ledger's (every event); refused when the ledger has not had that many events."""
    size = tx.last_position()
    if tree_size is None:
        return size
    if not 0 <= tree_size <= size:
        raise InvalidInput(f"--tree-size {tree_size}: the ledger holds {size} event(s), so its trees have 0 to {size} leaves")
    return tree_size


@one_snapshot
def tree_head(ledger: Store, *, tree_size: int | None = None, origin: str = DEFAULT_ORIGIN) -> Checkpoint:
    """The checkpoint (unsigned) of the tree of the first ``tree_size`` events (default: all of them)."""
    with ledger.reading() as connection:
        tx = Transaction(connection)
        size = _tree_size(tx, tree_size)
        return Checkpoint(origin, size, merkle_log.root(tx, size))


@one_snapshot
def prove(ledger: Store, event_ids: Sequence[str], *, tree_size: int | None = None, checkpoint: int | None = None) -> dict[str, Any]:
    """An inclusion proof of each event ``event_ids`` names (an id, a unique prefix of one or ``@POSITION``, as ``retract``
    takes them) in the tree of the first ``tree_size`` events (default: all), or in the tree the signed ``checkpoint`` (its
    number) is of, whose signed note the answer then carries."""
    if not event_ids:
        raise InvalidInput("name at least one event id to prove")
    with ledger.reading() as connection:
        tx = Transaction(connection)
        note = signed_root = None
        if checkpoint is not None:
            if tree_size is not None:
                raise InvalidInput("--checkpoint names the tree: give it or --tree-size, not both")
            kept = merkle_log.stored_checkpoints(tx, checkpoint)
            if not kept:
                raise InvalidInput(f"--checkpoint {checkpoint}: no such signed checkpoint (`benchledger checkpoints` lists them)")
            tree_size, note, signed_root = kept[0]["tree_size"], kept[0]["note"], kept[0]["root_hash"]
        size = _tree_size(tx, tree_size)
        resolved, unresolved = resolve_references(ledger, event_ids)
        if unresolved:
            raise InvalidInput("cannot prove: " + "; ".join(capped(unresolved)) + " (`benchledger history --goal GOAL --wide` lists a goal's event ids and positions)")
        found = tx.events_by_id(resolved)
        proofs = []
        for event_id in dict.fromkeys(resolved):
            event = found[event_id]
            if event.position > size:
                raise InvalidInput(f"event {event_id} is at position {event.position}, after the tree of {size} events it was to be proved in")
            index = event.position - 1
            path = merkle_log.proof(tx, merkle.inclusion_proof_ranges(index, size))
            proofs.append(
                {
                    "event_id": event.event_id,
                    "goal_id": event.goal_id,
                    "position": event.position,
                    "leaf_index": index,
                    "chain_hash": event.chain_hash,
                    "leaf_hash": merkle.event_leaf_hash(event.chain_hash).hex(),
                    "proof": [node.hex() for node in path],
                }
            )
        root = merkle_log.root(tx, size).hex()
        if signed_root is not None and root != signed_root:
            raise CheckFailed(f"checkpoint {checkpoint} signed a root the log's tree of {size} events no longer has: the ledger was rewritten since")
        return {"tree_size": size, "root_hash": root, "checkpoint": note, "proofs": proofs}


@one_snapshot
def prove_consistency(ledger: Store, old_size: int, new_size: int | None = None) -> dict[str, Any]:
    """A consistency proof that the tree of the first ``old_size`` events is a prefix of the tree of ``new_size`` (default: all)."""
    with ledger.reading() as connection:
        tx = Transaction(connection)
        size = _tree_size(tx, new_size)
        if not 0 < old_size <= size:
            raise InvalidInput(f"OLD_SIZE {old_size}: a consistency proof runs from a tree of 1 to {size} events to the tree of {size}")
        path = merkle_log.proof(tx, merkle.consistency_proof_ranges(old_size, size))
        return {
            "old_size": old_size,
            "new_size": size,
            "old_root": merkle_log.root(tx, old_size).hex(),
            "new_root": merkle_log.root(tx, size).hex(),
            "proof": [node.hex() for node in path],
        }


def sign_checkpoint(ledger: Store, key: Signer, *, origin: str | None = None) -> dict[str, Any]:
    """Sign the log's current tree head with ``key`` and keep it (``checkpoint --key``); its number, size, root and note.

    A log must never sign two checkpoints that no consistency proof joins
    (c2sp.org/tlog-checkpoint): the last signed checkpoint's root must still be
    the log's root at its size, or nothing is signed.
    """
    return _signed_head(ledger, key, origin, reuse=False)[0]


def checkpoint_to_publish(ledger: Store, key: Signer, *, origin: str | None = None) -> tuple[dict[str, Any], bool]:
    """The checkpoint ``publish`` proves a bundle against, and whether it was kept already: the newest kept checkpoint
    ``key`` signed of the log as it is now (same origin, the tree not grown since), else one signed now (as
    :func:`sign_checkpoint` does). Publishing again changes no checkpoint a reader may already hold."""
    return _signed_head(ledger, key, origin, reuse=True)


def _signed_head(ledger: Store, key: Signer, origin: str | None, *, reuse: bool) -> tuple[dict[str, Any], bool]:
    def attempt() -> tuple[dict[str, Any], bool]:
        with ledger.transaction(write=True) as tx:
            size = tx.last_position()
            root = merkle_log.root(tx, size)
            kept = merkle_log.stored_checkpoints(tx)
            if kept and merkle_log.root(tx, kept[-1]["tree_size"]).hex() != kept[-1]["root_hash"]:
                raise CheckFailed(
                    f"refused to sign: the log's tree of {kept[-1]['tree_size']} events no longer has the root checkpoint "
                    f"{kept[-1]['number']} signed (the ledger was rewritten since); a log never signs two inconsistent checkpoints"
                )
            note = key.sign(Checkpoint(origin or key.name, size, root).text())
            # Ed25519 is deterministic: the same key signing the same checkpoint text makes the same note, byte for
            # byte, so a kept note equal to it is this key's checkpoint of this origin, size and root.
            same = next((checkpoint for checkpoint in reversed(kept) if checkpoint["note"] == note), None) if reuse else None
            if same is not None:
                return same, True
            recorded_at = utc_timestamp()
            number = merkle_log.store_checkpoint(tx, size, root.hex(), note, recorded_at)
        return {"number": number, "tree_size": size, "root_hash": root.hex(), "note": note, "recorded_at": recorded_at}, False

    result: tuple[dict[str, Any], bool] = ledger.retrying_when_locked(attempt)
    return result


@one_snapshot
def signed_checkpoints(ledger: Store) -> list[dict[str, Any]]:
    """The checkpoints ``checkpoint --key`` signed, oldest first."""
    with ledger.reading() as connection:
        return merkle_log.stored_checkpoints(Transaction(connection))


def read_checkpoint(text: str, where: str) -> tuple[Checkpoint, str]:
    """The checkpoint a file holds (a signed note, or the bare note text), and its note text (what a signature covers)."""
    if not text.strip():  # (a `checkpoint > FILE` that failed: "a checkpoint's text ends with a newline" is no help)
        raise MalformedNote(f"{where}: is empty, not a checkpoint (`benchledger checkpoint > FILE` writes one)")
    try:
        note_text = parse_signed_note(text)[0] if "\n\n" in text else text
        return parse_checkpoint(note_text), note_text
    except MalformedNote as exc:
        raise MalformedNote(f"{where}: {exc}") from None


def read_consistency_proof(text: str, where: str) -> tuple[int, int, list[bytes]]:
    """``(old size, new size, proof)`` of what ``prove-consistency --format json`` printed."""
    try:
        document = json.loads(text)
        sizes = document["old_size"], document["new_size"]
        if not all(type(size) is int for size in sizes) or not isinstance(document["proof"], list):
            raise ValueError("old_size and new_size are integers, proof a list")
        proof = [bytes.fromhex(node) for node in document["proof"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidInput(f"{where}: not a consistency proof as `benchledger prove-consistency --format json` prints it ({exc})") from None
    return sizes[0], sizes[1], proof


def verify_consistency(
    old_text: str, new_text: str, proof_text: str, *, keys: Sequence[NoteKey] = (), names: tuple[str, str, str] = ("OLD", "NEW", "PROOF")
) -> dict[str, Any]:
    """Check, without a ledger, that the log of the ``new`` checkpoint only grew from the ``old`` one (and, given
    ``keys``, that both are signed by one of them).

    Raises :class:`~benchledger.projections.merkle.ProofError` (exit status 1)
    when a signature or the proof does not hold.
    """
    signed_by: list[str] = []
    if keys:
        from benchledger.ledger.service.signing import verified_text

        for text, where in ((old_text, names[0]), (new_text, names[1])):
            signed_by += verified_text(text, keys, where)[1]
    old, _ = read_checkpoint(old_text, names[0])
    new, _ = read_checkpoint(new_text, names[1])
    old_size, new_size, proof = read_consistency_proof(proof_text, names[2])
    if old.origin != new.origin:
        raise merkle.ProofError(f"the checkpoints are of two logs: {old.origin!r} and {new.origin!r}")
    if (old_size, new_size) != (old.size, new.size):
        raise merkle.ProofError(
            f"the proof runs from a tree of {old_size} events to one of {new_size}, the checkpoints are of {old.size} and {new.size}"
        )
    merkle.verify_consistency(old.size, new.size, old.root, new.root, proof)
    return {
        "origin": old.origin,
        "old_size": old.size,
        "new_size": new.size,
        "old_root": old.root.hex(),
        "new_root": new.root.hex(),
        "signatures_checked": ", ".join(dict.fromkeys(signed_by)) or None,
    }
