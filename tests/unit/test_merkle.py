"""RFC 9162 hashing and proofs (projections/merkle.py) against another implementation's published vectors.

tests/data/merkle/transparency-dev-merkle-vectors.json holds, from
github.com/transparency-dev/merkle (commit named in its ``source``): the node
and root hashes of the eight-leaf tree of ``testonly/constants.go``, the
inclusion and consistency proofs ``cmd/proofgen/main.go`` generates from
them, and every probe of ``testdata/inclusion`` and ``testdata/consistency``
(the happy paths, and each tampered variant its ``proof`` package must refuse).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from benchledger.projections import merkle

VECTORS = json.loads((Path(__file__).parents[1] / "data" / "merkle" / "transparency-dev-merkle-vectors.json").read_text())
LEAVES = [merkle.leaf_hash(bytes.fromhex(data)) for data in VECTORS["leaf_inputs"]]


def _stored(leaves: list[bytes]) -> dict[merkle.Node, bytes]:
    """Every complete node of a tree of ``leaves``, built as the log builds it: one leaf at a time."""
    nodes: dict[merkle.Node, bytes] = {}
    for size, leaf in enumerate(leaves):
        front = [nodes[node] for node in merkle.frontier(size)]
        nodes.update(((level, index), digest) for level, index, digest in merkle.appended_nodes(size, front, [leaf]))
    return nodes


def _root(nodes: dict[merkle.Node, bytes], size: int) -> bytes:
    return merkle.fold([nodes[node] for node in merkle.frontier(size)])


def test_node_hashes_are_the_reference_trees():
    nodes = _stored(LEAVES)
    for level, row in enumerate(VECTORS["node_hashes"]):
        for index, expected in enumerate(row):
            assert nodes[(level, index)].hex() == expected, (level, index)
    assert len(nodes) == sum(len(row) for row in VECTORS["node_hashes"])


@pytest.mark.parametrize("size", range(9))
def test_the_root_of_every_size_is_the_reference_root(size):
    assert _root(_stored(LEAVES[:size]), size).hex() == VECTORS["roots_by_size"][size]


@pytest.mark.parametrize("vector", VECTORS["inclusion_proofs"], ids=lambda v: f"{v['index']}-of-{v['size']}")
def test_inclusion_proofs_are_the_reference_proofs(vector):
    nodes = _stored(LEAVES)
    ranges = merkle.inclusion_proof_ranges(vector["index"], vector["size"])
    proof = merkle.proof_from_nodes(ranges, nodes)
    assert [p.hex() for p in proof] == vector["proof"]
    merkle.verify_inclusion(vector["index"], vector["size"], LEAVES[vector["index"]], proof, _root(nodes, vector["size"]))


@pytest.mark.parametrize("vector", VECTORS["consistency_proofs"], ids=lambda v: f"{v['size1']}-to-{v['size2']}")
def test_consistency_proofs_are_the_reference_proofs(vector):
    nodes = _stored(LEAVES)
    old, new = vector["size1"], vector["size2"]
    proof = merkle.proof_from_nodes(merkle.consistency_proof_ranges(old, new), nodes)
    assert [p.hex() for p in proof] == vector["proof"]
    merkle.verify_consistency(old, new, _root(nodes, old), _root(nodes, new), proof)


def _probe_id(probe):
    return probe["file"].removeprefix("testdata/")


@pytest.mark.parametrize("probe", VECTORS["probes"]["inclusion"], ids=_probe_id)
def test_inclusion_probes(probe):
    proof = [bytes.fromhex(p) for p in probe["proof"]]
    call = lambda: merkle.verify_inclusion(  # noqa: E731
        probe["leafIdx"], probe["treeSize"], bytes.fromhex(probe["leafHash"] or ""), proof, bytes.fromhex(probe["root"] or "")
    )
    if probe["wantErr"]:
        with pytest.raises(merkle.ProofError):
            call()
    else:
        call()


@pytest.mark.parametrize("probe", VECTORS["probes"]["consistency"], ids=_probe_id)
def test_consistency_probes(probe):
    proof = [bytes.fromhex(p) for p in probe["proof"]]
    call = lambda: merkle.verify_consistency(  # noqa: E731
        probe["size1"], probe["size2"], bytes.fromhex(probe["root1"] or ""), bytes.fromhex(probe["root2"] or ""), proof
    )
    if probe["wantErr"]:
        with pytest.raises(merkle.ProofError):
            call()
    else:
        call()


def test_every_proof_of_a_larger_tree_verifies_and_a_flipped_bit_is_refused():
    """Beyond the vectors: every inclusion and consistency proof of trees up to 70 leaves, built from stored nodes."""
    rng = random.Random(9162)
    leaves = [merkle.leaf_hash(rng.randbytes(8)) for _ in range(70)]
    nodes = _stored(leaves)
    roots = [_root(nodes, size) for size in range(71)]
    for size in range(1, 71):
        for index in range(size):
            proof = merkle.proof_from_nodes(merkle.inclusion_proof_ranges(index, size), nodes)
            assert len(proof) <= (size - 1).bit_length()
            merkle.verify_inclusion(index, size, leaves[index], proof, roots[size])
            if proof:
                bad = list(proof)
                bad[rng.randrange(len(bad))] = rng.randbytes(32)
                with pytest.raises(merkle.ProofError):
                    merkle.verify_inclusion(index, size, leaves[index], bad, roots[size])
        for old in range(1, size + 1):
            proof = merkle.proof_from_nodes(merkle.consistency_proof_ranges(old, size), nodes)
            merkle.verify_consistency(old, size, roots[old], roots[size], proof)
            if old < size:
                with pytest.raises(merkle.ProofError):
                    merkle.verify_consistency(old, size, roots[old], roots[size], proof[:-1])


def test_appended_nodes_refuse_a_frontier_of_the_wrong_size():
    with pytest.raises(ValueError, match="3 leaves has 2 frontier nodes"):
        merkle.appended_nodes(3, [], [LEAVES[0]])
