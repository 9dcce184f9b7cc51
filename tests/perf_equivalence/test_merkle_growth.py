"""The Merkle log grown a page at a time, level by level (``merkle.grown``: replay's rebuild, audit, an append and its
catch-up), is the RFC 9162 tree of all the leaves: every complete node it makes, and the frontier it leaves, are those
the definition gives (the hash of a node is the tree hash of the leaves under it), whatever the tree's size before and
however many leaves are appended. And a rebuild of a log whose nodes were changed, removed or added puts back exactly
the nodes the events give (a healthy level is judged by one read of its hashes: it must still see every change).
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import delete, insert, select, update

from benchledger.ledger.storage import merkle_log
from benchledger.ledger.storage.schema import merkle_nodes
from benchledger.ledger.storage.store import Store
from benchledger.projections import merkle
from tests.helpers import invoke


def tree_hash(leaves: list[bytes]) -> bytes:
    """RFC 9162 §2.1.1 MTH, written from the definition (the split at the largest power of two below n)."""
    if len(leaves) == 1:
        return leaves[0]
    k = 1 << ((len(leaves) - 1).bit_length() - 1)
    return merkle.node_hash(tree_hash(leaves[:k]), tree_hash(leaves[k:]))


def complete_nodes(leaves: list[bytes]) -> dict[merkle.Node, bytes]:
    return {
        (level, index): tree_hash(leaves[index << level : (index + 1) << level])
        for level in range(len(leaves).bit_length())
        for index in range(len(leaves) >> level)
    }


@settings(max_examples=300, deadline=None)
@given(size=st.integers(0, 70), appended=st.integers(0, 70))
def test_a_page_appended_makes_the_nodes_and_frontier_of_the_definition(size, appended):
    leaves = [hashlib.sha256(str(i).encode()).digest() for i in range(size + appended)]
    before, after = complete_nodes(leaves[:size]), complete_nodes(leaves)
    levels, front = merkle.grown(size, [before[node] for node in merkle.frontier(size)], leaves[size:])
    made = {(level, first + i): digest for level, first, hashes in levels for i, digest in enumerate(hashes)}
    assert made == {node: digest for node, digest in after.items() if node not in before}
    assert front == [after[node] for node in merkle.frontier(size + appended)]
    assert [level for level, _, _ in levels] == list(range(len(levels)))
    assert merkle.appended_nodes(size, [before[node] for node in merkle.frontier(size)], leaves[size:]) == [
        (level, first + i, digest) for level, first, hashes in levels for i, digest in enumerate(hashes)
    ]


DEMO = sorted(str(p) for p in (Path(__file__).parents[2] / "examples" / "demo").glob("*.json"))


@pytest.fixture(scope="module")
def ledger_file(tmp_path_factory) -> Path:
    """A ledger of six demo goals (a few dozen events: a tree of several levels)."""
    path = tmp_path_factory.mktemp("log") / "ledger.sqlite"
    for goal in range(6):
        result = invoke(f"sqlite:///{path}", "ingest", "--goal", f"goal-{goal}", *DEMO)
        assert result.exit_code == 0, result.output
    return path


def _nodes(store: Store) -> dict[tuple[int, int], str]:
    with store.transaction() as tx:
        return {(row.level, row.node_index): row.hash for row in tx.connection.execute(select(merkle_nodes))}


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_a_rebuild_puts_back_every_node_changed_removed_or_added(ledger_file, tmp_path_factory, data):
    copy = tmp_path_factory.mktemp("tampered") / "ledger.sqlite"
    shutil.copy(ledger_file, copy)
    store = Store.open(f"sqlite:///{copy}")
    healthy = _nodes(store)
    nodes = sorted(healthy)
    changed = data.draw(st.lists(st.sampled_from(nodes), unique=True, max_size=4), label="changed")
    removed = data.draw(st.lists(st.sampled_from([n for n in nodes if n not in changed]), unique=True, max_size=4), label="removed")
    added = data.draw(st.lists(st.tuples(st.integers(-1, 7), st.integers(-1, 60)).filter(lambda n: n not in healthy), unique=True, max_size=3))
    page = data.draw(st.sampled_from([1, 2, 3, 7, merkle_log.PAGE]), label="page")
    with store.transaction(write=True) as tx:
        c = merkle_nodes.c
        for level, index in changed:
            # (another value, one digit short, the same digits in upper case: each differs from the hash made)
            wrong = data.draw(st.sampled_from(["0" * 64, healthy[(level, index)][:-1], healthy[(level, index)].upper()]), label="wrong")
            wrong = wrong if wrong != healthy[(level, index)] else "f" * 64
            tx.connection.execute(update(merkle_nodes).where(c.level == level, c.node_index == index).values(hash=wrong))
        for level, index in removed:
            tx.connection.execute(delete(merkle_nodes).where(c.level == level, c.node_index == index))
        for level, index in added:
            tx.connection.execute(insert(merkle_nodes).values(level=level, node_index=index, hash="a" * 64))
    original_page, merkle_log.PAGE = merkle_log.PAGE, page
    try:
        with store.transaction(write=True) as tx:
            repaired = merkle_log.rebuild(tx)
    finally:
        merkle_log.PAGE = original_page
    assert _nodes(store) == healthy
    assert repaired == len(changed) + len(removed) + len(added)
    store.close()
