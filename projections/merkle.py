"""RFC 9162 (Certificate Transparency v2) Merkle tree hashing and proofs, as pure functions.

The ledger's log is the Merkle tree of its events in global position order:
leaf ``i`` (0-based) is the event at position ``i + 1``, its leaf hash
``SHA-256(0x00 || chain hash)`` (the event's 32-byte canonical hash,
docs/hash-chain.md), an interior node ``SHA-256(0x01 || left || right)``
(RFC 9162 §2.1.1). docs/proofs.md gives the formats.

A *node* ``(level, index)`` is the root of the complete subtree over leaves
``[index * 2**level, (index + 1) * 2**level)``. Every subtree RFC 9162 hashes
(the tree itself, each element of a proof) is a run of such complete nodes,
largest first (:func:`subtree_nodes`), so a log that keeps every complete
node (``ledger.storage.merkle_log``) answers any proof for any earlier tree
size from O(log n) stored nodes: :func:`inclusion_proof_ranges` and
:func:`consistency_proof_ranges` name the subtrees, :func:`fold` hashes one.

Verification follows RFC 9162 §2.1.3.2 and §2.1.4.2 step by step; the edge
cases (sizes equal, an empty first tree) as transparency-dev/merkle's
``proof`` package treats them, whose test vectors ``tests/unit/test_merkle.py`` runs.
No database, no I/O.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

from benchledger.errors import CheckFailed

HASH_SIZE = 32
EMPTY_ROOT = hashlib.sha256(b"").digest()

Node = tuple[int, int]  # (level, index)


class ProofError(CheckFailed, ValueError):
    """A proof that does not verify, with the reason (a check that says no: exit status 1)."""


def leaf_hash(data: bytes) -> bytes:
    """RFC 9162 §2.1.1: the hash of a leaf whose data is ``data``."""
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """RFC 9162 §2.1.1: the hash of an interior node over its two children."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def event_leaf_hash(chain_hash_hex: str) -> bytes:
    """The leaf hash of an event: its chain hash (64 hex digits) taken as its 32 bytes."""
    return leaf_hash(bytes.fromhex(chain_hash_hex))


def fold(hashes: Sequence[bytes]) -> bytes:
    """The hash of a subtree given the roots of its complete nodes, largest (leftmost) first (:func:`subtree_nodes`).

    RFC 9162 splits a subtree of ``n`` leaves at the largest power of two
    below ``n``: its left part is the first complete node, the right part the rest.
    """
    if not hashes:
        return EMPTY_ROOT
    result = hashes[-1]
    for left in reversed(hashes[:-1]):
        result = node_hash(left, result)
    return result


def subtree_nodes(start: int, end: int) -> list[Node]:
    """The complete nodes that make up leaves ``[start, end)``, largest (leftmost) first.

    For a subtree RFC 9162 hashes, ``start`` is a multiple of a power of two
    at least ``end - start``, so these are the set bits of ``end - start``.
    """
    nodes: list[Node] = []
    while start < end:
        level = (end - start).bit_length() - 1
        if start:
            level = min(level, (start & -start).bit_length() - 1)
        nodes.append((level, start >> level))
        start += 1 << level
    return nodes


def frontier(size: int) -> list[Node]:
    """The complete nodes whose roots make up a tree of ``size`` leaves (its root is their :func:`fold`)."""
    return subtree_nodes(0, size)


def _split(n: int) -> int:
    """The largest power of two smaller than ``n`` (``n`` > 1): where RFC 9162 splits ``n`` leaves."""
    return 1 << ((n - 1).bit_length() - 1)


def inclusion_proof_ranges(index: int, size: int) -> list[tuple[int, int]]:
    """RFC 9162 §2.1.3.1 PATH(index, D[0:size]): the leaf ranges whose subtree hashes make the inclusion proof, in proof order."""
    if not 0 <= index < size:
        raise ValueError(f"leaf index {index} is not in a tree of {size} leaves")
    ranges: list[tuple[int, int]] = []
    start, end = 0, size
    while end - start > 1:
        k = _split(end - start)
        if index < start + k:
            ranges.append((start + k, end))
            end = start + k
        else:
            ranges.append((start, start + k))
            start += k
    return ranges[::-1]


def consistency_proof_ranges(old_size: int, new_size: int) -> list[tuple[int, int]]:
    """RFC 9162 §2.1.4.1 PROOF(old_size, D[0:new_size]): the leaf ranges whose subtree hashes make the consistency proof."""
    if not 0 < old_size <= new_size:
        raise ValueError(f"no consistency proof from a tree of {old_size} leaves to one of {new_size}")
    ranges: list[tuple[int, int]] = []
    start, end, m, whole = 0, new_size, old_size, True
    while m != end - start:
        k = _split(end - start)
        if m <= k:
            ranges.append((start + k, end))
            end = start + k
        else:
            ranges.append((start, start + k))
            start, m, whole = start + k, m - k, False
    if not whole:
        ranges.append((start, end))
    return ranges[::-1]


def nodes_of_ranges(ranges: Iterable[tuple[int, int]]) -> set[Node]:
    """Every complete node the subtrees of ``ranges`` are made of (what a log reads to answer a proof)."""
    return {node for start, end in ranges for node in subtree_nodes(start, end)}


def proof_from_nodes(ranges: Sequence[tuple[int, int]], hashes: dict[Node, bytes]) -> list[bytes]:
    """The proof whose subtrees are ``ranges``, from the hashes of their complete nodes."""
    return [fold([hashes[node] for node in subtree_nodes(start, end)]) for start, end in ranges]


