"""Workspace-scoped bearer tokens for the HTTP API, stored only as hashes.

Tokens are 256-bit random values, so a plain SHA-256 is enough to make a leaked table useless
(a slow password hash buys nothing against that entropy and would cost every request).
"""

from __future__ import annotations

import hmac
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Connection, select

from timeline_pipeline.db.schema import api_tokens
from timeline_pipeline.security.credentials import hash_secret, new_secret
from timeline_pipeline.store import workspaces

TOKEN_PREFIX = "tlp_"  # noqa: S105 - a public prefix, not a secret

SCOPE_TIMELINE_READ = "timeline:read"
SCOPE_TIMELINE_CURATE = "timeline:curate"
SCOPE_HOLD_CREATE = "lifecycle:hold:create"
SCOPE_HOLD_RELEASE = "lifecycle:hold:release"
SCOPES = (SCOPE_TIMELINE_READ, SCOPE_TIMELINE_CURATE, SCOPE_HOLD_CREATE, SCOPE_HOLD_RELEASE)
DEFAULT_SCOPES = (SCOPE_TIMELINE_READ, SCOPE_TIMELINE_CURATE)
"""What `token create` grants unless told otherwise: the timeline scopes. Creating and
releasing legal holds are separate scopes, each granted explicitly (docs/lifecycle.md, "Legal
holds")."""


class UnknownScope(ValueError):
    """A scope that is not one of SCOPES."""


class TokenNotFound(Exception):
    """No such token id (or it belongs to another workspace)."""


@dataclass(frozen=True, slots=True)
class IssuedToken:
    id: str
    workspace_id: str
    token: str  # shown once, never stored
    created_at: datetime
    scopes: tuple[str, ...] = DEFAULT_SCOPES


@dataclass(frozen=True, slots=True)
class TokenInfo:
    id: str
    workspace_id: str
    created_at: datetime
    revoked_at: datetime | None
    scopes: tuple[str, ...] = DEFAULT_SCOPES


@dataclass(frozen=True, slots=True)
class Grant:
    """What a valid token may do: its workspace matched, with these scopes."""

    scopes: frozenset[str]
    token_id: str = ""
    """Who acts: the token's id, written into the audit trail as `token:<id>`."""


def _scopes(text: str | None) -> tuple[str, ...]:
    return tuple((text or "").split())


def create(
    conn: Connection, workspace_id: str, scopes: tuple[str, ...] = DEFAULT_SCOPES
) -> IssuedToken:
    unknown = sorted(set(scopes) - set(SCOPES))
    if unknown or not scopes:
        raise UnknownScope(f"--scope: unknown or no scope {unknown} (known: {', '.join(SCOPES)})")
    workspaces.require(conn, workspace_id)
    token = TOKEN_PREFIX + new_secret()
    chosen = tuple(s for s in SCOPES if s in set(scopes))
    issued = IssuedToken(
        id=f"tok_{uuid.uuid4().hex[:16]}",
        workspace_id=workspace_id,
        token=token,
        created_at=datetime.now(UTC),
        scopes=chosen,
    )
    conn.execute(
        api_tokens.insert().values(
            id=issued.id,
            workspace_id=workspace_id,
            token_hash=hash_secret(token),
            created_at=issued.created_at,
            scopes=" ".join(chosen),
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
    return TokenInfo(row.id, row.workspace_id, row.created_at, row.revoked_at, _scopes(row.scopes))


def list_for(conn: Connection, workspace_id: str) -> list[TokenInfo]:
    rows = conn.execute(
        select(api_tokens)
        .where(api_tokens.c.workspace_id == workspace_id)
        .order_by(api_tokens.c.created_at)
    )
    return [
        TokenInfo(r.id, r.workspace_id, r.created_at, r.revoked_at, _scopes(r.scopes)) for r in rows
    ]


def authorize(conn: Connection, token: str, workspace_id: str) -> bool | None:
    """None: unknown or revoked token (401). False: valid for another workspace (403)."""
    grant = authorize_scoped(conn, token, workspace_id)
    return grant if grant is None or grant is False else True


def authorize_scoped(conn: Connection, token: str, workspace_id: str) -> Grant | bool | None:
    """None: unknown or revoked token (401). False: valid for another workspace (403).
    Otherwise the token's grant on this workspace (each route checks its scope)."""
    if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
        return None
    row = conn.execute(
        select(
            api_tokens.c.id,
            api_tokens.c.workspace_id,
            api_tokens.c.token_hash,
            api_tokens.c.scopes,
        ).where(api_tokens.c.token_hash == hash_secret(token), api_tokens.c.revoked_at.is_(None))
    ).first()
    if row is None or not hmac.compare_digest(row.token_hash, hash_secret(token)):
        return None
    if row.workspace_id != workspace_id:
        return False
    return Grant(frozenset(_scopes(row.scopes)), token_id=row.id)
