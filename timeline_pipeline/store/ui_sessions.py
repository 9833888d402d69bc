"""Sign-in links and sessions of the timeline page (`ui_signin_links`, `ui_sessions`).

The only module with these tables' SQL. Secrets are stored as SHA-256 hashes only: a link is
256 random bits that works once within its TTL, a session cookie 256 random bits too, so a plain
hash makes a leaked table useless (docs/timeline-page.md). Redeeming a link is one
conditional UPDATE, so two tabs opening the same link cannot both sign in.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Table, select

from timeline_pipeline.db.rows import record_where, workspace_records
from timeline_pipeline.db.schema import ui_sessions as ses
from timeline_pipeline.db.schema import ui_signin_links as links
from timeline_pipeline.domain.lifecycle import ChildLink, RequiredIndex, RetentionClass
from timeline_pipeline.domain.lifecycle_declare import declare
from timeline_pipeline.domain.records import record_of
from timeline_pipeline.security.credentials import hash_secret, new_secret
from timeline_pipeline.store import workspaces

__all__ = [
    "IssuedLink",
    "IssuedSession",
    "SessionInfo",
    "create_link",
    "end_session",
    "link_workspace",
    "open_session",
    "redeem_link",
    "revoke_for_workspace",
    "session_for",
    "sessions_of",
]

MAX_SECRET_CHARS = 200


@dataclass(frozen=True, slots=True)
class IssuedLink:
    id: str
    workspace_id: str
    token: str  # shown once, never stored
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class IssuedSession:
    id: str
    workspace_id: str
    secret: str  # the cookie value, never stored
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class SessionInfo:
    id: str
    workspace_id: str
    created_at: datetime
    expires_at: datetime
    revoked_at: datetime | None


def _issue(
    conn: Connection,
    table: Table,
    prefix: str,
    workspace_id: str,
    *,
    hashed_as: str,
    now: datetime,
    ttl: timedelta,
    **values: Any,
) -> tuple[str, str, datetime]:
    """A new row of a secret (a link or a session) valid for `ttl`: its id, the secret, shown
    once, and its expiry. Only the secret's hash is stored, in column `hashed_as`."""
    secret = new_secret()
    row_id = f"{prefix}_{uuid.uuid4().hex[:16]}"
    values[hashed_as] = hash_secret(secret)
    conn.execute(
        table.insert().values(
            id=row_id, workspace_id=workspace_id, created_at=now, expires_at=now + ttl, **values
        )
    )
    return row_id, secret, now + ttl


def create_link(
    conn: Connection, workspace_id: str, *, now: datetime, ttl: timedelta
) -> IssuedLink:
    workspaces.require(conn, workspace_id)
    link_id, token, expires_at = _issue(
        conn, links, "uil", workspace_id, hashed_as="token_hash", now=now, ttl=ttl
    )
    return IssuedLink(link_id, workspace_id, token, expires_at)


def link_workspace(conn: Connection, token: str, *, now: datetime) -> str | None:
    """The workspace of a link that would be redeemed now, else None; reads only, so opening
    a link (a chat's preview fetching it included) spends nothing."""
    if not token or len(token) > MAX_SECRET_CHARS:
        return None
    row = conn.execute(
        select(links.c.workspace_id).where(
            links.c.token_hash == hash_secret(token),
            links.c.used_at.is_(None),
            links.c.expires_at > now,
        )
    ).first()
    return str(row.workspace_id) if row is not None else None


def redeem_link(conn: Connection, token: str, *, now: datetime) -> tuple[str, str] | None:
    """(link id, workspace id) when the link is unused and unexpired, marking it used; else None.

    One conditional UPDATE: of two concurrent redemptions exactly one sees a row."""
    if not token or len(token) > MAX_SECRET_CHARS:
        return None
    row = conn.execute(
        links.update()
        .where(
            links.c.token_hash == hash_secret(token),
            links.c.used_at.is_(None),
            links.c.expires_at > now,
        )
        .values(used_at=now)
        .returning(links.c.id, links.c.workspace_id)
    ).first()
    return (row.id, row.workspace_id) if row is not None else None


def open_session(
    conn: Connection, workspace_id: str, *, link_id: str | None, now: datetime, ttl: timedelta
) -> IssuedSession:
    session_id, secret, expires_at = _issue(
        conn, ses, "uis", workspace_id, hashed_as="session_hash", now=now, ttl=ttl, link_id=link_id
    )
    return IssuedSession(session_id, workspace_id, secret, expires_at)


def _info(row: object) -> SessionInfo:
    return record_of(SessionInfo, row)


def session_for(conn: Connection, secret: str, *, now: datetime) -> SessionInfo | None:
    """The live session of this cookie value: not revoked, not expired; else None."""
    if not secret or len(secret) > MAX_SECRET_CHARS:
        return None
    return record_where(
        conn,
        ses,
        _info,
        ses.c.session_hash == hash_secret(secret),
        ses.c.revoked_at.is_(None),
        ses.c.expires_at > now,
    )


def sessions_of(conn: Connection, workspace_id: str) -> list[SessionInfo]:
    return workspace_records(conn, ses, workspace_id, _info)


def revoke_for_workspace(conn: Connection, workspace_id: str, *, now: datetime) -> int:
    """Ends every live session of the workspace and voids its unused links; sessions ended."""
    conn.execute(
        links.update()
        .where(links.c.workspace_id == workspace_id, links.c.used_at.is_(None))
        .values(used_at=now)
    )
    result = conn.execute(
        ses.update()
        .where(ses.c.workspace_id == workspace_id, ses.c.revoked_at.is_(None))
        .values(revoked_at=now)
    )
    return int(result.rowcount or 0)


def end_session(conn: Connection, secret: str, *, now: datetime) -> bool:
    """Signs one session out; False when it had already ended."""
    result = conn.execute(
        ses.update()
        .where(ses.c.session_hash == hash_secret(secret), ses.c.revoked_at.is_(None))
        .values(revoked_at=now)
    )
    return bool(result.rowcount)


# --- lifecycle -------------------------------------------------------------------------------

DESCRIPTORS = (
    declare(
        __name__,
        "ui_signin_links",
        RetentionClass.AUDIT_SECURITY,
        cursor_column="expires_at",
        default_days=30,
        max_days=365,
        children=(ChildLink("ui_sessions.ui_sessions", "link_id"),),
        notes="One-time sign-in links (hashes only): useless once expired; kept 30 days after "
        "expiry to answer who signed in when.",
    ),
    declare(
        __name__,
        "ui_sessions",
        RetentionClass.AUDIT_SECURITY,
        cursor_column="expires_at",
        default_days=30,
        max_days=365,
        indexes=(RequiredIndex(("link_id",), "the sign-in links' live-child probe"),),
        notes="Page sessions (hashes only), purged 30 days after they expire.",
    ),
)
