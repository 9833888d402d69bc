"""Window-level backoff during an AI outage, and runs that ended without claiming their window.

* `deferral_count`: consecutive deferrals of a window because the model service was unavailable;
  the exponent of its window-level backoff (stored in `next_attempt_at`). Not an attempt.
* `deferred`: the window is waiting out such a backoff (`pending` until `next_attempt_at`).
* `unclaimed_runs`: requested runs that finished without claiming the window, so that the
  sensor's relaunches of such a window are counted and bounded.

Revision ID: 0002_window_backoff
Revises: 0001
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002_window_backoff"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "workspace_timeline_sync_states"


def upgrade() -> None:
    with op.batch_alter_table(TABLE) as batch:
        batch.add_column(
            sa.Column("deferral_count", sa.Integer(), server_default=sa.text("0"), nullable=False)
        )
        batch.add_column(
            sa.Column("deferred", sa.Boolean(), server_default=sa.text("false"), nullable=False)
        )
        batch.add_column(
            sa.Column("unclaimed_runs", sa.Integer(), server_default=sa.text("0"), nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table(TABLE) as batch:
        batch.drop_column("unclaimed_runs")
        batch.drop_column("deferred")
        batch.drop_column("deferral_count")
