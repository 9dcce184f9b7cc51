"""Drop the stored lifecycle-history rows: the history is folded from the events on read.

Up to 0002 every event had a ``lifecycle-history`` projection row (the
lifecycle after that event). Those rows were nearly half of all projection
rows, and keeping them forced a lifecycle-state reduction per event on every
ingest and replay. ``benchledger history`` now folds the goal's events when
asked (its cost follows the goal, never the ledger), so the rows are derived
data nothing reads: this revision deletes them. Events are untouched.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

HISTORY_PROJECTION = "lifecycle-history"


def upgrade() -> None:
    op.execute(f"DELETE FROM projection_rows WHERE projection = '{HISTORY_PROJECTION}'")


def downgrade() -> None:
    # The rows are derived: `benchledger replay` under the older code rebuilds them.
    pass
