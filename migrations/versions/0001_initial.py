"""Initial ledger: append-only events, stream heads, projection rows.

Frozen: the DDL is written out here as it was at this revision, never imported
from ``ledger/storage/schema.py``, so a later schema edit cannot change what 0001 does.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

POSITION = sa.BigInteger().with_variant(sa.Integer, "sqlite")

IMMUTABLE_MESSAGE = "events are immutable: the ledger is append-only"
IMMUTABILITY_DDL = {
    "sqlite": [
        f"CREATE TRIGGER events_no_update BEFORE UPDATE ON events BEGIN SELECT RAISE(ABORT, '{IMMUTABLE_MESSAGE}'); END",
        f"CREATE TRIGGER events_no_delete BEFORE DELETE ON events BEGIN SELECT RAISE(ABORT, '{IMMUTABLE_MESSAGE}'); END",
    ],
    "postgresql": [
        "CREATE FUNCTION benchledger_events_immutable() RETURNS trigger LANGUAGE plpgsql AS $$ "
        f"BEGIN RAISE EXCEPTION '{IMMUTABLE_MESSAGE}' USING ERRCODE = 'restrict_violation'; END $$",
        "CREATE TRIGGER events_no_update_delete BEFORE UPDATE OR DELETE ON events "
        "FOR EACH ROW EXECUTE FUNCTION benchledger_events_immutable()",
        "CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events "
        "FOR EACH STATEMENT EXECUTE FUNCTION benchledger_events_immutable()",
    ],
}
DROP_IMMUTABILITY_DDL = {
    "sqlite": ["DROP TRIGGER IF EXISTS events_no_update", "DROP TRIGGER IF EXISTS events_no_delete"],
    "postgresql": [
        "DROP TRIGGER IF EXISTS events_no_update_delete ON events",
        "DROP TRIGGER IF EXISTS events_no_truncate ON events",
        "DROP FUNCTION IF EXISTS benchledger_events_immutable()",
    ],
}


def _dialect() -> str:
    # The migration context, not a connection: offline mode (`db upgrade --sql`) has none.
    dialect = op.get_context().dialect.name
    if dialect not in IMMUTABILITY_DDL:
        raise ValueError(f"unsupported database dialect: {dialect}")
    return dialect


def upgrade() -> None:
    op.create_table(
        "events",
        sa.Column("position", POSITION, primary_key=True, autoincrement=False),
        sa.Column("event_id", sa.String(36), nullable=False, unique=True),
        sa.Column("goal_id", sa.String(121), nullable=False),
        sa.Column("stream_version", sa.Integer, nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("schema_version", sa.String(128), nullable=True),
        sa.Column("payload", sa.Text, nullable=False),
        sa.Column("payload_sha256", sa.String(64), nullable=False),
        sa.Column("source_sha256", sa.String(64), nullable=True),
        sa.Column("prev_hash", sa.String(64), nullable=False),
        sa.Column("chain_hash", sa.String(64), nullable=False),
        sa.Column("recorded_at", sa.String(32), nullable=False),
        sa.Column("source", sa.String(64), nullable=False),
        sa.UniqueConstraint("goal_id", "stream_version", name="uq_events_goal_version"),
    )
    op.create_index("ix_events_goal_kind", "events", ["goal_id", "kind"])
    op.create_table(
        "stream_heads",
        sa.Column("goal_id", sa.String(121), primary_key=True),
        sa.Column("last_version", sa.Integer, nullable=False),
        sa.Column("last_chain_hash", sa.String(64), nullable=False),
        sa.Column("last_position", POSITION, nullable=False),
        sa.Column("last_recorded_at", sa.String(32), nullable=False),
    )
    op.create_table(
        "projection_rows",
        sa.Column("projection", sa.String(64), nullable=False),
        sa.Column("goal_id", sa.String(121), nullable=False),
        sa.Column("key", sa.String(128), nullable=False),
        sa.Column("projection_version", sa.Integer, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("payload", sa.Text, nullable=True),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("position", POSITION, nullable=False),
        sa.PrimaryKeyConstraint("projection", "goal_id", "key", name="pk_projection_rows"),
    )
    op.create_index("ix_projection_rows_goal", "projection_rows", ["goal_id"])
    for statement in IMMUTABILITY_DDL[_dialect()]:
        op.execute(statement)


def downgrade() -> None:
    for statement in DROP_IMMUTABILITY_DDL[_dialect()]:
        op.execute(statement)
    op.drop_table("projection_rows")
    op.drop_table("stream_heads")
    op.drop_table("events")
