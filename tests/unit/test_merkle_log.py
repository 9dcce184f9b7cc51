"""The ledger's Merkle log in the database (ledger/storage/merkle_log.py), on every backend.

Every append stores its events' leaves and the nodes they complete, in its own
transaction; the stored nodes are exactly the RFC 9162 tree of the events in
position order; an upgrade from revision 0005 builds the log of the events a
ledger holds, and a log that lags (``db upgrade --sql``) catches up at the next
append; ``audit`` names a tampered, missing or invented node and ``replay``
rewrites them; an append refuses to build on a log that claims a leaf it is
about to write; an append that fails leaves neither events nor nodes.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from sqlalchemy import select, text

from benchledger.ledger.service.maintenance import audit, replay
from benchledger.ledger.storage import merkle_log
from benchledger.ledger.storage.schema import merkle_nodes
from benchledger.ledger.storage.store import Store
from benchledger.projections import merkle
from tests.helpers import edit_in_sql, invoke, row_counts

DEMO = sorted(str(p) for p in (Path(__file__).parents[2] / "examples" / "demo").glob("*.json"))


def _ingest(url: str, *goals: str) -> None:
    for goal in goals:
        result = invoke(url, "ingest", "--goal", goal, *DEMO)
        assert result.exit_code == 0, result.output


def _stored_nodes(url: str) -> dict[tuple[int, int], str]:
    ledger = Store.open(url)
    try:
        with ledger.engine.connect() as connection:
            return {(r.level, r.node_index): r.hash for r in connection.execute(select(merkle_nodes))}
    finally:
        ledger.close()


def _expected_nodes(url: str) -> dict[tuple[int, int], str]:
    """The tree of the events as they are stored, built from scratch by the pure functions."""
    ledger = Store.open(url)
    try:
        leaves = [merkle.event_leaf_hash(event.chain_hash) for event in ledger.read_all()]
    finally:
        ledger.close()
    return {(level, index): digest.hex() for level, index, digest in merkle.appended_nodes(0, [], leaves)}


def _audit_problems(url: str) -> list[dict]:
    ledger = Store.open(url)
    try:
        return audit(ledger)["problems"]
    finally:
        ledger.close()


def test_every_append_keeps_the_tree_of_the_events(migrated_url):
    for count, goal in enumerate(("g1", "g2", "g3"), start=1):
        _ingest(migrated_url, goal)
        stored = _stored_nodes(migrated_url)
        assert stored == _expected_nodes(migrated_url)
        events = 7 * count
        assert len(stored) == 2 * events - bin(events).count("1")
    assert _audit_problems(migrated_url) == []


def test_upgrading_a_0005_ledger_builds_its_log(ledger_url):
    from benchledger.ledger.storage.migrate import HEAD_REVISION

    assert invoke(ledger_url, "db", "upgrade").exit_code == 0
    _ingest(ledger_url, "g1", "g2")
    built = _stored_nodes(ledger_url)
    # The ledger as revision 0005 left it: no log.
    edit_in_sql(ledger_url, "DROP TABLE merkle_nodes")
    edit_in_sql(ledger_url, "DROP TABLE checkpoints")
    edit_in_sql(ledger_url, "DROP INDEX ix_events_goal_archive")  # (0007)
    edit_in_sql(ledger_url, "UPDATE alembic_version SET version_num = '0005'")
    result = invoke(ledger_url, "db", "upgrade")
    assert result.exit_code == 0, result.output
    assert HEAD_REVISION >= "0006"  # (the upgrade ran 0006, and any revision after it)
    assert _stored_nodes(ledger_url) == built == _expected_nodes(ledger_url)
    assert _audit_problems(ledger_url) == []


def test_a_log_that_lags_its_events_catches_up_at_the_next_append(migrated_url):
    """As after `db upgrade --sql`, whose revision 0006 creates the table but cannot hash the events in SQL."""
    _ingest(migrated_url, "g1", "g2")
    edit_in_sql(migrated_url, "DELETE FROM merkle_nodes")
    assert [p["kind"] for p in _audit_problems(migrated_url)] == ["log_node"] * 20 + ["log_node"]  # 20 named, the rest counted
    _ingest(migrated_url, "g3")
    assert _stored_nodes(migrated_url) == _expected_nodes(migrated_url)
    assert _audit_problems(migrated_url) == []


@pytest.mark.parametrize(
    ("tamper", "named"),
    [
        ("UPDATE merkle_nodes SET hash = '{zeros}' WHERE level = 1 AND node_index = 2", "node (level 1, index 2) over positions 5-6 is not the hash of the events it covers"),
        ("UPDATE merkle_nodes SET hash = '{zeros}' WHERE level = 0 AND node_index = 9", "leaf 9 (position 10) is not the hash of the events it covers"),
        ("DELETE FROM merkle_nodes WHERE level = 2 AND node_index = 0", "node (level 2, index 0) over positions 1-4 is missing"),
        ("INSERT INTO merkle_nodes (level, node_index, hash) VALUES (0, 14, '{zeros}')", "leaf 14 (position 15) is stored, but the log of 14 events has no such node"),
        ("INSERT INTO merkle_nodes (level, node_index, hash) VALUES (4, 0, '{zeros}')", "node (level 4, index 0) over positions 1-16 is stored, but the log of 14 events has no such node"),
    ],
)
def test_audit_names_a_tampered_node_and_replay_rewrites_it(migrated_url, tamper, named):
    _ingest(migrated_url, "g1", "g2")
    healthy = _stored_nodes(migrated_url)
    edit_in_sql(migrated_url, tamper.format(zeros="0" * 64))
    problems = _audit_problems(migrated_url)
    assert [p["detail"] for p in problems] == [f"Merkle log {named}"]
    assert invoke(migrated_url, "audit").exit_code == 1
    replayed = invoke(migrated_url, "replay", "--format", "json")
    assert replayed.exit_code == 0 and '"log_nodes_repaired": 1' in replayed.output
    assert _stored_nodes(migrated_url) == healthy
    assert invoke(migrated_url, "audit").exit_code == 0


def test_the_audit_of_a_goal_proves_each_of_its_events_in_the_log(migrated_url):
    """``audit --goal`` does not recompute the log (one tree of every goal's events) but checks each of the goal's
    events: its stored leaf, and each stored node above it (the hash of its two children), as its proof needs."""
    _ingest(migrated_url, "g1", "g2")  # (g1 at positions 1-7, g2 at 8-14)
    ledger = Store.open(migrated_url)
    try:
        ids = {event.position: event.event_id for event in ledger.read_all()}
    finally:
        ledger.close()

    def goal_problems(goal: str, jobs: int = 1) -> list[tuple]:
        ledger = Store.open(migrated_url)
        try:
            return [(p["kind"], p["goal_id"], p["position"], p["detail"]) for p in audit(ledger, goal_id=goal, jobs=jobs)["problems"]]
        finally:
            ledger.close()

    assert goal_problems("g1") == goal_problems("g2") == []
    edit_in_sql(migrated_url, f"UPDATE merkle_nodes SET hash = '{'0' * 64}' WHERE level = 0 AND node_index = 9")
    assert goal_problems("g2") == [
        ("log_node", "g2", 9, f"Merkle log node (level 1, index 4) over positions 9-10 is not the hash of its two children, above event {ids[9]}"),
        ("log_node", "g2", 10, f"Merkle log leaf 9 (position 10) is not the hash of event {ids[10]}"),
    ]
    # The proof of an event of g1 reads leaf 9's ancestor (level 2, index 2) whole, which still holds: only the whole
    # ledger's audit names the leaf (test_audit_names_a_tampered_node_and_replay_rewrites_it).
    assert goal_problems("g1") == []
    assert goal_problems("g2", jobs=2) == goal_problems("g2")  # (the check runs beside the workers' folds)
    assert invoke(migrated_url, "audit", "--goal", "g2").exit_code == 1
    edit_in_sql(migrated_url, "DELETE FROM merkle_nodes WHERE level = 2 AND node_index = 0")
    lacking = "Merkle log lacks node (level 2, index 0) over positions 1-4"
    assert goal_problems("g1") == [("log_node", "g1", p, f"{lacking}, above event {ids[p]}") for p in (1, 2, 3, 4)] + [
        ("log_node", "g1", p, f"{lacking}, a child of node (level 3, index 0) over positions 1-8, above event {ids[p]}") for p in (5, 6, 7)
    ]
    assert invoke(migrated_url, "replay", "--goal", "g1").exit_code == 0 and goal_problems("g1") != []  # (a goal's replay leaves the log)
    assert invoke(migrated_url, "replay").exit_code == 0
    assert goal_problems("g1") == goal_problems("g2") == []


def test_an_append_refuses_a_log_that_already_holds_its_leaf(migrated_url):
    _ingest(migrated_url, "g1")
    edit_in_sql(migrated_url, f"INSERT INTO merkle_nodes (level, node_index, hash) VALUES (0, 7, '{'0' * 64}')")
    before = row_counts(migrated_url)
    result = invoke(migrated_url, "ingest", "--goal", "g2", *DEMO)
    assert result.exit_code == 2
    assert "Merkle log already holds a leaf for position 8" in result.output and "benchledger replay" in result.output
    assert row_counts(migrated_url) == before
    assert invoke(migrated_url, "replay").exit_code == 0
    _ingest(migrated_url, "g2")
    assert _audit_problems(migrated_url) == []


def test_an_append_that_fails_while_growing_the_log_writes_nothing(migrated_url, monkeypatch):
    _ingest(migrated_url, "g1")
    before = row_counts(migrated_url)

    def fail_midway(connection, size, front, leaves):
        connection.execute(text("INSERT INTO merkle_nodes (level, node_index, hash) VALUES (0, 7, 'x')"))
        raise RuntimeError("killed while growing the log")

    monkeypatch.setattr(merkle_log, "_grow", fail_midway)
    with pytest.raises(RuntimeError, match="killed while growing the log"):
        invoke(migrated_url, "ingest", "--goal", "g2", *DEMO)
    assert row_counts(migrated_url) == before
    assert _audit_problems(migrated_url) == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork and SIGKILL")
def test_a_process_killed_while_the_log_grows_leaves_nothing_torn(migrated_url):
    """SIGKILL at the insert of the log's nodes, after the events' insert, in the same transaction: neither stays."""
    _ingest(migrated_url, "g1")
    before = row_counts(migrated_url)
    pid = os.fork()
    if pid == 0:  # the child: an ingest that dies as it writes the log
        try:
            from sqlalchemy import Engine, event

            def die(connection, cursor, statement, *args):
                if statement.lstrip().upper().startswith("INSERT INTO MERKLE_NODES"):
                    os.kill(os.getpid(), signal.SIGKILL)

            event.listen(Engine, "before_cursor_execute", die)
            invoke(migrated_url, "ingest", "--goal", "g2", *DEMO)
        finally:
            os._exit(3)  # (not reached: the insert of the log's nodes kills it)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    assert row_counts(migrated_url) == before
    assert _audit_problems(migrated_url) == []
    _ingest(migrated_url, "g2")
    assert _stored_nodes(migrated_url) == _expected_nodes(migrated_url)
    assert _audit_problems(migrated_url) == []


def test_a_replay_of_one_goal_leaves_the_log_alone(migrated_url):
    _ingest(migrated_url, "g1")
    edit_in_sql(migrated_url, "DELETE FROM merkle_nodes WHERE level = 0 AND node_index = 0")
    ledger = Store.open(migrated_url)
    try:
        assert replay(ledger, goal_id="g1")["log_nodes_repaired"] == 0
        assert replay(ledger)["log_nodes_repaired"] == 1
    finally:
        ledger.close()