def appended_nodes(size: int, frontier_hashes: Sequence[bytes], leaves: Sequence[bytes]) -> list[tuple[int, int, bytes]]:
    """The nodes ``(level, index, hash)`` that ``leaves`` (leaf hashes) complete when appended to a tree of ``size`` leaves.

    ``frontier_hashes`` are the hashes of ``frontier(size)``, in that order.
    Each leaf is a node of level 0; each pair of equal-level nodes it completes, their parent (level by level).
    """
    return [(level, first + i, digest) for level, first, made in grown(size, frontier_hashes, leaves)[0] for i, digest in enumerate(made)]


def grown(size: int, frontier_hashes: Sequence[bytes], leaves: Sequence[bytes]) -> tuple[list[tuple[int, int, list[bytes]]], list[bytes]]:
    """The nodes that ``leaves`` complete when appended to a tree of ``size`` leaves whose frontier is ``frontier_hashes``,
    a level at a time: ``(level, index of the first, their hashes in index order)``, lowest level first; and the hashes
    of the frontier of the tree grown (``frontier(size + len(leaves))``, in that order).

    A level's new nodes follow its frontier node (the left child still waiting for its sibling: there is one when bit
    ``level`` of ``size`` is set), so with it they pair up from an even index; an odd one left over is the grown
    tree's frontier node of that level. Above the first level with no new node the frontier is the one before.
    """
    positions = frontier(size)
    if len(frontier_hashes) != len(positions):
        raise ValueError(f"a tree of {size} leaves has {len(positions)} frontier nodes, {len(frontier_hashes)} given")
    waiting = {level: digest for (level, _), digest in zip(positions, frontier_hashes, strict=True)}
    levels: list[tuple[int, int, list[bytes]]] = []
    front: dict[int, bytes] = {}
    level, first, made = 0, size, list(leaves)
    while made:
        levels.append((level, first, made))
        row = [waiting.pop(level), *made] if level in waiting else made
        if len(row) % 2:
            front[level] = row[-1]
        made = [node_hash(row[i], row[i + 1]) for i in range(0, len(row) - 1, 2)]
        level, first = level + 1, first >> 1
    front.update(waiting)  # (the levels no new node reached)
    return levels, [front[level] for level in sorted(front, reverse=True)]


def root_from_inclusion_proof(index: int, size: int, leaf: bytes, proof: Sequence[bytes]) -> bytes:
    """RFC 9162 §2.1.3.2: the root that ``proof`` leads to from leaf ``index`` of a tree of ``size`` leaves."""
    if not 0 <= index < size:
        raise ProofError(f"leaf index {index} is not in a tree of {size} leaves")
    if len(leaf) != HASH_SIZE:
        raise ProofError(f"a leaf hash has {HASH_SIZE} bytes, not {len(leaf)}")
    fn, sn, result = index, size - 1, leaf
    for sibling in proof:
        if sn == 0:
            raise ProofError("the proof is longer than the path from the leaf to the root")
        if fn & 1 or fn == sn:
            result = node_hash(sibling, result)
            while not fn & 1 and fn:
                fn, sn = fn >> 1, sn >> 1
        else:
            result = node_hash(result, sibling)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise ProofError("the proof is shorter than the path from the leaf to the root")
    return result


def verify_inclusion(index: int, size: int, leaf: bytes, proof: Sequence[bytes], root: bytes) -> None:
    """Raise :class:`ProofError` unless ``proof`` shows leaf ``index`` (hash ``leaf``) in the tree of ``size`` leaves whose root is ``root``."""
    if root_from_inclusion_proof(index, size, leaf, proof) != root:
        raise ProofError(f"the inclusion proof of leaf {index} does not lead to the root of the tree of {size} leaves")


def verify_consistency(old_size: int, new_size: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]) -> None:
    """Raise :class:`ProofError` unless ``proof`` shows the tree of ``old_size`` leaves (``old_root``) is a prefix of the one of ``new_size`` (``new_root``)."""
    if new_size < old_size:
        raise ProofError(f"the new tree ({new_size} leaves) is smaller than the old one ({old_size})")
    if old_size == 0:
        raise ProofError("a consistency proof from an empty tree proves nothing")
    if old_size == new_size:
        if proof:
            raise ProofError("trees of the same size need an empty consistency proof")
        if old_root != new_root:
            raise ProofError(f"two different roots for the same tree size {old_size}")
        return
    if not proof:
        raise ProofError("the consistency proof is empty")
    path = list(proof)
    if old_size & (old_size - 1) == 0:  # a power of two: the old root is a node of the new tree
        path.insert(0, old_root)
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    old_result = new_result = path[0]
    for node in path[1:]:
        if sn == 0:
            raise ProofError("the consistency proof is longer than it should be")
        if fn & 1 or fn == sn:
            old_result, new_result = node_hash(node, old_result), node_hash(node, new_result)
            while not fn & 1 and fn:
                fn, sn = fn >> 1, sn >> 1
        else:
            new_result = node_hash(new_result, node)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise ProofError("the consistency proof is shorter than it should be")
    if old_result != old_root:
        raise ProofError(f"the consistency proof does not lead to the old root (tree of {old_size} leaves)")
    if new_result != new_root:
        raise ProofError(f"the consistency proof does not lead to the new root (tree of {new_size} leaves)")
