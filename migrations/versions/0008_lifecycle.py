"""Data lifecycle: legal holds, lifecycle runs, token scopes, and the purge's keyset indexes.

Entry evidence bindings gain an `id` primary key and their workspace, so that the lifecycle
engine purges them (leaves first) by the same workspace + cursor keyset as every other table;
the old (entry_id, evidence_id) key stays unique. API tokens gain scopes: tokens made before this
keep the timeline scopes they always had, and the legal-hold scopes are granted explicitly.

Revision ID: 0008_lifecycle
Revises: 0007_interactions
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import timeline_pipeline.db.types

revision: str = "0008_lifecycle"
down_revision: str | None = "0007_interactions"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BINDINGS = "workspace_timeline_entry_evidence"
_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_UTC = timeline_pipeline.db.types.UTCDateTime(timezone=True)
_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def _bindings_pg() -> None:
    op.execute(f"ALTER TABLE {BINDINGS} DROP CONSTRAINT pk_{BINDINGS}")
    op.execute(f"ALTER TABLE {BINDINGS} ADD COLUMN id BIGSERIAL")
    op.execute(f"ALTER TABLE {BINDINGS} ADD CONSTRAINT pk_{BINDINGS} PRIMARY KEY (id)")
    op.execute(f"ALTER TABLE {BINDINGS} ADD COLUMN workspace_id VARCHAR(128)")
    op.execute(
        "UPDATE workspace_timeline_entry_evidence b SET workspace_id = e.workspace_id "
        "FROM workspace_timeline_entries e WHERE e.id = b.entry_id"
    )
    op.execute(f"ALTER TABLE {BINDINGS} ALTER COLUMN workspace_id SET NOT NULL")
    op.create_foreign_key(
        f"fk_{BINDINGS}_workspace_id_workspaces",
        BINDINGS,
        "workspaces",
        ["workspace_id"],
        ["id"],
        ondelete="CASCADE",
    )
    op.create_unique_constraint(
        f"uq_{BINDINGS}_entry_id_evidence_id", BINDINGS, ["entry_id", "evidence_id"]
    )


def _bindings_sqlite() -> None:
    # SQLite cannot change a primary key in place: copy into a table of the new shape.
    op.drop_index(f"ix_{BINDINGS}_evidence_id", table_name=BINDINGS)
    op.rename_table(BINDINGS, f"{BINDINGS}_old")
    op.create_table(
        BINDINGS,
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("workspace_id", sa.String(length=128), nullable=False),
        sa.Column("entry_id", _ID, nullable=False),
        sa.Column("evidence_id", _ID, nullable=False),
        sa.Column("created_at", _UTC, nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=f"fk_{BINDINGS}_workspace_id_workspaces",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["entry_id"],
            ["workspace_timeline_entries.id"],
            name=f"fk_{BINDINGS}_entry_id_workspace_timeline_entries",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["evidence_id"],
            ["workspace_timeline_evidence.id"],
            name=f"fk_{BINDINGS}_evidence_id_workspace_timeline_evidence",
            ondelete="RESTRICT",
        ),
        sa.PrimaryKeyConstraint("id", name=f"pk_{BINDINGS}"),
        sa.UniqueConstraint("entry_id", "evidence_id", name=f"uq_{BINDINGS}_entry_id_evidence_id"),
    )
    op.execute(
        "INSERT INTO workspace_timeline_entry_evidence "
        "(workspace_id, entry_id, evidence_id, created_at) "
        "SELECT e.workspace_id, o.entry_id, o.evidence_id, o.created_at "
        "FROM workspace_timeline_entry_evidence_old o "
        "JOIN workspace_timeline_entries e ON e.id = o.entry_id "
        "ORDER BY o.created_at, o.entry_id, o.evidence_id"
    )
    op.drop_table(f"{BINDINGS}_old")
    op.create_index(f"ix_{BINDINGS}_evidence_id", BINDINGS, ["evidence_id"])


def upgrade() -> None:
    if op.get_context().dialect.name == "postgresql":
        _bindings_pg()
    else:
        _bindings_sqlite()
    op.create_index(
        f"ix_{BINDINGS}_workspace_id_created_at_id", BINDINGS, ["workspace_id", "created_at", "id"]
    )
    op.create_index(
        "ix_workspace_timeline_evidence_workspace_id_occurred_at_id",
        "workspace_timeline_evidence",
        ["workspace_id", "occurred_at", "id"],
    )
    op.create_index(
        "ix_workspace_timeline_sync_states_workspace_id_updated_at_id",
        "workspace_timeline_sync_states",
        ["workspace_id", "updated_at", "id"],
    )
    op.create_index(
        "ix_workspace_timeline_summaries_workspace_id_updated_at_id",
        "workspace_timeline_summaries",
        ["workspace_id", "updated_at", "id"],
    )
    with op.batch_alter_table("api_tokens") as batch_op:
        batch_op.add_column(
            sa.Column(
                "scopes",
                sa.String(length=512),
                server_default=sa.text("'timeline:read timeline:curate'"),
                nullable=False,
            )
        )
    op.create_table(
        "legal_holds",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("workspace_id", sa.String(length=128), nullable=False),
        sa.Column("descriptor_key", sa.String(length=128), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("revision", sa.Integer(), server_default=sa.text("1"), nullable=False),
        sa.Column("reason", sa.String(length=1000), nullable=False),
        sa.Column("review_at", _UTC, nullable=True),
        sa.Column("created_by", sa.String(length=128), nullable=False),
        sa.Column("create_idempotency_key", sa.String(length=256), nullable=False),
        sa.Column("create_request_hash", sa.String(length=64), nullable=False),
        sa.Column("released_at", _UTC, nullable=True),
        sa.Column("released_by", sa.String(length=128), nullable=True),
        sa.Column("release_reason", sa.String(length=1000), nullable=True),
        sa.Column("release_idempotency_key", sa.String(length=256), nullable=True),
        sa.Column("release_request_hash", sa.String(length=64), nullable=True),
        sa.Column("created_at", _UTC, nullable=False),
        sa.Column("updated_at", _UTC, nullable=False),
        sa.CheckConstraint("status IN ('active', 'released')", name=op.f("ck_legal_holds_status")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_legal_holds")),
        sa.UniqueConstraint(
            "create_idempotency_key", name=op.f("uq_legal_holds_create_idempotency_key")
        ),
        sa.UniqueConstraint(
            "release_idempotency_key", name=op.f("uq_legal_holds_release_idempotency_key")
        ),
    )
    op.create_index("ix_legal_holds_status_workspace_id", "legal_holds", ["status", "workspace_id"])
    op.create_table(
        "lifecycle_runs",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("run_key", sa.String(length=64), nullable=False),
        sa.Column("mode", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("workspace_id", sa.String(length=128), nullable=True),
        sa.Column("descriptor_key", sa.String(length=128), nullable=True),
        sa.Column("as_of", _UTC, nullable=False),
        sa.Column("retention_days_override", sa.Integer(), nullable=True),
        sa.Column("archive_dir", sa.String(length=1024), nullable=True),
        sa.Column("scanned", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("held", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("archived", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("purged", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("redacted", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("batches", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("counts_json", _JSON, nullable=False),
        sa.Column("error_code", sa.String(length=64), nullable=True),
        sa.Column("error_message", sa.String(length=1000), nullable=True),
        sa.Column("started_at", _UTC, nullable=False),
        sa.Column("heartbeat_at", _UTC, nullable=False),
        sa.Column("finished_at", _UTC, nullable=True),
        sa.CheckConstraint(
            "status IN ('running', 'succeeded', 'failed')", name=op.f("ck_lifecycle_runs_status")
        ),
        sa.CheckConstraint("mode IN ('dry_run', 'purge')", name=op.f("ck_lifecycle_runs_mode")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lifecycle_runs")),
        sa.UniqueConstraint("run_key", name=op.f("uq_lifecycle_runs_run_key")),
    )
    op.create_index("ix_lifecycle_runs_started_at_id", "lifecycle_runs", ["started_at", "id"])
    op.create_index(
        "ix_ui_signin_links_workspace_id_expires_at_id",
        "ui_signin_links",
        ["workspace_id", "expires_at", "id"],
    )
    op.create_index(
        "ix_ui_sessions_workspace_id_expires_at_id",
        "ui_sessions",
        ["workspace_id", "expires_at", "id"],
    )
    op.create_index("ix_ui_sessions_link_id", "ui_sessions", ["link_id"])
    op.create_index(
        "ix_interaction_requests_workspace_id_expires_at_id",
        "interaction_requests",
        ["workspace_id", "expires_at", "id"],
    )
    op.create_index(
        "ix_interaction_admissions_workspace_id_admitted_at_id",
        "interaction_admissions",
        ["workspace_id", "admitted_at", "id"],
    )
    op.create_index("ix_maintenance_jobs_updated_at_id", "maintenance_jobs", ["updated_at", "id"])


def downgrade() -> None:
    op.drop_index("ix_maintenance_jobs_updated_at_id", table_name="maintenance_jobs")
    op.drop_index(
        "ix_interaction_admissions_workspace_id_admitted_at_id",
        table_name="interaction_admissions",
    )
    op.drop_index(
        "ix_interaction_requests_workspace_id_expires_at_id", table_name="interaction_requests"
    )
    op.drop_index("ix_ui_sessions_link_id", table_name="ui_sessions")
    op.drop_index("ix_ui_sessions_workspace_id_expires_at_id", table_name="ui_sessions")
    op.drop_index("ix_ui_signin_links_workspace_id_expires_at_id", table_name="ui_signin_links")
    op.drop_index("ix_lifecycle_runs_started_at_id", table_name="lifecycle_runs")
    op.drop_table("lifecycle_runs")
    op.drop_index("ix_legal_holds_status_workspace_id", table_name="legal_holds")
    op.drop_table("legal_holds")
    with op.batch_alter_table("api_tokens") as batch_op:
        batch_op.drop_column("scopes")
    op.drop_index(
        "ix_workspace_timeline_summaries_workspace_id_updated_at_id",
        table_name="workspace_timeline_summaries",
    )
    op.drop_index(
        "ix_workspace_timeline_sync_states_workspace_id_updated_at_id",
        table_name="workspace_timeline_sync_states",
    )
    op.drop_index(
        "ix_workspace_timeline_evidence_workspace_id_occurred_at_id",
        table_name="workspace_timeline_evidence",
    )
    op.drop_index(f"ix_{BINDINGS}_workspace_id_created_at_id", table_name=BINDINGS)
    # Bindings keep their new columns on the way down: their old key stays unique, so the code
    # of 0004 keeps working against them.
