"""Maintenance jobs: the table behind the loopback maintenance listener and its driver.

One row per job, kept after completion or cancellation for audit. The partial unique index
allows one open (ready or paused) job per type and scope; the limit checks mirror the ranges the
job service validates (docs/maintenance.md). The downgrade intentionally keeps the table,
its rows and its indexes: they are the audit trail of every job run, and an upgrade after a
downgrade finds them in place and leaves them alone.

Revision ID: 0006_maintenance
Revises: 0005_ui_sessions
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import timeline_pipeline.db.types

revision: str = "0006_maintenance"
down_revision: str | None = "0005_ui_sessions"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OPEN = "status IN ('ready', 'paused')"


def _json() -> sa.types.TypeEngine[object]:
    return sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def _utc() -> timeline_pipeline.db.types.UTCDateTime:
    return timeline_pipeline.db.types.UTCDateTime(timezone=True)


EVIDENCE_INDEX = "ix_workspace_timeline_evidence_workspace_id_id"


def _evidence_index() -> None:
    """The (workspace_id, id) index processors page by.

    The product's migrations run in one transaction, so the index cannot be built CONCURRENTLY
    here and the build blocks evidence writes while it runs. On a large PostgreSQL table an
    operator builds it first, by hand, with `CREATE INDEX CONCURRENTLY
    ix_workspace_timeline_evidence_workspace_id_id ON workspace_timeline_evidence
    (workspace_id, id)`; this migration then keeps a valid index as it is, and drops and rebuilds
    an invalid leftover of a failed concurrent build.
    """
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        valid = bind.execute(
            sa.text(
                "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                "WHERE c.relname = :name"
            ),
            {"name": EVIDENCE_INDEX},
        ).scalar()
        if valid is True:
            return
        if valid is False:
            op.execute(f"DROP INDEX {EVIDENCE_INDEX}")
    else:
        names = {ix["name"] for ix in sa.inspect(bind).get_indexes("workspace_timeline_evidence")}
        if EVIDENCE_INDEX in names:
            return
    with op.batch_alter_table("workspace_timeline_evidence", schema=None) as batch_op:
        batch_op.create_index(EVIDENCE_INDEX, ["workspace_id", "id"], unique=False)


def upgrade() -> None:
    _evidence_index()
    inspector = sa.inspect(op.get_bind())
    if inspector.has_table("maintenance_jobs"):
        return  # kept by a downgrade: the audit trail is still there
    op.create_table(
        "maintenance_jobs",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("job_type", sa.String(length=64), nullable=False),
        sa.Column("processor_version", sa.String(length=32), nullable=False),
        sa.Column("scope_key", sa.String(length=256), nullable=False),
        sa.Column("idempotency_key", sa.String(length=256), nullable=False),
        sa.Column("input_hash", sa.String(length=64), nullable=False),
        sa.Column("parameters_json", _json(), nullable=False),
        sa.Column("apply", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("phase", sa.String(length=16), nullable=False),
        sa.Column("revision", sa.Integer(), server_default=sa.text("1"), nullable=False),
        sa.Column("batch_size", sa.Integer(), nullable=False),
        sa.Column("delay_ms", sa.Integer(), nullable=False),
        sa.Column("lock_timeout_ms", sa.Integer(), nullable=False),
        sa.Column("statement_timeout_ms", sa.Integer(), nullable=False),
        sa.Column("checkpoint_json", _json(), nullable=False),
        sa.Column("progress_json", _json(), nullable=False),
        sa.Column("result_json", _json(), nullable=True),
        sa.Column("error_json", _json(), nullable=True),
        sa.Column("batches", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("not_before", _utc(), nullable=True),
        sa.Column("created_at", _utc(), nullable=False),
        sa.Column("updated_at", _utc(), nullable=False),
        sa.Column("finished_at", _utc(), nullable=True),
        sa.CheckConstraint(
            "status IN ('ready', 'paused', 'completed', 'cancelled')",
            name=op.f("ck_maintenance_jobs_status"),
        ),
        sa.CheckConstraint("phase IN ('scan', 'verify')", name=op.f("ck_maintenance_jobs_phase")),
        sa.CheckConstraint(
            "batch_size BETWEEN 1 AND 5000", name=op.f("ck_maintenance_jobs_batch_size")
        ),
        sa.CheckConstraint(
            "delay_ms BETWEEN 1 AND 60000", name=op.f("ck_maintenance_jobs_delay_ms")
        ),
        sa.CheckConstraint(
            "lock_timeout_ms >= 1 AND lock_timeout_ms <= statement_timeout_ms "
            "AND statement_timeout_ms <= 5000",
            name=op.f("ck_maintenance_jobs_timeouts"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_maintenance_jobs")),
        sa.UniqueConstraint("idempotency_key", name=op.f("uq_maintenance_jobs_idempotency_key")),
    )
    with op.batch_alter_table("maintenance_jobs", schema=None) as batch_op:
        batch_op.create_index(
            "uq_maintenance_jobs_one_open_per_scope",
            ["job_type", "scope_key"],
            unique=True,
            sqlite_where=sa.text(OPEN),
            postgresql_where=sa.text(OPEN),
        )


def downgrade() -> None:
    """Keep the jobs and the index: completed and cancelled records are retained for audit."""
