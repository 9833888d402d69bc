"""Window size as data: each window state records its size in seconds, so that a change of
`synthesisWindow` on a live deployment can be recognised and refused (docs/changing.md, "A
15-minute window"; docs/design.md §5). Rows written before this revision keep NULL, read as
the 10-minute size every deployment used until then.

Revision ID: 0014_window_size
Revises: 0013_recall_tombstones
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014_window_size"
down_revision: str | None = "0013_recall_tombstones"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "workspace_timeline_sync_states"


def upgrade() -> None:
    with op.batch_alter_table(TABLE) as batch:
        batch.add_column(sa.Column("window_seconds", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table(TABLE) as batch:
        batch.drop_column("window_seconds")
