"""Workspace-scoped bearer tokens for the HTTP API, stored only as hashes.

Tokens are 256-bit random values, so a plain SHA-256 is enough to make a leaked table useless
(a slow password hash buys nothing against that entropy and would cost every request).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Connection, select

from timeline_pipeline.db.schema import api_tokens
from timeline_pipeline.store import workspaces

TOKEN_PREFIX = "tlp_"  # noqa: S105 - a public prefix, not a secret


class TokenNotFound(Exception):
    """No such token id (or it belongs to another workspace)."""


@dataclass(frozen=True, slots=True)
class IssuedToken:
    id: str
    workspace_id: str
    token: str  # shown once, never stored
    created_at: datetime


@dataclass(frozen=True, slots=True)
class TokenInfo:
    id: str
    workspace_id: str
    created_at: datetime
    revoked_at: datetime | None


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def create(conn: Connection, workspace_id: str) -> IssuedToken:
    workspaces.require(conn, workspace_id)
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    issued = IssuedToken(
        id=f"tok_{uuid.uuid4().hex[:16]}",
        workspace_id=workspace_id,
        token=token,
        created_at=datetime.now(UTC),
    )
    conn.execute(
        api_tokens.insert().values(
            id=issued.id,
            workspace_id=workspace_id,
            token_hash=hash_token(token),
            created_at=issued.created_at,
        )
    )
    return issued


def revoke(conn: Connection, token_id: str) -> TokenInfo:
    result = conn.execute(
        api_tokens.update()
        .where(api_tokens.c.id == token_id, api_tokens.c.revoked_at.is_(None))
        .values(revoked_at=datetime.now(UTC))
    )
    info = get(conn, token_id)
    if info is None:
        raise TokenNotFound(f"token {token_id!r} does not exist")
    if result.rowcount == 0 and info.revoked_at is None:  # pragma: no cover - raced
        raise TokenNotFound(f"token {token_id!r} could not be revoked")
    return info


def revoke_all(conn: Connection, workspace_id: str) -> int:
    """Revokes every live token of the workspace (its timeline page sessions are ended beside
    this, by store/ui_sessions.py); how many were live."""
    workspaces.require(conn, workspace_id)
    result = conn.execute(
        api_tokens.update()
        .where(api_tokens.c.workspace_id == workspace_id, api_tokens.c.revoked_at.is_(None))
        .values(revoked_at=datetime.now(UTC))
    )
    return int(result.rowcount or 0)


def get(conn: Connection, token_id: str) -> TokenInfo | None:
    row = conn.execute(select(api_tokens).where(api_tokens.c.id == token_id)).first()
    if row is None:
        return None
    return TokenInfo(row.id, row.workspace_id, row.created_at, row.revoked_at)


def list_for(conn: Connection, workspace_id: str) -> list[TokenInfo]:
    rows = conn.execute(
        select(api_tokens)
        .where(api_tokens.c.workspace_id == workspace_id)
        .order_by(api_tokens.c.created_at)
    )
    return [TokenInfo(r.id, r.workspace_id, r.created_at, r.revoked_at) for r in rows]


def authorize(conn: Connection, token: str, workspace_id: str) -> bool | None:
    """None: unknown or revoked token (401). False: valid for another workspace (403)."""
    if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
        return None
    row = conn.execute(
        select(api_tokens.c.workspace_id, api_tokens.c.token_hash).where(
            api_tokens.c.token_hash == hash_token(token), api_tokens.c.revoked_at.is_(None)
        )
    ).first()
    if row is None or not hmac.compare_digest(row.token_hash, hash_token(token)):
        return None
    return bool(row.workspace_id == workspace_id)
