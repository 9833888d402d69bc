"""Pins from the chat (docs/pins.md): one row per workspace, message and curator.

Revision ID: 0010_chat_pins
Revises: 0009_rerun_preview
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import timeline_pipeline.db.types

revision: str = "0010_chat_pins"
down_revision: str | None = "0009_rerun_preview"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


_BIGINT = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _time(name: str) -> sa.Column[object]:
    return sa.Column(name, timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False)


def upgrade() -> None:
    op.create_table(
        "timeline_chat_pins",
        sa.Column("id", _BIGINT, autoincrement=True, nullable=False),
        sa.Column("workspace_id", sa.String(length=128), nullable=False),
        sa.Column("message_id", sa.String(length=256), nullable=False),
        sa.Column("operator_open_id", sa.String(length=128), nullable=False),
        sa.Column("chat_id", sa.String(length=256), nullable=False),
        sa.Column("evidence_id", _BIGINT, nullable=False),
        sa.Column("entry_id", _BIGINT, nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        _time("action_at"),
        sa.Column("revision", sa.Integer(), server_default=sa.text("1"), nullable=False),
        _time("created_at"),
        _time("updated_at"),
        sa.CheckConstraint(
            "status IN ('pinned', 'unpinned')", name=op.f("ck_timeline_chat_pins_status")
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_timeline_chat_pins_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_timeline_chat_pins")),
        sa.UniqueConstraint(
            "workspace_id",
            "message_id",
            "operator_open_id",
            name=op.f("uq_timeline_chat_pins_workspace_id_message_id_operator_open_id"),
        ),
    )
    op.create_index(
        op.f("ix_timeline_chat_pins_message_id_operator_open_id"),
        "timeline_chat_pins",
        ["message_id", "operator_open_id"],
    )
    op.create_index(
        op.f("ix_timeline_chat_pins_workspace_id_updated_at_id"),
        "timeline_chat_pins",
        ["workspace_id", "updated_at", "id"],
    )


def downgrade() -> None:
    op.drop_index(
        op.f("ix_timeline_chat_pins_workspace_id_updated_at_id"), table_name="timeline_chat_pins"
    )
    op.drop_index(
        op.f("ix_timeline_chat_pins_message_id_operator_open_id"), table_name="timeline_chat_pins"
    )
    op.drop_table("timeline_chat_pins")
