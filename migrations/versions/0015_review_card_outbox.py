"""The review card's outbox: a window flags, in the transaction that finishes it, that its card
is still to be planned, and the card worker plans it afterwards in a transaction of its own
(docs/review-cards.md, "How a card is planned"). The synthesis transaction used to read the
window's drafts and evidence and write the card row itself.

`review_card_pending` is false on every existing row: windows finished before this revision
had their card planned with them. The index keeps the worker's scan of flagged windows a
bounded keyset read, like `ix_sync_states_summary_pending` (0012_summary_pending).

Revision ID: 0015_review_card_outbox
Revises: 0014_window_size
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015_review_card_outbox"
down_revision: str | None = "0014_window_size"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "workspace_timeline_sync_states"
INDEX = "ix_sync_states_review_card_pending"


def upgrade() -> None:
    # A constant default: PostgreSQL (11+) adds the column without rewriting the table.
    with op.batch_alter_table(TABLE) as batch:
        batch.add_column(
            sa.Column(
                "review_card_pending", sa.Boolean(), server_default=sa.text("false"), nullable=False
            )
        )
        batch.create_index(INDEX, ["review_card_pending", "id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table(TABLE) as batch:
        batch.drop_index(INDEX)
        batch.drop_column("review_card_pending")
