"""Migrations never lose or change an event, on every backend.

A ledger is created at the first schema revision ("0001") and filled with
events written by plain SQL against the tables *as reflected at that revision*
(not through the current store code, which may expect a newer schema), with
hashes computed from docs/hash-chain.md by this test itself. It is then
upgraded to head the way users do (the embedded SQLite ledger on open, a
server ledger with ``benchledger db upgrade``). Every stored field of every
event is compared before and after, the chains and the ledger digest are
recomputed, the projections are rebuilt, and a new batch continues the chains.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections import Counter

import pytest
from click.testing import CliRunner
from sqlalchemy import MetaData, Table, insert, select, text

from benchledger.cli.main import cli
from benchledger.ledger.read import views
from benchledger.ledger.service.ingest import ingest
from benchledger.ledger.service.maintenance import audit, replay, status
from benchledger.ledger.storage.engine import create_ledger_engine
from benchledger.ledger.storage.migrate import HEAD_REVISION, current_revision, upgrade
from benchledger.ledger.storage.store import Store
from benchledger.projections.artifacts import Artifact
from benchledger.projections.artifacts.kinds import normalize
from tests.conformance.cases import CORPUS

FIRST_REVISION = "0001"
FIXTURE = CORPUS / "cases" / "review-claim" / "claim-review-01"
NAMESPACE = uuid.UUID("6f2c1d52-4a8e-5b0f-9d4e-2b7f1c3a9e10")  # docs/hash-chain.md §2
GENESIS = "0" * 64


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def canonical(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def chain(e: dict) -> str:
    fields = [
        "benchledger-chain-v1", e["prev_hash"], e["goal_id"], str(e["stream_version"]), e["kind"],
        e["schema_version"] or "", e["payload_sha256"], e["event_id"], e["recorded_at"], e["source"],
        e["source_sha256"] or "",
    ]
    return sha("\n".join(fields))


def digest(rows: list[dict]) -> str:
    running = GENESIS
    for e in rows:
        running = sha(running + "\n" + e["chain_hash"])
    return f"{rows[-1]['position']}:{running}"


def _artifacts(tag: str) -> list[tuple[str, dict, str]]:
    """(kind, normalized payload, source sha256) of one comparison batch."""
    out = []
    comparison = json.loads((FIXTURE / "comparison.json").read_text())
    comparison["comparison_id"] = f"cmp-{tag}"
    out.append(("comparison", comparison))
    for i, name in enumerate(("run-1.json", "run-2.json")):
        run = json.loads((FIXTURE / name).read_text())
        run["job_name"] = f"job-{tag}-{i}-ü…"  # non-ASCII survives byte for byte
        out.append(("run", run))
    return [(kind, normalize(kind, doc), sha(json.dumps(doc))) for kind, doc in out]


def build_events() -> tuple[list[dict], dict[str, dict]]:
    """Events as a revision-0001 ledger holds them: members, then their ingest_batch manifest."""
    rows: list[dict] = []
    heads: dict[str, dict] = {}
    second = 0

    def add(goal: str, kind: str, payload, schema_version: str | None, source_sha256: str | None, source: str) -> dict:
        nonlocal second
        head = heads.get(goal, {"last_version": 0, "last_chain_hash": GENESIS})
        body = canonical(payload)
        digest_ = sha(body)
        second += 1
        row = {
            "position": len(rows) + 1,
            "event_id": str(uuid.uuid5(NAMESPACE, f"{goal}\n{kind}\n{digest_}")),
            "goal_id": goal,
            "stream_version": head["last_version"] + 1,
            "kind": kind,
            "schema_version": schema_version,
            "payload": body,
            "payload_sha256": digest_,
            "source_sha256": source_sha256,
            "prev_hash": head["last_chain_hash"],
            "recorded_at": f"2026-01-02T03:04:{second:02d}.000{second:03d}Z",
            "source": source,
        }
        row["chain_hash"] = chain(row)
        rows.append(row)
        heads[goal] = {
            "goal_id": goal,
            "last_version": row["stream_version"],
            "last_chain_hash": row["chain_hash"],
            "last_position": row["position"],
            "last_recorded_at": row["recorded_at"],
        }
        return row

    for tag, goal in (("one", "goal-a"), ("two", "goal-b"), ("three", "goal-a")):
        members = []
        for kind, payload, source_sha in _artifacts(tag):
            row = add(goal, kind, payload, payload.get("schema_version"), source_sha, "cli ingest")
            members.append({"event_id": row["event_id"], "kind": kind})
        add(goal, "ingest_batch", {"members": members, "schema_version": "benchledger_ingest_batch_v0"},
            "benchledger_ingest_batch_v0", None, "cli ingest")
    # a lifecycle input without schema_version or provenance hash
    preflight = {"ready": True}
    row = add("goal-b", "preflight", preflight, None, None, "cli ingest")
    add("goal-b", "ingest_batch", {"members": [{"event_id": row["event_id"], "kind": "preflight"}],
                                   "schema_version": "benchledger_ingest_batch_v0"}, "benchledger_ingest_batch_v0", None, "cli ingest")
    return rows, heads


def _reflect(engine):
    reflected = MetaData()
    reflected.reflect(engine, only=["events", "stream_heads"])
    return reflected.tables["events"], reflected.tables["stream_heads"]


def _snapshot(engine, columns: list[str]) -> list[dict]:
    table, _ = _reflect(engine)
    with engine.connect() as connection:
        return [
            {c: r._mapping[c] for c in columns}
            for r in connection.execute(select(table).order_by(table.c.position))
        ]


def upgraded_as_users_do(ledger_url: str) -> Store:
    """The ledger at ``ledger_url`` upgraded to head the way users do, opened."""
    if ledger_url.startswith("sqlite"):
        ledger = Store.open(ledger_url)  # the embedded ledger migrates itself on open
    else:
        result = CliRunner().invoke(cli, ["--database-url", ledger_url, "db", "upgrade"])
        assert result.exit_code == 0, result.output
        ledger = Store.open(ledger_url)
    with ledger.engine.connect() as connection:
        assert current_revision(connection) == HEAD_REVISION
    return ledger


def test_a_revision_0001_ledger_upgrades_without_changing_an_event(ledger_url):
    engine = create_ledger_engine(ledger_url)
    upgrade(engine, FIRST_REVISION)
    with engine.connect() as connection:
        assert current_revision(connection) == FIRST_REVISION

    rows, heads = build_events()
    events_table, heads_table = _reflect(engine)
    first_columns = [c.name for c in events_table.c]
    assert set(first_columns) == set(rows[0]), "the test writes every revision-0001 column"
    with engine.begin() as connection:
        connection.execute(insert(events_table), rows)
        connection.execute(insert(heads_table), list(heads.values()))
    before = _snapshot(engine, first_columns)
    assert before == rows
    saved_digest = digest(rows)
    engine.dispose()

    ledger = upgraded_as_users_do(ledger_url)
    try:
        after = _snapshot(ledger.engine, first_columns)
        assert len(after) == len(before)
        for old, new in zip(before, after):
            for column in first_columns:
                assert new[column] == old[column] and type(new[column]) is type(old[column]), (old["position"], column)
            assert chain(new) == new["chain_hash"]

        # the ledger's own audit agrees, byte for byte
        report = audit(ledger, expect_digest=saved_digest)
        assert report["digest"] == saved_digest
        assert {p["kind"] for p in report["problems"]} <= {"projection_missing"}  # 0001 data came without projections
        assert status(ledger)["lagging_goals"]
        assert replay(ledger)["faulted"] == []
        assert audit(ledger, expect_digest=saved_digest)["ok"]

        # new appends continue the old chains
        comparison = json.loads((FIXTURE / "comparison.json").read_text())
        comparison["comparison_id"] = "cmp-after-upgrade"
        outcome = ingest(ledger, "goal-a", [Artifact("comparison", normalize("comparison", comparison))], source="cli ingest")
        (member,) = ledger.events_by_id([m.event_id for m in outcome.members]).values()
        assert member.stream_version == heads["goal-a"]["last_version"] + 1
        assert member.prev_hash == heads["goal-a"]["last_chain_hash"]
        assert member.position == len(rows) + 1
        final = audit(ledger, expect_digest=saved_digest)
        assert final["ok"], final["problems"]
        assert _snapshot(ledger.engine, first_columns)[: len(rows)] == before
    finally:
        ledger.close()


@pytest.mark.parametrize("ledger_url", ["sqlite"], indirect=True)
def test_the_upgraded_sqlite_ledger_has_the_head_guards(ledger_url):
    """An embedded ledger created at 0001 gains what later revisions add (0002: the REPLACE guard)."""
    engine = create_ledger_engine(ledger_url)
    upgrade(engine, FIRST_REVISION)
    engine.dispose()
    ledger = Store.open(ledger_url)
    fresh = Store.in_memory()
    try:
        def triggers(opened):
            with opened.engine.connect() as connection:
                return sorted(r[0] for r in connection.exec_driver_sql("SELECT sql FROM sqlite_master WHERE type = 'trigger'"))

        assert triggers(ledger) == triggers(fresh)  # migrated and create_all ledgers are guarded alike
    finally:
        ledger.close()
        fresh.close()


def test_upgrading_to_0003_deletes_the_stored_history_rows_and_nothing_else(ledger_url):
    """0003: the lifecycle history is folded on read, so the per-event rows 0002 stored are dropped."""
    engine = create_ledger_engine(ledger_url)
    upgrade(engine, "0002")
    rows, heads = build_events()
    events_table, heads_table = _reflect(engine)
    projection_table = Table("projection_rows", MetaData(), autoload_with=engine)
    row = {"goal_id": "goal-a", "projection_version": 1, "status": "ok", "payload": "{}", "error": None, "position": 1}
    stored = [
        {**row, "projection": "lifecycle-history", "key": "000000000001"},
        {**row, "projection": "lifecycle-state", "key": "current"},
    ]
    with engine.begin() as connection:
        connection.execute(insert(events_table), rows)
        connection.execute(insert(heads_table), list(heads.values()))
        connection.execute(insert(projection_table), stored)
    upgrade(engine)
    with engine.connect() as connection:
        assert current_revision(connection) == HEAD_REVISION
        kept = [dict(r._mapping) for r in connection.execute(select(projection_table))]
    assert kept == [stored[1]]
    assert _snapshot(engine, [c.name for c in events_table.c]) == rows
    engine.dispose()


def test_upgrading_a_0004_ledger_counts_its_projection_rows(ledger_url):
    """0005: the counts per projection that `show` prints are stored; the upgrade counts the rows a ledger holds."""
    engine = create_ledger_engine(ledger_url)
    upgrade(engine)
    engine.dispose()
    ledger = Store.open(ledger_url)
    for tag, goal in (("one", "goal-a"), ("two", "goal-b"), ("three", "goal-a")):
        ingest(ledger, goal, [Artifact(kind, payload) for kind, payload, _ in _artifacts(tag)], source="cli ingest")
    rows = ledger.projection_rows()
    # The ledger as revision 0004 left it: 0005 only adds the counts (tests/schema holds both schemas).
    with ledger.engine.begin() as connection:
        connection.execute(text("DROP TABLE projection_counts"))
        connection.execute(text("DROP TABLE merkle_nodes"))  # (0006)
        connection.execute(text("DROP TABLE checkpoints"))
        connection.execute(text("DROP INDEX ix_events_goal_archive"))  # (0007)
        connection.execute(text("UPDATE alembic_version SET version_num = '0004'"))
    ledger.close()

    ledger = upgraded_as_users_do(ledger_url)
    try:
        assert ledger.projection_rows() == rows
        for goal in ("goal-a", "goal-b"):
            counted = Counter(r["projection"] for r in rows if r["goal_id"] == goal)
            assert ledger.projection_counts(goal) == counted and counted["review-claim"] == (2 if goal == "goal-a" else 1)
            assert views.show(ledger, goal)["counts"] == dict(sorted(counted.items()))
        assert audit(ledger)["ok"]
    finally:
        ledger.close()
