"""Keep a Merkle log of the ledger: the RFC 9162 tree of every event in position order (docs/proofs.md).

From this revision every append also stores the leaves of its events and the
interior nodes they complete (``merkle_nodes``: one row per complete subtree,
about two per event), so that ``prove`` answers an inclusion or consistency
proof from a few stored nodes. This revision builds the log of the events a
ledger already holds, and the table of the checkpoints ``checkpoint --key``
signs (``checkpoints``, empty). Events and projection rows are untouched.

Frozen: the hashing is written out here (RFC 9162 §2.1.1: a leaf is
SHA-256(0x00 || the event's chain hash as 32 bytes), a node SHA-256(0x01 ||
left || right)), never imported. Printed as SQL (``db upgrade --sql``) the
revision only creates the table: SQL cannot hash the events portably, and the
first append (or ``replay``) after it builds the log of the events before it.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-04
"""

import hashlib

import sqlalchemy as sa
from alembic import context, op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_PAGE = 5000


def upgrade() -> None:
    nodes = op.create_table(
        "merkle_nodes",
        sa.Column("level", sa.Integer, nullable=False),
        sa.Column("node_index", sa.BigInteger().with_variant(sa.Integer, "sqlite"), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("level", "node_index", name="pk_merkle_nodes"),
    )
    op.create_table(
        "checkpoints",
        sa.Column("number", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("tree_size", sa.BigInteger().with_variant(sa.Integer, "sqlite"), nullable=False),
        sa.Column("root_hash", sa.String(64), nullable=False),
        sa.Column("note", sa.Text, nullable=False),
        sa.Column("recorded_at", sa.String(32), nullable=False),
    )
    if context.is_offline_mode():
        return
    connection = op.get_bind()
    page = sa.text("SELECT chain_hash FROM events WHERE position > :after ORDER BY position LIMIT :limit")
    stack: list[tuple[int, int, bytes]] = []  # the frontier: complete nodes not yet paired, left to right
    size = 0
    while chain_hashes := connection.execute(page, {"after": size, "limit": _PAGE}).scalars().all():
        made = []
        for chain_hash in chain_hashes:
            node = (0, size, hashlib.sha256(b"\x00" + bytes.fromhex(chain_hash)).digest())
            made.append(node)
            while stack and stack[-1][0] == node[0]:
                left = stack.pop()
                node = (node[0] + 1, node[1] >> 1, hashlib.sha256(b"\x01" + left[2] + node[2]).digest())
                made.append(node)
            stack.append(node)
            size += 1
        op.bulk_insert(nodes, [{"level": level, "node_index": index, "hash": digest.hex()} for level, index, digest in made])


def downgrade() -> None:
    op.drop_table("checkpoints")
    op.drop_table("merkle_nodes")
