"""The ledger's tables: one SQLAlchemy Core definition for SQLite and PostgreSQL.

``events`` is append-only (database triggers refuse UPDATE, DELETE and, on
PostgreSQL, TRUNCATE); ``stream_heads`` lets an append find a goal's last
version and chain hash without scanning the stream; ``projection_rows`` holds
the materialized reviews, each row stamped with the reducer version and the
last event position it reflects; ``projection_counts`` how many rows each of a
goal's projections holds, kept by the writes that change the rows (revision 0005);
``merkle_nodes`` the Merkle log of the events and ``checkpoints`` its signed tree heads (revision 0006, docs/proofs.md).
"""

from __future__ import annotations

from sqlalchemy import (
    DDL,
    BigInteger,
    Column,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    event,
)

from benchledger.ledger.storage.event_records import EVENT_COLUMNS
from benchledger.projections import goal_archive

metadata = MetaData()

GOAL_ID_LENGTH = 121

events = Table(
    "events",
    metadata,
    # Global order. Assigned by the appender under a ledger-wide write lock, so it
    # is contiguous and follows commit order on every backend.
    Column("position", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=False),
    Column("event_id", String(36), nullable=False, unique=True),
    Column("goal_id", String(GOAL_ID_LENGTH), nullable=False),
    Column("stream_version", Integer, nullable=False),
    Column("kind", String(64), nullable=False),
    Column("schema_version", String(128), nullable=True),
    Column("payload", Text, nullable=False),
    Column("payload_sha256", String(64), nullable=False),
    Column("source_sha256", String(64), nullable=True),
    Column("prev_hash", String(64), nullable=False),
    Column("chain_hash", String(64), nullable=False),
    Column("recorded_at", String(32), nullable=False),
    Column("source", String(64), nullable=False),
    UniqueConstraint("goal_id", "stream_version", name="uq_events_goal_version"),
)
# The pure modules name these columns without importing this one (a claim bundle's `verify` loads no SQLAlchemy).
assert tuple(column.name for column in events.c) == EVENT_COLUMNS
# Reading one goal in order is served by the unique (goal_id, stream_version)
# index; the global order by the primary key. Kind filters within a goal:
Index("ix_events_goal_kind", events.c.goal_id, events.c.kind)
# The archive and unarchive events alone (revision 0007): whether a goal is archived is read from them
# once per statement (read/views.archived_column), not probed goal by goal. A partial index, written as DDL
# both backends read (below, after the table): SQLAlchemy's Index(postgresql_where=…, sqlite_where=…) loads
# both dialects into every process that imports this module, an ingest included.
# Indexes made by DDL of their own, which the models do not declare (the migrations' autogenerate comparison skips them).
DDL_INDEXES = frozenset({"ix_events_goal_archive"})
ARCHIVE_INDEX_DDL = (
    "CREATE INDEX ix_events_goal_archive ON events (goal_id, stream_version) "
    f"WHERE kind IN ({', '.join(repr(kind) for kind in goal_archive.KINDS)})"
)

stream_heads = Table(
    "stream_heads",
    metadata,
    Column("goal_id", String(GOAL_ID_LENGTH), primary_key=True),
    Column("last_version", Integer, nullable=False),
    Column("last_chain_hash", String(64), nullable=False),
    Column("last_position", BigInteger().with_variant(Integer, "sqlite"), nullable=False),
    Column("last_recorded_at", String(32), nullable=False),
)

projection_rows = Table(
    "projection_rows",
    metadata,
    Column("projection", String(64), nullable=False),
    Column("goal_id", String(GOAL_ID_LENGTH), nullable=False),
    Column("key", String(128), nullable=False),
    Column("projection_version", Integer, nullable=False),
    # "ok" or "faulted"; a faulted row carries the reducer's error instead of a payload.
    Column("status", String(16), nullable=False),
    Column("payload", Text, nullable=True),
    Column("error", Text, nullable=True),
    Column("position", BigInteger().with_variant(Integer, "sqlite"), nullable=False),
    PrimaryKeyConstraint("projection", "goal_id", "key", name="pk_projection_rows"),
)
Index("ix_projection_rows_goal", projection_rows.c.goal_id)
# The latest row of each of a goal's projections, counts per projection, a page in position order (revision 0004).
Index(
    "ix_projection_rows_goal_position",
    projection_rows.c.goal_id, projection_rows.c.projection, projection_rows.c.position, projection_rows.c.key,
)

# How many rows each (goal, projection) holds: ``show`` prints the counts of a goal with one index range
# instead of counting its rows (about 160k index entries for a 10^5-event goal) on every read.
# Kept in the transaction that inserts or deletes the rows (ledger.storage.transaction.Transaction); zero is no row.
projection_counts = Table(
    "projection_counts",
    metadata,
    Column("goal_id", String(GOAL_ID_LENGTH), nullable=False),
    Column("projection", String(64), nullable=False),
    Column("row_count", Integer, nullable=False),
    PrimaryKeyConstraint("goal_id", "projection", name="pk_projection_counts"),
)

