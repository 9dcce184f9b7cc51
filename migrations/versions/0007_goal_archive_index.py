"""Index the archive events alone: whether a goal is archived is read from them, not probed goal by goal.

A listing of goals leaves the archived ones out, and the report's index counts
the goals it pages through. Probed goal by goal (the latest archive or
unarchive event of each, through the (goal_id, kind) index), counting a page
of 100 goals read one index range per goal of the ledger: 0.2 s at 23,000
goals (a 10^6-event ledger, benchmarks/team_ledger.py). From this revision a
partial index holds the archive and unarchive events only (a few, however long
the ledger), so a statement finds the archived goals once, from it. Events and
projection rows are untouched.

Frozen: the kinds are written out here (projections/goal_archive.py), never
imported.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-05
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

ARCHIVE_EVENTS = "kind IN ('goal_archive', 'goal_unarchive')"


def upgrade() -> None:
    op.create_index(
        "ix_events_goal_archive", "events", ["goal_id", "stream_version"],
        postgresql_where=sa.text(ARCHIVE_EVENTS), sqlite_where=sa.text(ARCHIVE_EVENTS),
    )


def downgrade() -> None:
    op.drop_index("ix_events_goal_archive", table_name="events")
