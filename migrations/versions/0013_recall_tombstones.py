"""Recall tombstones: a recall that arrives before its message is remembered, so that the
message's later arrival (a delayed event or a history read) is stored redacted (docs/design.md
§4, "A recall before its message").

Revision ID: 0013_recall_tombstones
Revises: 0012_summary_pending
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import timeline_pipeline.db.types

revision: str = "0013_recall_tombstones"
down_revision: str | None = "0012_summary_pending"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "workspace_timeline_recall_tombstones"


def _utc(name: str) -> sa.Column[object]:
    return sa.Column(name, timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False)


def upgrade() -> None:
    op.create_table(
        TABLE,
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("workspace_id", sa.String(length=128), nullable=False),
        sa.Column("chat_id", sa.String(length=256), nullable=False),
        sa.Column("message_id", sa.String(length=256), nullable=False),
        _utc("recalled_at"),
        _utc("created_at"),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f(f"fk_{TABLE}_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f(f"pk_{TABLE}")),
        sa.UniqueConstraint(
            "workspace_id",
            "chat_id",
            "message_id",
            name=op.f(f"uq_{TABLE}_workspace_id_chat_id_message_id"),
        ),
    )
    op.create_index(
        op.f(f"ix_{TABLE}_workspace_id_created_at_id"), TABLE, ["workspace_id", "created_at", "id"]
    )


def downgrade() -> None:
    op.drop_index(op.f(f"ix_{TABLE}_workspace_id_created_at_id"), table_name=TABLE)
    op.drop_table(TABLE)