# The ledger's Merkle log (RFC 9162, docs/proofs.md; revision 0006): the hash of every complete subtree of the tree
# of the events in position order, node (level, node_index) covering leaves [node_index * 2**level, (node_index + 1) * 2**level),
# leaf i being the event at position i + 1. Written by the transaction that appends the events (ledger.storage.merkle_log);
# not immutable: `audit` recomputes every node from the events, `replay` rewrites those that differ.
merkle_nodes = Table(
    "merkle_nodes",
    metadata,
    Column("level", Integer, nullable=False),
    Column("node_index", BigInteger().with_variant(Integer, "sqlite"), nullable=False),
    Column("hash", String(64), nullable=False),
    PrimaryKeyConstraint("level", "node_index", name="pk_merkle_nodes"),
)

# The checkpoints `benchledger checkpoint --key` signed (revision 0006): each a C2SP signed note of the log's tree head,
# numbered in the order they were signed. Only public signatures: the key stays in its file.
checkpoints = Table(
    "checkpoints",
    metadata,
    Column("number", Integer, primary_key=True, autoincrement=False),
    Column("tree_size", BigInteger().with_variant(Integer, "sqlite"), nullable=False),
    Column("root_hash", String(64), nullable=False),
    Column("note", Text, nullable=False),
    Column("recorded_at", String(32), nullable=False),
)


IMMUTABLE_MESSAGE = "events are immutable: the ledger is append-only"


def immutability_ddl(dialect: str) -> list[str]:
    """Statements that make the database itself refuse to change or remove events.

    Used by ``metadata.create_all`` (in-memory ledgers). The migrations carry
    their own frozen copy of this DDL as of their revision; the schema-dump
    test (tests/contract/test_schema_reference.py) keeps both paths installing the same triggers.
    """
    if dialect == "sqlite":
        return [
            f"CREATE TRIGGER events_no_{verb.lower()} BEFORE {verb} ON events "
            f"BEGIN SELECT RAISE(ABORT, '{IMMUTABLE_MESSAGE}'); END"
            for verb in ("UPDATE", "DELETE")
        ]
    if dialect == "postgresql":
        return [
            "CREATE FUNCTION benchledger_events_immutable() RETURNS trigger LANGUAGE plpgsql AS $$ "
            f"BEGIN RAISE EXCEPTION '{IMMUTABLE_MESSAGE}' USING ERRCODE = 'restrict_violation'; END $$",
            "CREATE TRIGGER events_no_update_delete BEFORE UPDATE OR DELETE ON events "
            "FOR EACH ROW EXECUTE FUNCTION benchledger_events_immutable()",
            "CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events "
            "FOR EACH STATEMENT EXECUTE FUNCTION benchledger_events_immutable()",
        ]
    raise ValueError(f"unsupported database dialect: {dialect}")


def replace_guard_ddl(dialect: str) -> list[str]:
    """SQLite's ``INSERT OR REPLACE`` / ``REPLACE INTO`` deletes a conflicting row without firing
    DELETE triggers: refuse any insert that collides with a stored event (revision 0002).
    PostgreSQL's ``ON CONFLICT DO UPDATE`` fires the UPDATE trigger, so it needs nothing more.
    """
    if dialect == "sqlite":
        return [
            "CREATE TRIGGER events_no_replace BEFORE INSERT ON events "
            "WHEN EXISTS (SELECT 1 FROM events WHERE position = NEW.position) "
            "OR EXISTS (SELECT 1 FROM events WHERE event_id = NEW.event_id) "
            "OR EXISTS (SELECT 1 FROM events WHERE goal_id = NEW.goal_id AND stream_version = NEW.stream_version) "
            f"BEGIN SELECT RAISE(ABORT, '{IMMUTABLE_MESSAGE}'); END"
        ]
    return []


def drop_immutability_ddl(dialect: str) -> list[str]:
    """The inverse of :func:`immutability_ddl` and :func:`replace_guard_ddl` (migration downgrades and tamper tests)."""
    if dialect == "sqlite":
        return [
            "DROP TRIGGER IF EXISTS events_no_update",
            "DROP TRIGGER IF EXISTS events_no_delete",
            "DROP TRIGGER IF EXISTS events_no_replace",
        ]
    return [
        "DROP TRIGGER IF EXISTS events_no_update_delete ON events",
        "DROP TRIGGER IF EXISTS events_no_truncate ON events",
        "DROP FUNCTION IF EXISTS benchledger_events_immutable()",
    ]


@event.listens_for(events, "after_create")
def _after_events_created(target, connection, **_kw) -> None:
    """The archive index, and the triggers that make the database refuse to change or remove events."""
    for statement in [ARCHIVE_INDEX_DDL, *immutability_ddl(connection.dialect.name), *replace_guard_ddl(connection.dialect.name)]:
        connection.execute(DDL(statement))
