"""The incident report (docs/report.md): its revisions (`incident_reports`, a copy of message
text), curators' milestone times (`incident_report_milestones`), the workspace's Lark document and
its write progress (`incident_report_documents`), confirmed next steps' Lark tasks
(`follow_up_tasks`), and each workspace status change with who made it
(`workspace_status_changes`, read by the `resolved` milestone and the report sensor). New tables
only: nothing existing changes.

Revision ID: 0020_incident_reports
Revises: 0019_recalled_copies
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import timeline_pipeline.db.types

revision: str = "0020_incident_reports"
down_revision: str | None = "0019_recalled_copies"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "follow_up_tasks",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("workspace_id", sa.String(length=128), nullable=False),
        sa.Column("entry_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("client_token", sa.String(length=64), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("task_guid", sa.String(length=128), nullable=True),
        sa.Column("task_url", sa.String(length=1024), nullable=True),
        sa.Column("requested_by", sa.String(length=128), nullable=False),
        sa.Column("attempt_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("last_error", sa.String(length=256), nullable=True),
        sa.Column("revision", sa.Integer(), server_default=sa.text("1"), nullable=False),
        sa.Column(
            "created_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "updated_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.CheckConstraint(
            "state IN ('pending', 'created', 'failed')", name=op.f("ck_follow_up_tasks_state")
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_follow_up_tasks_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_follow_up_tasks")),
        sa.UniqueConstraint("entry_id", name=op.f("uq_follow_up_tasks_entry_id")),
    )
    op.create_index(
        op.f("ix_follow_up_tasks_state_id"), "follow_up_tasks", ["state", "id"], unique=False
    )
    op.create_index(
        op.f("ix_follow_up_tasks_workspace_id_updated_at_id"),
        "follow_up_tasks",
        ["workspace_id", "updated_at", "id"],
        unique=False,
    )
    op.create_table(
        "incident_report_documents",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("workspace_id", sa.String(length=128), nullable=False),
        sa.Column("folder_token", sa.String(length=128), nullable=False),
        sa.Column("title", sa.String(length=512), nullable=False),
        sa.Column("document_id", sa.String(length=128), nullable=True),
        sa.Column("document_url", sa.String(length=1024), nullable=True),
        sa.Column(
            "create_started_at",
            timeline_pipeline.db.types.UTCDateTime(timezone=True),
            nullable=True,
        ),
        sa.Column("target_revision", sa.Integer(), nullable=False),
        sa.Column("written_revision", sa.Integer(), nullable=True),
        sa.Column("cleared_for_revision", sa.Integer(), nullable=True),
        sa.Column("chat_id", sa.String(length=256), nullable=True),
        sa.Column("reply_uuid", sa.String(length=64), nullable=True),
        sa.Column("reply_message_id", sa.String(length=128), nullable=True),
        sa.Column("attempt_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("last_error", sa.String(length=256), nullable=True),
        sa.Column(
            "state", sa.String(length=16), server_default=sa.text("'active'"), nullable=False
        ),
        sa.Column(
            "deleted_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column("revision", sa.Integer(), server_default=sa.text("1"), nullable=False),
        sa.Column(
            "created_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "updated_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.CheckConstraint(
            "state IN ('active', 'deleted')", name=op.f("ck_incident_report_documents_state")
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_incident_report_documents_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_incident_report_documents")),
        sa.UniqueConstraint("workspace_id", name=op.f("uq_incident_report_documents_workspace_id")),
    )
    op.create_index(
        op.f("ix_incident_report_documents_workspace_id_updated_at_id"),
        "incident_report_documents",
        ["workspace_id", "updated_at", "id"],
        unique=False,
    )
    op.create_table(
        "incident_report_milestones",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("workspace_id", sa.String(length=128), nullable=False),
        sa.Column("milestone", sa.String(length=16), nullable=False),
        sa.Column("at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("set_by", sa.String(length=128), nullable=False),
        sa.Column(
            "created_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "updated_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.CheckConstraint(
            "milestone IN ('started', 'detected', 'mitigated', 'resolved')",
            name=op.f("ck_incident_report_milestones_milestone"),
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_incident_report_milestones_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_incident_report_milestones")),
        sa.UniqueConstraint(
            "workspace_id",
            "milestone",
            name=op.f("uq_incident_report_milestones_workspace_id_milestone"),
        ),
    )
    op.create_index(
        op.f("ix_incident_report_milestones_workspace_id_updated_at_id"),
        "incident_report_milestones",
        ["workspace_id", "updated_at", "id"],
        unique=False,
    )
    op.create_table(
        "incident_reports",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("workspace_id", sa.String(length=128), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column(
            "content_json",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("markdown", sa.Text(), nullable=False),
        sa.Column("content_fingerprint", sa.String(length=64), nullable=False),
        sa.Column("input_stamp", sa.String(length=64), nullable=False),
        sa.Column(
            "cited_evidence_ids",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("built_by", sa.String(length=128), nullable=False),
        sa.Column("trigger", sa.String(length=32), nullable=False),
        sa.Column("withdrawn", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column(
            "created_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "updated_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_incident_reports_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_incident_reports")),
        sa.UniqueConstraint(
            "workspace_id", "revision", name=op.f("uq_incident_reports_workspace_id_revision")
        ),
    )
    op.create_index(
        op.f("ix_incident_reports_workspace_id_updated_at_id"),
        "incident_reports",
        ["workspace_id", "updated_at", "id"],
        unique=False,
    )
    op.create_table(
        "workspace_status_changes",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("workspace_id", sa.String(length=128), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("changed_by", sa.String(length=128), nullable=False),
        sa.Column(
            "changed_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.CheckConstraint(
            "status IN ('firing', 'recovered', 'archived')",
            name=op.f("ck_workspace_status_changes_status"),
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_workspace_status_changes_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workspace_status_changes")),
    )
    op.create_index(
        op.f("ix_workspace_status_changes_workspace_id_changed_at_id"),
        "workspace_status_changes",
        ["workspace_id", "changed_at", "id"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index(
        op.f("ix_workspace_status_changes_workspace_id_changed_at_id"),
        table_name="workspace_status_changes",
    )
    op.drop_table("workspace_status_changes")
    op.drop_index(
        op.f("ix_incident_reports_workspace_id_updated_at_id"), table_name="incident_reports"
    )
    op.drop_table("incident_reports")
    op.drop_index(
        op.f("ix_incident_report_milestones_workspace_id_updated_at_id"),
        table_name="incident_report_milestones",
    )
    op.drop_table("incident_report_milestones")
    op.drop_index(
        op.f("ix_incident_report_documents_workspace_id_updated_at_id"),
        table_name="incident_report_documents",
    )
    op.drop_table("incident_report_documents")
    op.drop_index(
        op.f("ix_follow_up_tasks_workspace_id_updated_at_id"), table_name="follow_up_tasks"
    )
    op.drop_index(op.f("ix_follow_up_tasks_state_id"), table_name="follow_up_tasks")
    op.drop_table("follow_up_tasks")
