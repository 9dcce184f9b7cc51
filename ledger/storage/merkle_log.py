"""The ledger's Merkle log in the database: its nodes kept by the append, read for proofs, checked and rebuilt.

The log is the RFC 9162 tree of the events in position order
(:mod:`benchledger.projections.merkle`; docs/proofs.md): the table
``merkle_nodes`` holds every complete node, about two rows an event. An
append adds its events' leaves and the nodes they complete in its own
transaction (:func:`extend`), reading only the frontier of the tree it grows
(at most one node a level). Any proof for any tree size the ledger has had is
then a handful of stored nodes (:func:`root`, :func:`proof`).

The nodes are not immutable (the events are): ``audit`` recomputes every node
from the events and names each one that differs (:class:`LogAudit`),
``replay`` rewrites them (:func:`rebuild`), and a node an append would build
on that is missing makes it refuse (:class:`~benchledger.errors.InconsistentLog`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection, Delete, Select, and_, bindparam, delete, func, insert, or_, select

from benchledger.errors import InconsistentLog
from benchledger.ledger.storage.event_records import StoredEvent
from benchledger.ledger.storage.schema import checkpoints, events, merkle_nodes
from benchledger.ledger.storage.transaction import Transaction
from benchledger.ledger.storage.verification import Problem
from benchledger.projections import merkle

# How many events a catch-up, an audit or a rebuild hashes at a time (bounded memory whatever the ledger holds).
PAGE = 5000
# An audit lists this many differing nodes, then counts the rest.
LISTED_PROBLEMS = 20

_nodes = merkle_nodes.c
# Nodes are looked up by (level, node_index) pairs: an OR of equalities, which both backends answer with
# one primary-key lookup a pair (a row-value IN made SQLite scan the whole table: 0.4 s a proof at 10^6 events).
_LOOKUP_PAGE = 100


def _pairs(count: int) -> ColumnElement[bool]:
    """``(level, node_index)`` equal to one of ``count`` pairs bound as ``level_i``, ``index_i``."""
    return or_(*(and_(_nodes.level == bindparam(f"level_{i}"), _nodes.node_index == bindparam(f"index_{i}")) for i in range(count)))


# Statements built once per number of pairs: cache-keying a new OR of a few dozen terms cost an append about 1 ms.
@functools.lru_cache(maxsize=_LOOKUP_PAGE)
def _select_pairs(count: int) -> Select[tuple[int, int, str]]:
    return select(_nodes.level, _nodes.node_index, _nodes.hash).where(_pairs(count))


@functools.lru_cache(maxsize=_LOOKUP_PAGE)
def _delete_pairs(count: int) -> Delete:
    return delete(merkle_nodes).where(_pairs(count))


def _pair_pages(nodes: Sequence[merkle.Node]) -> Iterator[tuple[int, dict[str, int]]]:
    for start in range(0, len(nodes), _LOOKUP_PAGE):
        page = nodes[start : start + _LOOKUP_PAGE]
        yield len(page), {key: value for i, (level, index) in enumerate(page) for key, value in ((f"level_{i}", level), (f"index_{i}", index))}
_INSERT = insert(merkle_nodes)
_LEAF_COUNT = select(func.coalesce(func.max(_nodes.node_index) + 1, 0)).where(_nodes.level == 0)
_LEVEL_RANGE = (
    select(_nodes.node_index, _nodes.hash)
    .where(_nodes.level == bindparam("level"), _nodes.node_index.between(bindparam("low"), bindparam("high")))
    .order_by(_nodes.node_index)
)
_LEVEL_HASHES = _LEVEL_RANGE.with_only_columns(_nodes.hash)
_POSITIONED_CHAIN_HASHES = (
    select(events.c.position, events.c.chain_hash).where(events.c.position > bindparam("after")).order_by(events.c.position).limit(bindparam("limit"))
)
_CHAIN_HASHES = _POSITIONED_CHAIN_HASHES.with_only_columns(events.c.chain_hash)


def _read_nodes(connection: Connection, nodes: Iterable[merkle.Node]) -> dict[merkle.Node, bytes]:
    """The stored hashes of ``nodes`` (those stored: a missing node is left out)."""
    found: dict[merkle.Node, bytes] = {}
    for count, values in _pair_pages(sorted(set(nodes))):
        for row in connection.execute(_select_pairs(count), values):
            found[(row.level, row.node_index)] = bytes.fromhex(row.hash)
    return found


def _leaf_count(connection: Connection) -> int:
    """How many leaves the log holds (the highest stored leaf's index + 1)."""
    return int(connection.execute(_LEAF_COUNT).scalar_one())


def _frontier_hashes(connection: Connection, size: int) -> list[bytes] | None:
    """The hashes of the frontier of the tree of ``size`` leaves, or None when one is not stored."""
    wanted = merkle.frontier(size)
    found = _read_nodes(connection, wanted)
    return [found[node] for node in wanted] if len(found) == len(wanted) else None


def _grow(connection: Connection, size: int, front: list[bytes], leaves: Sequence[bytes]) -> list[bytes]:
    """Store ``leaves`` appended to the tree of ``size`` leaves whose frontier is ``front``; returns the new frontier."""
    levels, grown = merkle.grown(size, front, leaves)
    connection.execute(
        _INSERT, [{"level": level, "node_index": first + i, "hash": digest.hex()} for level, first, made in levels for i, digest in enumerate(made)]
    )
    return grown


def extend(tx: Transaction, first_position: int, chain_hashes: Sequence[str]) -> None:
    """Add the leaves of the events at ``first_position``, ``first_position + 1``, … (their chain hashes) to the log.

    Called by the append (:func:`benchledger.ledger.storage.append.append_locked`) in its transaction, under the
    append lock, after it inserted the events. A log that lags its events (a ledger upgraded with ``db upgrade
    --sql``, whose revision 0006 could not hash the events in SQL) catches up here first, from the events.
    """
    connection = tx.connection
    size = first_position - 1
    wanted = merkle.frontier(size)
    found = _read_nodes(connection, [*wanted, (0, size)])
    if (0, size) in found:
        raise InconsistentLog(f"already holds a leaf for position {first_position}, which the append was about to write")
    front = [found[node] for node in wanted] if len(found) == len(wanted) else _caught_up(connection, size)
    _grow(connection, size, front, [merkle.event_leaf_hash(h) for h in chain_hashes])


def _caught_up(connection: Connection, size: int) -> list[bytes]:
    """Store the leaves of the events the log lacks up to ``size``; returns the frontier of the tree of ``size`` leaves."""
    held = _leaf_count(connection)
    front = _frontier_hashes(connection, held) if held <= size else None
    if front is None:
        raise InconsistentLog(f"lacks a node of the tree of its {held} leaves, or holds more leaves than the {size} events before this append")
    while held < size:
        page = connection.execute(_CHAIN_HASHES, {"after": held, "limit": min(PAGE, size - held)}).scalars().all()
        front = _grow(connection, held, front, [merkle.event_leaf_hash(h) for h in page])
        held += len(page)
    return front


def _differences(connection: Connection, levels: Sequence[tuple[int, int, list[bytes]]]) -> Iterator[tuple[int, int, str, str | None]]:
    """Each node of ``levels`` (:func:`merkle.grown`'s, recomputed from the events) whose stored hash differs: ``(level, index,
    wanted, stored or None)``.

    A level is one read of its stored hashes in index order: as many as it made (the primary key: then one for each
    index), each the one made, is a healthy level; otherwise each node is looked at.
    """
    for level, first, made in levels:
        digests = [digest.hex() for digest in made]
        bounds = {"level": level, "low": first, "high": first + len(made) - 1}
        if connection.execute(_LEVEL_HASHES, bounds).scalars().all() == digests:
            continue
        stored = dict(connection.execute(_LEVEL_RANGE, bounds).tuples().all())
        for index, digest in enumerate(digests, first):
            if stored.get(index) != digest:
                yield level, index, digest, stored.get(index)


def _extra_nodes(connection: Connection, size: int) -> list[tuple[int, int]]:
    """The stored nodes that no tree of ``size`` leaves has (a node past the last complete one of its level, or a level above the root)."""
    extra: list[tuple[int, int]] = []
    top = size.bit_length()
    for level in range(top):
        query = select(_nodes.level, _nodes.node_index).where(_nodes.level == level, _nodes.node_index >= size >> level)
        extra += [(row.level, row.node_index) for row in connection.execute(query)]
    query = select(_nodes.level, _nodes.node_index).where((_nodes.level >= top) | (_nodes.level < 0) | (_nodes.node_index < 0))
    extra += [(row.level, row.node_index) for row in connection.execute(query)]
    return extra


def _node_name(level: int, index: int) -> str:
    if level < 0 or index < 0:
        return f"node (level {level}, index {index})"
    if level == 0:
        return f"leaf {index} (position {index + 1})"
    return f"node (level {level}, index {index}) over positions {(index << level) + 1}-{(index + 1) << level}"


class LogAudit:
    """``audit``'s check of the log, fed the events as the chain check reads them (:meth:`watching`), in one snapshot.

    Every node is recomputed from the events, page by page, and compared with
    the stored one; a node stored that no tree of the ledger's size has is
    named too. ``problems`` lists the first :data:`LISTED_PROBLEMS` and counts the rest.
    """

    def __init__(self, tx: Transaction) -> None:
        self._connection = tx.connection
        self.problems: list[Problem] = []
        self._unlisted = 0
        self.size = 0

    def watching(self, ordered_events: Iterable[StoredEvent]) -> Iterator[StoredEvent]:
        """``ordered_events`` passed through; once they are all read, the log has been checked against them."""
        front: list[bytes] = []
        pending: list[bytes] = []
        for event in ordered_events:
            pending.append(merkle.event_leaf_hash(event.chain_hash))
            if len(pending) == PAGE:
                front = self._check(front, pending)
                pending = []
            yield event
        self._check(front, pending)
        for level, index in _extra_nodes(self._connection, self.size):
            self._problem(level, index, f"is stored, but the log of {self.size} events has no such node")
        if self._unlisted:
            self.problems.append(Problem("log_node", None, None, f"{self._unlisted} more node(s) of the Merkle log differ from the events"))

    def _check(self, front: list[bytes], leaves: list[bytes]) -> list[bytes]:
        levels, grown = merkle.grown(self.size, front, leaves)
        for level, index, _, stored in _differences(self._connection, levels):
            self._problem(level, index, "is missing" if stored is None else "is not the hash of the events it covers")
        self.size += len(leaves)
        return grown

    def _problem(self, level: int, index: int, what: str) -> None:
        if len(self.problems) < LISTED_PROBLEMS:
            # (the position of the node's last leaf: the append of that event wrote it; none for a node no tree has)
            completed_at = (index + 1) << level if 0 <= index and 0 <= level and (index + 1) << level <= self.size else None
            self.problems.append(Problem("log_node", None, completed_at, f"Merkle log {_node_name(level, index)} {what}"))
        else:
            self._unlisted += 1


class GoalInclusion:
    """``audit --goal``'s check of the log: each of the goal's events (fed as the chain check reads them,
    :meth:`watching`) has its leaf stored, and every stored node above it, up to the tree's frontier (which the root
    folds), is the hash of its two stored children: what makes its inclusion proof from the stored nodes lead to the
    stored root, as ``prove`` gives it (and what each of those nodes is in the other proofs that read it).

    A node is checked once (a goal's events share their upper nodes), its children read with it, a page of events'
    at a time: a few lookups and hashes an event. Only the goal's paths are checked: a node no path of the goal
    passes through is for a whole-ledger ``audit``, which recomputes every node from the events.
    """

    def __init__(self, tx: Transaction) -> None:
        self._connection = tx.connection
        self.size = tx.last_position()
        self.problems: list[Problem] = []
        self._unlisted = 0
        self._verdicts: dict[merkle.Node, str | None] = {}  # a node above a leaf: what is wrong with it, None if it holds

    def watching(self, ordered_events: Iterable[StoredEvent]) -> Iterator[StoredEvent]:
        """``ordered_events`` passed through; once they are all read, each was checked to be in the log."""
        pending: list[StoredEvent] = []
        for event in ordered_events:
            pending.append(event)
            if len(pending) == _LOOKUP_PAGE:
                self._check(pending)
                pending = []
            yield event
        self._check(pending)
        if self._unlisted:
            self.problems.append(Problem("log_node", None, None, f"{self._unlisted} more of the goal's events are not proved in the Merkle log"))

    def _above(self, index: int) -> list[merkle.Node]:
        """The complete nodes above leaf ``index`` in the tree of ``size`` leaves, lowest first (the last is a frontier node)."""
        return [(level, index >> level) for level in range(1, self.size.bit_length()) if ((index >> level) + 1) << level <= self.size]

    def _check(self, events: Sequence[StoredEvent]) -> None:
        above = {event.position: self._above(event.position - 1) for event in events}
        unjudged = {node for nodes in above.values() for node in nodes if node not in self._verdicts}
        wanted = unjudged | {(level - 1, 2 * index + side) for level, index in unjudged for side in (0, 1)} | {(0, p - 1) for p in above}
        found = _read_nodes(self._connection, wanted)
        for node in unjudged:
            self._verdicts[node] = self._verdict(node, found)
        for event in events:
            index = event.position - 1
            stored = found.get((0, index))
            if stored is None:
                self._problem(event, f"Merkle log lacks {_node_name(0, index)}, event {event.event_id}'s")
            elif stored != merkle.event_leaf_hash(event.chain_hash):
                self._problem(event, f"Merkle log {_node_name(0, index)} is not the hash of event {event.event_id}")
            elif (wrong := next((v for v in map(self._verdicts.__getitem__, above[event.position]) if v is not None), None)) is not None:
                self._problem(event, f"{wrong}, above event {event.event_id}")
        if events:  # (the events come in position order: a node that ends before the last one is above none to come)
            end = events[-1].position
            self._verdicts = {node: verdict for node, verdict in self._verdicts.items() if (node[1] + 1) << node[0] > end}

    @staticmethod
    def _verdict(node: merkle.Node, found: dict[merkle.Node, bytes]) -> str | None:
        level, index = node
        children = [(level - 1, 2 * index), (level - 1, 2 * index + 1)]
        lacking = [n for n in (node, *children) if n not in found]
        if lacking:
            return f"Merkle log lacks {_node_name(*lacking[0])}" + (f", a child of {_node_name(level, index)}" if lacking[0] != node else "")
        if found[node] != merkle.node_hash(found[children[0]], found[children[1]]):
            return f"Merkle log {_node_name(level, index)} is not the hash of its two children"
        return None

    def _problem(self, event: StoredEvent, detail: str) -> None:
        if len(self.problems) < LISTED_PROBLEMS:
            self.problems.append(Problem("log_node", event.goal_id, event.position, detail))
        else:
            self._unlisted += 1


def rebuild(tx: Transaction) -> int:
    """Make the log what the events say (in a write transaction, under the append lock); returns how many nodes
    it inserted, corrected or deleted (none in a healthy ledger)."""
    connection = tx.connection
    repaired = 0
    size, front, after = 0, [], 0
    # (paged by position, not by count: a ledger with a position gap, which audit names, is rebuilt all the same)
    while page := connection.execute(_POSITIONED_CHAIN_HASHES, {"after": after, "limit": PAGE}).all():
        after = page[-1][0]
        levels, grown = merkle.grown(size, front, [merkle.event_leaf_hash(chain_hash) for _, chain_hash in page])
        wrong = list(_differences(connection, levels))
        if wrong:
            stale = [(level, index) for level, index, _, stored in wrong if stored is not None]
            _delete(connection, stale)
            connection.execute(_INSERT, [{"level": level, "node_index": index, "hash": digest} for level, index, digest, _ in wrong])
            repaired += len(wrong)
        size, front = size + len(page), grown
    extra = _extra_nodes(connection, size)
    _delete(connection, extra)
    return repaired + len(extra)


def _delete(connection: Connection, nodes: Sequence[merkle.Node]) -> None:
    for count, values in _pair_pages(nodes):
        connection.execute(_delete_pairs(count), values)


def root(tx: Transaction, size: int) -> bytes:
    """The root hash of the tree of the first ``size`` events, from stored nodes."""
    hashes = _frontier_hashes(tx.connection, size)
    if hashes is None:
        raise InconsistentLog(f"lacks a node of the tree of {size} leaves")
    return merkle.fold(hashes)


def proof(tx: Transaction, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
    """The proof whose subtrees are ``ranges`` (:func:`benchledger.projections.merkle.inclusion_proof_ranges`, …), from stored nodes."""
    wanted = merkle.nodes_of_ranges(ranges)
    found = _read_nodes(tx.connection, wanted)
    if len(found) != len(wanted):
        missing = sorted(wanted - found.keys())[0]
        raise InconsistentLog(f"lacks its {_node_name(*missing)}")
    return merkle.proof_from_nodes(ranges, found)



def store_checkpoint(tx: Transaction, tree_size: int, root_hash: str, note: str, recorded_at: str) -> int:
    """Keep a signed checkpoint (in a write transaction, under the append lock); returns its number."""
    number = int(tx.connection.execute(select(func.coalesce(func.max(checkpoints.c.number), 0))).scalar_one()) + 1
    tx.connection.execute(
        insert(checkpoints), {"number": number, "tree_size": tree_size, "root_hash": root_hash, "note": note, "recorded_at": recorded_at}
    )
    return number


def stored_checkpoints(tx: Transaction, number: int | None = None) -> list[dict[str, Any]]:
    """The signed checkpoints kept (or checkpoint ``number``), oldest first."""
    query = select(checkpoints).order_by(checkpoints.c.number)
    if number is not None:
        query = query.where(checkpoints.c.number == number)
    return [dict(row._mapping) for row in tx.connection.execute(query)]
