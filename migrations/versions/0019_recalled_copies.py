"""A recall reaches every copy of a message's text (docs/lifecycle.md, "What a recall and a hold
do to each copy"): an entry that keeps its text after one of its messages was recalled is
flagged for its curators (`recalled_evidence`, shown on the page and in the API), and a card
whose stored text a recall redacted waits to be patched in Lark (`redraw_pending`, the card
worker's queue). Both false on every existing row: nothing was recalled under the new rules yet.

Revision ID: 0019_recalled_copies
Revises: 0018_maintenance_workspace
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019_recalled_copies"
down_revision: str | None = "0018_maintenance_workspace"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("workspace_timeline_entries") as batch:
        batch.add_column(
            sa.Column(
                "recalled_evidence", sa.Boolean(), nullable=False, server_default=sa.text("false")
            )
        )
    with op.batch_alter_table("interaction_requests") as batch:
        batch.add_column(
            sa.Column(
                "redraw_pending", sa.Boolean(), nullable=False, server_default=sa.text("false")
            )
        )


def downgrade() -> None:
    with op.batch_alter_table("interaction_requests") as batch:
        batch.drop_column("redraw_pending")
    with op.batch_alter_table("workspace_timeline_entries") as batch:
        batch.drop_column("recalled_evidence")
