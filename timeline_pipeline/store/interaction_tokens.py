"""Callback token hashes (`interaction_tokens`): which card a token was issued for."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, select

from timeline_pipeline.db.schema import interaction_tokens as it
from timeline_pipeline.domain.lifecycle import DelegatedPurge, RequiredIndex, RetentionClass, Scope
from timeline_pipeline.domain.lifecycle_declare import declare
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

DESCRIPTOR = declare(
    __name__,
    "interaction_tokens",
    RetentionClass.OPERATIONAL_QUEUE,
    cursor_column="created_at",
    min_days=7,
    scope=Scope.GLOBAL,
    workspace_column=None,
    id_column="token_hash",
    indexes=(RequiredIndex(("request_id",), "deleted with its card"),),
    delegated=DelegatedPurge(
        purge_function="ON DELETE CASCADE from interaction_requests",
        job="lifecycle_purge (interaction_requests.interaction_requests)",
        description="Callback token hashes live exactly as long as their card.",
    ),
)
