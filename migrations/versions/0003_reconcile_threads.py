"""When reconciliation last listed each thread, so its thread budget rotates fairly.

Revision ID: 0003_reconcile_threads
Revises: 0002_window_backoff
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import timeline_pipeline.db.types

revision: str = "0003_reconcile_threads"
down_revision: str | None = "0002_window_backoff"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "workspace_timeline_reconcile_threads",
        sa.Column("workspace_id", sa.String(length=128), nullable=False),
        sa.Column("chat_id", sa.String(length=256), nullable=False),
        sa.Column("thread_id", sa.String(length=256), nullable=False),
        sa.Column(
            "last_listed_at",
            timeline_pipeline.db.types.UTCDateTime(timezone=True),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_workspace_timeline_reconcile_threads_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "workspace_id",
            "chat_id",
            "thread_id",
            name=op.f("pk_workspace_timeline_reconcile_threads"),
        ),
    )


def downgrade() -> None:
    op.drop_table("workspace_timeline_reconcile_threads")
