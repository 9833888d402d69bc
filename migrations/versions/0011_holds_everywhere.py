"""Legal holds on every path (docs/lifecycle.md; docs/lifecycle.md).

* Hold idempotency keys are scoped per workspace: unique on (workspace, key) for create and
  for release, so one workspace's token can neither learn nor pre-claim another's keys.
* `audit_events.severity`: holds are audited `critical`, the rest `info`.
* `workspace_timeline_evidence.held_content_json`: a message recalled while a legal hold
  reaches its workspace is redacted in its columns (so no view shows it) and its content set
  aside here until the hold is released; the lifecycle sweep then drops it.
* `lifecycle_retired_partitions`: the Dagster window partitions whose window states a purge
  deleted, written in the purge's own transaction, so a sensor forgets them in Dagster
  whichever path purged them.

Revision ID: 0011_holds_everywhere
Revises: 0010_chat_pins
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import timeline_pipeline.db.types

revision: str = "0011_holds_everywhere"
down_revision: str | None = "0010_chat_pins"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_UTC = timeline_pipeline.db.types.UTCDateTime(timezone=True)
_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("legal_holds") as batch_op:
        batch_op.drop_constraint("uq_legal_holds_create_idempotency_key", type_="unique")
        batch_op.drop_constraint("uq_legal_holds_release_idempotency_key", type_="unique")
        batch_op.create_unique_constraint(
            "uq_legal_holds_workspace_id_create_idempotency_key",
            ["workspace_id", "create_idempotency_key"],
        )
        batch_op.create_unique_constraint(
            "uq_legal_holds_workspace_id_release_idempotency_key",
            ["workspace_id", "release_idempotency_key"],
        )
    with op.batch_alter_table("audit_events") as batch_op:
        batch_op.add_column(
            sa.Column(
                "severity", sa.String(length=16), server_default=sa.text("'info'"), nullable=False
            )
        )
    with op.batch_alter_table("workspace_timeline_evidence") as batch_op:
        batch_op.add_column(sa.Column("held_content_json", _JSON, nullable=True))
    op.create_table(
        "lifecycle_retired_partitions",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("partition_key", sa.String(length=512), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("run_id", _ID, nullable=True),
        sa.Column("retired_at", _UTC, nullable=False),
        sa.Column("forgotten_at", _UTC, nullable=True),
        sa.CheckConstraint(
            "status IN ('pending', 'done')", name=op.f("ck_lifecycle_retired_partitions_status")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lifecycle_retired_partitions")),
        sa.UniqueConstraint(
            "partition_key", name=op.f("uq_lifecycle_retired_partitions_partition_key")
        ),
    )
    op.create_index(
        "ix_lifecycle_retired_partitions_status_id",
        "lifecycle_retired_partitions",
        ["status", "id"],
    )
    op.create_index(
        "ix_lifecycle_retired_partitions_retired_at_id",
        "lifecycle_retired_partitions",
        ["retired_at", "id"],
    )


def downgrade() -> None:
    op.drop_index(
        "ix_lifecycle_retired_partitions_retired_at_id", table_name="lifecycle_retired_partitions"
    )
    op.drop_index(
        "ix_lifecycle_retired_partitions_status_id", table_name="lifecycle_retired_partitions"
    )
    op.drop_table("lifecycle_retired_partitions")
    with op.batch_alter_table("workspace_timeline_evidence") as batch_op:
        batch_op.drop_column("held_content_json")
    with op.batch_alter_table("audit_events") as batch_op:
        batch_op.drop_column("severity")
    with op.batch_alter_table("legal_holds") as batch_op:
        batch_op.drop_constraint(
            "uq_legal_holds_workspace_id_release_idempotency_key", type_="unique"
        )
        batch_op.drop_constraint(
            "uq_legal_holds_workspace_id_create_idempotency_key", type_="unique"
        )
        batch_op.create_unique_constraint(
            "uq_legal_holds_create_idempotency_key", ["create_idempotency_key"]
        )
        batch_op.create_unique_constraint(
            "uq_legal_holds_release_idempotency_key", ["release_idempotency_key"]
        )
