"""Review cards: the interaction store (cards and their hashed callback tokens) and the durable
admission queue that the worker drains (docs/review-cards.md).

Revision ID: 0007_interactions
Revises: 0006_maintenance
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import timeline_pipeline.db.types

revision: str = "0007_interactions"
down_revision: str | None = "0006_maintenance"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "interaction_requests",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("workspace_id", sa.String(length=128), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column(
            "window_state_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True
        ),
        sa.Column("processor_version", sa.String(length=64), nullable=False),
        sa.Column("idempotency_uuid", sa.String(length=50), nullable=False),
        sa.Column("bot_app_id", sa.String(length=128), nullable=True),
        sa.Column("chat_id", sa.String(length=256), nullable=False),
        sa.Column("reply_to_message_id", sa.String(length=256), nullable=True),
        sa.Column("message_id", sa.String(length=256), nullable=True),
        sa.Column("thread_id", sa.String(length=256), nullable=True),
        sa.Column("delivery_status", sa.String(length=16), nullable=False),
        sa.Column("delivery_attempts", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("delivery_owner", sa.String(length=128), nullable=True),
        sa.Column(
            "delivery_due_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column(
            "delivered_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column(
            "request_json",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "decisions_json",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("revision", sa.Integer(), server_default=sa.text("1"), nullable=False),
        sa.Column(
            "expires_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "created_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "updated_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.CheckConstraint(
            "delivery_status IN ('queued', 'sent', 'failed')",
            name=op.f("ck_interaction_requests_delivery_status"),
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
            "idempotency_uuid", name=op.f("uq_interaction_requests_idempotency_uuid")
        ),
        sa.UniqueConstraint("message_id", name=op.f("uq_interaction_requests_message_id")),
    )
    with op.batch_alter_table("interaction_requests", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_interaction_requests_delivery_status_delivery_due_at"),
            ["delivery_status", "delivery_due_at"],
            unique=False,
        )
        batch_op.create_index(
            batch_op.f("ix_interaction_requests_status_expires_at"),
            ["status", "expires_at"],
            unique=False,
        )
        batch_op.create_index(
            batch_op.f("ix_interaction_requests_workspace_id_created_at"),
            ["workspace_id", "created_at"],
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
        sa.Column(
            "request_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("workspace_id", sa.String(length=128), nullable=False),
        sa.Column("event_id", sa.String(length=128), nullable=False),
        sa.Column("decision_key", sa.String(length=256), nullable=False),
        sa.Column("entry_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("entry_revision", sa.Integer(), nullable=False),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column(
            "value_json",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("actor_open_id", sa.String(length=128), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("revision", sa.Integer(), server_default=sa.text("1"), nullable=False),
        sa.Column("lease_owner", sa.String(length=128), nullable=True),
        sa.Column(
            "lease_expires_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column("outcome", sa.String(length=64), nullable=True),
        sa.Column(
            "admitted_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "applied_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column(
            "finished_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.CheckConstraint(
            "status IN ('queued', 'applied', 'done', 'failed')",
            name=op.f("ck_interaction_admissions_status"),
        ),
        sa.ForeignKeyConstraint(
            ["request_id"],
            ["interaction_requests.id"],
            name=op.f("fk_interaction_admissions_request_id_interaction_requests"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_interaction_admissions_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_interaction_admissions")),
        sa.UniqueConstraint("decision_key", name=op.f("uq_interaction_admissions_decision_key")),
        sa.UniqueConstraint("event_id", name=op.f("uq_interaction_admissions_event_id")),
    )
    with op.batch_alter_table("interaction_admissions", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_interaction_admissions_request_id"), ["request_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_interaction_admissions_status_lease_expires_at_id"),
            ["status", "lease_expires_at", "id"],
            unique=False,
        )
        batch_op.create_index(
            batch_op.f("ix_interaction_admissions_workspace_id_status"),
            ["workspace_id", "status"],
            unique=False,
        )

    op.create_table(
        "interaction_tokens",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column(
            "request_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column(
            "created_at", timeline_pipeline.db.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["request_id"],
            ["interaction_requests.id"],
            name=op.f("fk_interaction_tokens_request_id_interaction_requests"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("token_hash", name=op.f("pk_interaction_tokens")),
    )
    with op.batch_alter_table("interaction_tokens", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_interaction_tokens_request_id"), ["request_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("interaction_tokens", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_interaction_tokens_request_id"))

    op.drop_table("interaction_tokens")
    with op.batch_alter_table("interaction_admissions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_interaction_admissions_workspace_id_status"))
        batch_op.drop_index(batch_op.f("ix_interaction_admissions_status_lease_expires_at_id"))
        batch_op.drop_index(batch_op.f("ix_interaction_admissions_request_id"))

    op.drop_table("interaction_admissions")
    with op.batch_alter_table("interaction_requests", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_interaction_requests_workspace_id_created_at"))
        batch_op.drop_index(batch_op.f("ix_interaction_requests_status_expires_at"))
        batch_op.drop_index(batch_op.f("ix_interaction_requests_delivery_status_delivery_due_at"))

    op.drop_table("interaction_requests")
