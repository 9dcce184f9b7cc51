"""Index a goal's projection rows by projection, position and key: the latest row of each is an index lookup.

``show`` prints the latest row of each of a goal's projections (and the
report's review list does too); a per-run projection of a long goal holds
tens of thousands of rows, and finding its newest by position read every
one of them (the position is stored after the payload). With this index the
newest row, the counts per projection and a page of rows in position order
are read from the index. Nothing is rewritten.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02
"""

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_projection_rows_goal_position", "projection_rows", ["goal_id", "projection", "position", "key"])


def downgrade() -> None:
    op.drop_index("ix_projection_rows_goal_position", table_name="projection_rows")
