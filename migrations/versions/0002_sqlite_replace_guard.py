"""SQLite: refuse INSERT OR REPLACE over a stored event.

SQLite's REPLACE conflict resolution deletes the conflicting row without
firing DELETE triggers, so ``INSERT OR REPLACE INTO events`` could silently
rewrite an event despite the immutability triggers of 0001. This revision adds
a BEFORE INSERT trigger that refuses any insert colliding with a stored event.
Nothing changes on PostgreSQL (``ON CONFLICT DO UPDATE`` fires the UPDATE trigger).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from alembic import op

from benchledger.ledger.schema import replace_guard_ddl

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for statement in replace_guard_ddl(op.get_bind().dialect.name):
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS events_no_replace")
