"""Build only what runs: drop the tables of subsystems that do not exist yet, and make an
entry's evidence binding RESTRICT its evidence.

The interaction, legal-hold, lifecycle-run and maintenance-job tables were created ahead of
their code by the first migration and had drifted from what those subsystems will need; each
subsystem now adds its own tables in its own migration, with its code. An evidence row bound to
an entry can no longer be deleted from under it: the lifecycle engine purges leaves first, and
a cascade here would hide a wrong order.

Revision ID: 0004_build_only_what_runs
Revises: 0003_reconcile_threads
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import timeline_pipeline.db.types

revision: str = "0004_build_only_what_runs"
down_revision: str | None = "0003_reconcile_threads"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BINDINGS = "workspace_timeline_entry_evidence"
EVIDENCE_FK = "fk_workspace_timeline_entry_evidence_evidence_id_workspace_timeline_evidence"
NAMING = {"fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s"}


def _evidence_fk(ondelete: str) -> None:
    if op.get_context().dialect.name == "postgresql":
        # The convention's name is over PostgreSQL's 63 characters, so 0001 stored a shortened
        # one: find it by its column.
        (name,) = (
            fk["name"]
            for fk in sa.inspect(op.get_bind()).get_foreign_keys(BINDINGS)
            if fk["constrained_columns"] == ["evidence_id"]
        )
        op.execute(f'ALTER TABLE {BINDINGS} DROP CONSTRAINT "{name}"')
        op.execute(
            f'ALTER TABLE {BINDINGS} ADD CONSTRAINT "{name}" FOREIGN KEY (evidence_id) '
            f"REFERENCES workspace_timeline_evidence (id) ON DELETE {ondelete}"
        )
        return
    # SQLite reflects foreign keys without their names: the naming convention gives the batch
    # copy the name to drop, and the table is recreated with the new rule.
    with op.batch_alter_table(BINDINGS, naming_convention=NAMING) as batch_op:
        batch_op.drop_constraint(EVIDENCE_FK, type_="foreignkey")
        batch_op.create_foreign_key(
            EVIDENCE_FK,
            "workspace_timeline_evidence",
            ["evidence_id"],
            ["id"],
            ondelete=ondelete,
        )


def upgrade() -> None:
    with op.batch_alter_table("interaction_admissions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_interaction_admissions_status_lease_expires_at_id"))
    op.drop_table("interaction_admissions")
    with op.batch_alter_table("interaction_requests", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_interaction_requests_status_expires_at"))
        batch_op.drop_index(batch_op.f("ix_interaction_requests_card_message_id"))
    op.drop_table("interaction_requests")
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
    _evidence_fk("RESTRICT")


def downgrade() -> None:
    _evidence_fk("CASCADE")
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
