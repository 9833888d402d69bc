"""Pin tombstones: a pin reaction's removal that arrives before its creation is remembered, so
that the creation, when it comes with an older `action_time`, does not pin (docs/pins.md, "A
removal before its creation").

Revision ID: 0017_pin_tombstones
Revises: 0016_workspace_language
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import timeline_pipeline.db.types

revision: str = "0017_pin_tombstones"
down_revision: str | None = "0016_workspace_language"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "timeline_pin_tombstones"


def _time(name: str) -> sa.Column[object]:
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
        sa.Column("message_id", sa.String(length=256), nullable=False),
        sa.Column("operator_open_id", sa.String(length=128), nullable=False),
        sa.Column("emoji_type", sa.String(length=64), nullable=False),
        _time("removed_at"),
        _time("created_at"),
        _time("updated_at"),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f(f"fk_{TABLE}_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f(f"pk_{TABLE}")),
        sa.UniqueConstraint(
            "workspace_id",
            "message_id",
            "operator_open_id",
            "emoji_type",
            name=op.f(f"uq_{TABLE}_workspace_id_message_id_operator_open_id_emoji_type"),
        ),
    )
    op.create_index(
        op.f(f"ix_{TABLE}_workspace_id_updated_at_id"), TABLE, ["workspace_id", "updated_at", "id"]
    )


def downgrade() -> None:
    op.drop_index(op.f(f"ix_{TABLE}_workspace_id_updated_at_id"), table_name=TABLE)
    op.drop_table(TABLE)
