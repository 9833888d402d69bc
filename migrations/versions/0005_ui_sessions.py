"""The timeline page's sign-in links and sessions (docs/timeline-page.md).

Both tables keep only SHA-256 hashes of their secrets: a link is a one-time, short-lived
secret and a session cookie a longer one, and neither can be recovered from the database.

Revision ID: 0005_ui_sessions
Revises: 0004_build_only_what_runs
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import timeline_pipeline.db.types

revision: str = "0005_ui_sessions"
down_revision: str | None = "0004_build_only_what_runs"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _time(name: str, *, nullable: bool) -> sa.Column[object]:
    return sa.Column(name, timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "ui_signin_links",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("workspace_id", sa.String(length=128), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        _time("created_at", nullable=False),
        _time("expires_at", nullable=False),
        _time("used_at", nullable=True),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_ui_signin_links_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ui_signin_links")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_ui_signin_links_token_hash")),
    )
    op.create_table(
        "ui_sessions",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("workspace_id", sa.String(length=128), nullable=False),
        sa.Column("session_hash", sa.String(length=64), nullable=False),
        sa.Column("link_id", sa.String(length=64), nullable=True),
        _time("created_at", nullable=False),
        _time("expires_at", nullable=False),
        _time("revoked_at", nullable=True),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_ui_sessions_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["link_id"],
            ["ui_signin_links.id"],
            name=op.f("fk_ui_sessions_link_id_ui_signin_links"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ui_sessions")),
        sa.UniqueConstraint("session_hash", name=op.f("uq_ui_sessions_session_hash")),
    )
    op.create_index(
        op.f("ix_ui_sessions_workspace_id_revoked_at"),
        "ui_sessions",
        ["workspace_id", "revoked_at"],
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_ui_sessions_workspace_id_revoked_at"), table_name="ui_sessions")
    op.drop_table("ui_sessions")
    op.drop_table("ui_signin_links")
