"""Callback token hashes (`interaction_tokens`): which card a token was issued for."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, select

from timeline_pipeline.db.schema import interaction_tokens as it
from timeline_pipeline.domain.lifecycle import (
    DelegatedPurge,
    ExecutionMode,
    LegalHoldNote,
    LifecycleDescriptor,
    RequiredIndex,
    RetentionClass,
    Scope,
)
from timeline_pipeline.domain.lifecycle_declare import (
    BACKUP_NOTES,
    HARD_DELETE,
    NOT_ARCHIVED,
    NOT_PARTITIONED,
)
from timeline_pipeline.security.callback_tokens import new_token, token_hash


def issue(conn: Connection, request_id: int, *, now: datetime) -> str:
    """A new random token for the card; only its hash is stored, the token is returned once."""
    token = new_token()
    conn.execute(
        it.insert().values(token_hash=token_hash(token), request_id=request_id, created_at=now)
    )
    return token


def card_of(conn: Connection, token: str) -> int | None:
    """The card the token was issued for, or None for a token never issued."""
    return conn.execute(
        select(it.c.request_id).where(it.c.token_hash == token_hash(token))
    ).scalar_one_or_none()


# --- lifecycle -------------------------------------------------------------------------------

DESCRIPTOR = LifecycleDescriptor(
    key="interaction_tokens.interaction_tokens",
    table_name="interaction_tokens",
    owner="interaction_tokens",
    scope=Scope.GLOBAL,
    cursor_column="created_at",
    retention_class=RetentionClass.OPERATIONAL_QUEUE,
    retention_min_days=7,
    retention_max_days=365,
    default_retention_days=30,
    partition=NOT_PARTITIONED,
    archive=NOT_ARCHIVED,
    deletion=HARD_DELETE,
    legal_hold=LegalHoldNote(),
    backup_restore_notes=BACKUP_NOTES,
    required_indexes=(RequiredIndex(("request_id",), "deleted with its card"),),
    batch_limit=5_000,
    execution_mode=ExecutionMode.DELEGATED,
    delegated=DelegatedPurge(
        purge_function="ON DELETE CASCADE from interaction_requests",
        job="lifecycle_purge (interaction_requests.interaction_requests)",
        description="Callback token hashes live exactly as long as their card.",
    ),
    workspace_column=None,
    id_column="token_hash",
)
