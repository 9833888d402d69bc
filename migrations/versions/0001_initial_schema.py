"""Initial schema: workspaces, evidence, sync states, entries, summaries, and the tables that
interactions, lifecycle and maintenance build on.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import timeline_pipeline.db.types

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:

    op.create_table(
        "audit_events",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column(
            "occurred_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column("actor", sa.String(length=128), nullable=False),
        sa.Column("action", sa.String(length=64), nullable=False),
        sa.Column("subject_type", sa.String(length=64), nullable=False),
        sa.Column("subject_id", sa.String(length=256), nullable=False),
        sa.Column("workspace_id", sa.String(length=128), nullable=True),
        sa.Column(
            "details_json",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_events")),
    )
    with op.batch_alter_table("audit_events", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_audit_events_occurred_at_id"), ["occurred_at", "id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_audit_events_subject_type_subject_id_occurred_at"),
            ["subject_type", "subject_id", "occurred_at"],
            unique=False,
        )

    op.create_table(
        "legal_holds",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("workspace_id", sa.String(length=128), nullable=True),
        sa.Column("table_name", sa.String(length=128), nullable=True),
        sa.Column("reason", sa.String(length=1000), nullable=False),
        sa.Column("created_by", sa.String(length=128), nullable=False),
        sa.Column("create_idempotency_key", sa.String(length=256), nullable=False),
        sa.Column(
            "review_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column(
            "released_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column("released_by", sa.String(length=128), nullable=True),
        sa.Column("release_reason", sa.String(length=1000), nullable=True),
        sa.Column("release_idempotency_key", sa.String(length=256), nullable=True),
        sa.Column(
            "created_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "updated_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_legal_holds")),
        sa.UniqueConstraint(
            "create_idempotency_key", name=op.f("uq_legal_holds_create_idempotency_key")
        ),
        sa.UniqueConstraint(
            "release_idempotency_key", name=op.f("uq_legal_holds_release_idempotency_key")
        ),
    )
    with op.batch_alter_table("legal_holds", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_legal_holds_released_at_workspace_id"),
            ["released_at", "workspace_id"],
            unique=False,
        )

    op.create_table(
        "lifecycle_runs",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("mode", sa.String(length=16), nullable=False),
        sa.Column("table_name", sa.String(length=128), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column(
            "cursor_json",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("rows_matched", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("rows_archived", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("rows_purged", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column(
            "report_json",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "started_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "finished_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.CheckConstraint(
            "mode IN ('dry_run', 'archive', 'purge')", name=op.f("ck_lifecycle_runs_mode")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lifecycle_runs")),
    )
    op.create_table(
        "maintenance_jobs",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("job_type", sa.String(length=64), nullable=False),
        sa.Column("processor_version", sa.Integer(), nullable=False),
        sa.Column("scope_key", sa.String(length=256), nullable=False),
        sa.Column("idempotency_key", sa.String(length=256), nullable=False),
        sa.Column(
            "parameters_json",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("parameters_hash", sa.String(length=64), nullable=False),
        sa.Column("apply", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("revision", sa.Integer(), server_default=sa.text("1"), nullable=False),
        sa.Column("batch_size", sa.Integer(), nullable=False),
        sa.Column("delay_ms", sa.Integer(), nullable=False),
        sa.Column("lock_timeout_ms", sa.Integer(), nullable=False),
        sa.Column("statement_timeout_ms", sa.Integer(), nullable=False),
        sa.Column(
            "checkpoint_json",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "counters_json",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "result_json",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("last_error", sa.String(length=1000), nullable=True),
        sa.Column(
            "not_before", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column(
            "created_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "updated_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.CheckConstraint(
            "status IN ('ready', 'running', 'paused', 'completed', 'cancelled', 'failed')",
            name=op.f("ck_maintenance_jobs_status"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_maintenance_jobs")),
        sa.UniqueConstraint("idempotency_key", name=op.f("uq_maintenance_jobs_idempotency_key")),
    )
    with op.batch_alter_table("maintenance_jobs", schema=None) as batch_op:
        batch_op.create_index(
            "uq_maintenance_jobs_one_open_per_scope",
            ["job_type", "scope_key"],
            unique=True,
            sqlite_where=sa.text("status IN ('ready', 'paused')"),
            postgresql_where=sa.text("status IN ('ready', 'paused')"),
        )

    op.create_table(
        "workspaces",
        sa.Column("id", sa.String(length=128), nullable=False),
        sa.Column("type", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("title", sa.String(length=512), nullable=True),
        sa.Column(
            "created_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "updated_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.CheckConstraint(
            "status IN ('firing', 'recovered', 'archived')", name=op.f("ck_workspaces_status")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workspaces")),
    )
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("workspace_id", sa.String(length=128), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column(
            "created_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "revoked_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_api_tokens_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_tokens")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_api_tokens_token_hash")),
    )
    op.create_table(
        "interaction_requests",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("workspace_id", sa.String(length=128), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("subject_id", sa.String(length=128), nullable=True),
        sa.Column("callback_token_hash", sa.String(length=64), nullable=False),
        sa.Column("chat_id", sa.String(length=256), nullable=False),
        sa.Column("card_message_id", sa.String(length=256), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column(
            "request_json",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "expires_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column("revision", sa.Integer(), server_default=sa.text("1"), nullable=False),
        sa.Column(
            "created_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "updated_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.CheckConstraint(
            "status IN ('pending', 'submitted', 'expired', 'cancelled')",
            name=op.f("ck_interaction_requests_status"),
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_interaction_requests_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_interaction_requests")),
        sa.UniqueConstraint(
            "callback_token_hash", name=op.f("uq_interaction_requests_callback_token_hash")
        ),
    )
    with op.batch_alter_table("interaction_requests", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_interaction_requests_card_message_id"), ["card_message_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_interaction_requests_status_expires_at"),
            ["status", "expires_at"],
            unique=False,
        )

    op.create_table(
        "workspace_collaboration_resources",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("workspace_id", sa.String(length=128), nullable=False),
        sa.Column("resource_type", sa.String(length=32), nullable=False),
        sa.Column("resource_key", sa.String(length=256), nullable=False),
        sa.Column(
            "created_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_workspace_collaboration_resources_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workspace_collaboration_resources")),
        sa.UniqueConstraint(
            "workspace_id",
            "resource_type",
            "resource_key",
            name=op.f(
                "uq_workspace_collaboration_resources_workspace_id_resource_type_resource_key"
            ),
        ),
    )
    with op.batch_alter_table("workspace_collaboration_resources", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_workspace_collaboration_resources_resource_type_resource_key"),
            ["resource_type", "resource_key"],
            unique=False,
        )

    op.create_table(
        "workspace_curators",
        sa.Column("workspace_id", sa.String(length=128), nullable=False),
        sa.Column("open_id", sa.String(length=128), nullable=False),
        sa.Column(
            "created_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_workspace_curators_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("workspace_id", "open_id", name=op.f("pk_workspace_curators")),
    )
    op.create_table(
        "workspace_timeline_evidence",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("workspace_id", sa.String(length=128), nullable=False),
        sa.Column("source", sa.String(length=32), nullable=False),
        sa.Column("source_type", sa.String(length=64), nullable=False),
        sa.Column("source_key", sa.String(length=512), nullable=False),
        sa.Column(
            "occurred_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "source_updated_at",
            timeline_pipeline.db.types.UTCDateTime(timezone=True),
            nullable=False,
        ),
        sa.Column(
            "observed_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column("actor_id", sa.String(length=128), nullable=True),
        sa.Column("actor_display_name", sa.String(length=256), nullable=True),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column(
            "metadata_json",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("scope_key", sa.String(length=256), nullable=True),
        sa.Column("ai_eligible", sa.Boolean(), server_default=sa.text("(false)"), nullable=False),
        sa.Column("deleted", sa.Boolean(), server_default=sa.text("(false)"), nullable=False),
        sa.Column("revision", sa.Integer(), server_default=sa.text("1"), nullable=False),
        sa.Column(
            "updated_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_workspace_timeline_evidence_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workspace_timeline_evidence")),
        sa.UniqueConstraint(
            "workspace_id",
            "source",
            "source_type",
            "source_key",
            name=op.f("uq_workspace_timeline_evidence_workspace_id_source_source_type_source_key"),
        ),
    )
    with op.batch_alter_table("workspace_timeline_evidence", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_workspace_timeline_evidence_workspace_id_scope_key_occurred_at_id"),
            ["workspace_id", "scope_key", "occurred_at", "id"],
            unique=False,
        )
        batch_op.create_index(
            batch_op.f(
                "ix_workspace_timeline_evidence_workspace_id_source_source_type_occurred_at"
            ),
            ["workspace_id", "source", "source_type", "occurred_at"],
            unique=False,
        )

    op.create_table(
        "workspace_timeline_summaries",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("workspace_id", sa.String(length=128), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("source", sa.String(length=8), nullable=False),
        sa.Column("revision", sa.Integer(), server_default=sa.text("1"), nullable=False),
        sa.Column(
            "metadata_json",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "created_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "updated_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.CheckConstraint(
            "source IN ('ai', 'human')", name=op.f("ck_workspace_timeline_summaries_source")
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_workspace_timeline_summaries_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workspace_timeline_summaries")),
        sa.UniqueConstraint(
            "workspace_id", name=op.f("uq_workspace_timeline_summaries_workspace_id")
        ),
    )
    op.create_table(
        "workspace_timeline_sync_states",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("workspace_id", sa.String(length=128), nullable=False),
        sa.Column("source", sa.String(length=32), nullable=False),
        sa.Column("source_type", sa.String(length=64), nullable=False),
        sa.Column("source_key", sa.String(length=512), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempt_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("revision", sa.Integer(), server_default=sa.text("1"), nullable=False),
        sa.Column(
            "processing_started_at",
            timeline_pipeline.db.types.UTCDateTime(timezone=True),
            nullable=True,
        ),
        sa.Column(
            "last_seen_updated_at",
            timeline_pipeline.db.types.UTCDateTime(timezone=True),
            nullable=True,
        ),
        sa.Column("last_seen_cursor", sa.String(length=512), nullable=True),
        sa.Column("last_seen_content_hash", sa.String(length=64), nullable=True),
        sa.Column(
            "metadata_json",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("scope_key", sa.String(length=256), nullable=True),
        sa.Column("processor_version", sa.String(length=64), nullable=True),
        sa.Column(
            "window_start", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column(
            "window_end", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column("lease_owner", sa.String(length=128), nullable=True),
        sa.Column(
            "next_attempt_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column(
            "summary_attempted", sa.Boolean(), server_default=sa.text("(false)"), nullable=False
        ),
        sa.Column("last_error", sa.String(length=1000), nullable=True),
        sa.Column(
            "created_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "updated_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.CheckConstraint(
            "status IN ('pending', 'processing', 'completed', 'ignored', 'failed')",
            name=op.f("ck_workspace_timeline_sync_states_status"),
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_workspace_timeline_sync_states_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workspace_timeline_sync_states")),
        sa.UniqueConstraint(
            "workspace_id",
            "source",
            "source_type",
            "source_key",
            name=op.f(
                "uq_workspace_timeline_sync_states_workspace_id_source_source_type_source_key"
            ),
        ),
    )
    with op.batch_alter_table("workspace_timeline_sync_states", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_workspace_timeline_sync_states_source_type_status_window_start"),
            ["source_type", "status", "window_start"],
            unique=False,
        )
        batch_op.create_index(
            batch_op.f(
                "ix_workspace_timeline_sync_states_workspace_id_scope_key_source_type_window_start"
            ),
            ["workspace_id", "scope_key", "source_type", "window_start"],
            unique=False,
        )

    op.create_table(
        "interaction_admissions",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("interaction_id", sa.String(length=64), nullable=False),
        sa.Column("idempotency_key", sa.String(length=256), nullable=False),
        sa.Column("actor_open_id", sa.String(length=128), nullable=False),
        sa.Column(
            "action_json",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempt_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("lease_owner", sa.String(length=128), nullable=True),
        sa.Column(
            "lease_expires_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column("last_error", sa.String(length=1000), nullable=True),
        sa.Column(
            "created_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "updated_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.CheckConstraint(
            "status IN ('queued', 'leased', 'done', 'failed')",
            name=op.f("ck_interaction_admissions_status"),
        ),
        sa.ForeignKeyConstraint(
            ["interaction_id"],
            ["interaction_requests.id"],
            name=op.f("fk_interaction_admissions_interaction_id_interaction_requests"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_interaction_admissions")),
        sa.UniqueConstraint(
            "idempotency_key", name=op.f("uq_interaction_admissions_idempotency_key")
        ),
    )
    with op.batch_alter_table("interaction_admissions", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_interaction_admissions_status_lease_expires_at_id"),
            ["status", "lease_expires_at", "id"],
            unique=False,
        )

    op.create_table(
        "workspace_timeline_entries",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("workspace_id", sa.String(length=128), nullable=False),
        sa.Column(
            "occurred_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column("title", sa.String(length=512), nullable=False),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.Column("category", sa.String(length=32), nullable=False),
        sa.Column("source", sa.String(length=8), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=True),
        sa.Column("human_edited", sa.Boolean(), server_default=sa.text("(false)"), nullable=False),
        sa.Column("revision", sa.Integer(), server_default=sa.text("1"), nullable=False),
        sa.Column(
            "window_state_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True
        ),
        sa.Column(
            "metadata_json",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "created_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "updated_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.CheckConstraint(
            "source IN ('ai', 'human', 'rule')", name=op.f("ck_workspace_timeline_entries_source")
        ),
        sa.CheckConstraint(
            "status IN ('draft', 'confirmed', 'hidden')",
            name=op.f("ck_workspace_timeline_entries_status"),
        ),
        sa.ForeignKeyConstraint(
            ["window_state_id"],
            ["workspace_timeline_sync_states.id"],
            name=op.f(
                "fk_workspace_timeline_entries_window_state_id_workspace_timeline_sync_states"
            ),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_workspace_timeline_entries_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workspace_timeline_entries")),
        sa.UniqueConstraint(
            "workspace_id",
            "fingerprint",
            name=op.f("uq_workspace_timeline_entries_workspace_id_fingerprint"),
        ),
    )
    with op.batch_alter_table("workspace_timeline_entries", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_workspace_timeline_entries_workspace_id_occurred_at_id"),
            ["workspace_id", "occurred_at", "id"],
            unique=False,
        )

    op.create_table(
        "workspace_timeline_entry_evidence",
        sa.Column("entry_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column(
            "evidence_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column(
            "created_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["entry_id"],
            ["workspace_timeline_entries.id"],
            name=op.f("fk_workspace_timeline_entry_evidence_entry_id_workspace_timeline_entries"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["evidence_id"],
            ["workspace_timeline_evidence.id"],
            name=op.f(
                "fk_workspace_timeline_entry_evidence_evidence_id_workspace_timeline_evidence"
            ),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "entry_id", "evidence_id", name=op.f("pk_workspace_timeline_entry_evidence")
        ),
    )
    with op.batch_alter_table("workspace_timeline_entry_evidence", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_workspace_timeline_entry_evidence_evidence_id"),
            ["evidence_id"],
            unique=False,
        )


def downgrade() -> None:

    with op.batch_alter_table("workspace_timeline_entry_evidence", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_workspace_timeline_entry_evidence_evidence_id"))

    op.drop_table("workspace_timeline_entry_evidence")
    with op.batch_alter_table("workspace_timeline_entries", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_workspace_timeline_entries_workspace_id_occurred_at_id"))

    op.drop_table("workspace_timeline_entries")
    with op.batch_alter_table("interaction_admissions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_interaction_admissions_status_lease_expires_at_id"))

    op.drop_table("interaction_admissions")
    with op.batch_alter_table("workspace_timeline_sync_states", schema=None) as batch_op:
        batch_op.drop_index(
            batch_op.f(
                "ix_workspace_timeline_sync_states_workspace_id_scope_key_source_type_window_start"
            )
        )
        batch_op.drop_index(
            batch_op.f("ix_workspace_timeline_sync_states_source_type_status_window_start")
        )

    op.drop_table("workspace_timeline_sync_states")
    op.drop_table("workspace_timeline_summaries")
    with op.batch_alter_table("workspace_timeline_evidence", schema=None) as batch_op:
        batch_op.drop_index(
            batch_op.f("ix_workspace_timeline_evidence_workspace_id_source_source_type_occurred_at")
        )
        batch_op.drop_index(
            batch_op.f("ix_workspace_timeline_evidence_workspace_id_scope_key_occurred_at_id")
        )

    op.drop_table("workspace_timeline_evidence")
    op.drop_table("workspace_curators")
    with op.batch_alter_table("workspace_collaboration_resources", schema=None) as batch_op:
        batch_op.drop_index(
            batch_op.f("ix_workspace_collaboration_resources_resource_type_resource_key")
        )

    op.drop_table("workspace_collaboration_resources")
    with op.batch_alter_table("interaction_requests", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_interaction_requests_status_expires_at"))
        batch_op.drop_index(batch_op.f("ix_interaction_requests_card_message_id"))

    op.drop_table("interaction_requests")
    op.drop_table("api_tokens")
    op.drop_table("workspaces")
    with op.batch_alter_table("maintenance_jobs", schema=None) as batch_op:
        batch_op.drop_index(
            "uq_maintenance_jobs_one_open_per_scope",
            sqlite_where=sa.text("status IN ('ready', 'paused')"),
            postgresql_where=sa.text("status IN ('ready', 'paused')"),
        )

    op.drop_table("maintenance_jobs")
    op.drop_table("lifecycle_runs")
    with op.batch_alter_table("legal_holds", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_legal_holds_released_at_workspace_id"))

    op.drop_table("legal_holds")
    with op.batch_alter_table("audit_events", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_audit_events_subject_type_subject_id_occurred_at"))
        batch_op.drop_index(batch_op.f("ix_audit_events_occurred_at_id"))

    op.drop_table("audit_events")
