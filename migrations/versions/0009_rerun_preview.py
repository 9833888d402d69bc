"""Scratch rows of a rerun preview (docs/maintenance.md, "Preview a rerun").

A `window_rerun` dry-run writes what the new processor version would propose into this table
only, keyed by its maintenance job; the lifecycle purges it after a short retention.

Revision ID: 0009_rerun_preview
Revises: 0008_lifecycle
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import timeline_pipeline.db.types

revision: str = "0009_rerun_preview"
down_revision: str | None = "0008_lifecycle"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "window_rerun_previews"


def _utc(name: str, *, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=nullable)


def _bigint(name: str, *, nullable: bool) -> sa.Column[object]:
    return sa.Column(name, sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=nullable)


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
        sa.Column("job_id", sa.String(length=36), nullable=False),
        sa.Column("chat_id", sa.String(length=128), nullable=False),
        _utc("window_start"),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        _bigint("entry_id", nullable=True),
        _bigint("image_id", nullable=True),
        sa.Column("fingerprint", sa.String(length=64), nullable=True),
        _utc("occurred_at"),
        sa.Column("title", sa.String(length=512), nullable=False),
        sa.Column("category", sa.String(length=32), nullable=False),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.Column("old_title", sa.String(length=512), nullable=True),
        sa.Column("old_category", sa.String(length=32), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=True),
        sa.Column("source", sa.String(length=8), nullable=True),
        sa.Column("reason", sa.String(length=32), nullable=True),
        sa.Column(
            "evidence_json",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        _utc("created_at"),
        sa.CheckConstraint("kind IN ('proposal', 'prior')", name=op.f(f"ck_{TABLE}_kind")),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f(f"fk_{TABLE}_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f(f"pk_{TABLE}")),
    )
    op.create_index(
        op.f(f"ix_{TABLE}_job_id_kind_fingerprint"), TABLE, ["job_id", "kind", "fingerprint"]
    )
    op.create_index(op.f(f"ix_{TABLE}_job_id_kind_entry_id"), TABLE, ["job_id", "kind", "entry_id"])
    op.create_index(
        op.f(f"ix_{TABLE}_workspace_id_created_at_id"), TABLE, ["workspace_id", "created_at", "id"]
    )


def downgrade() -> None:
    op.drop_table(TABLE)
