"""The summary decision's index: windows still awaiting it, by their own flag, oldest first.

The summary sensor and runner used to look only at windows from the ingestion lookback on, on
the assumption that an older window could not finish any more; windows of ended incidents and
long backlogs now do, and were never decided. The scan is now driven by `summary_attempted`
alone, in (window_start, id) order, and this index keeps it a bounded keyset read.

Revision ID: 0012_summary_pending
Revises: 0011_holds_everywhere
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0012_summary_pending"
down_revision: str | None = "0011_holds_everywhere"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("workspace_timeline_sync_states", schema=None) as batch_op:
        batch_op.create_index(
            "ix_sync_states_summary_pending",
            ["source_type", "summary_attempted", "window_start", "id"],
            unique=False,
        )


def downgrade() -> None:
    with op.batch_alter_table("workspace_timeline_sync_states", schema=None) as batch_op:
        batch_op.drop_index("ix_sync_states_summary_pending")
