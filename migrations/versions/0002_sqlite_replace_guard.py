"""SQLite: refuse INSERT OR REPLACE over a stored event.

SQLite's REPLACE conflict resolution deletes the conflicting row without
firing DELETE triggers, so ``INSERT OR REPLACE INTO events`` could silently
rewrite an event despite the immutability triggers of 0001. This revision adds
a BEFORE INSERT trigger that refuses any insert colliding with a stored event.
Nothing changes on PostgreSQL (``ON CONFLICT DO UPDATE`` fires the UPDATE trigger).

Frozen: the trigger's DDL is written out here as it was at this revision.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

REPLACE_GUARD_DDL = (
    "CREATE TRIGGER events_no_replace BEFORE INSERT ON events "
    "WHEN EXISTS (SELECT 1 FROM events WHERE position = NEW.position) "
    "OR EXISTS (SELECT 1 FROM events WHERE event_id = NEW.event_id) "
    "OR EXISTS (SELECT 1 FROM events WHERE goal_id = NEW.goal_id AND stream_version = NEW.stream_version) "
    "BEGIN SELECT RAISE(ABORT, 'events are immutable: the ledger is append-only'); END"
)


def upgrade() -> None:
    if op.get_context().dialect.name == "sqlite":
        op.execute(REPLACE_GUARD_DDL)


def downgrade() -> None:
    if op.get_context().dialect.name == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS events_no_replace")
