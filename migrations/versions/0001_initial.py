"""Initial ledger: append-only events, stream heads, projection rows.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

from benchledger.ledger.schema import drop_immutability_ddl, immutability_ddl

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

POSITION = sa.BigInteger().with_variant(sa.Integer, "sqlite")


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
    for statement in immutability_ddl(op.get_bind().dialect.name):
        op.execute(statement)


def downgrade() -> None:
    for statement in drop_immutability_ddl(op.get_bind().dialect.name):
        op.execute(statement)
    op.drop_table("projection_rows")
    op.drop_table("stream_heads")
    op.drop_table("events")
