"""Workspaces, their Lark chat bindings and curators."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Row
from sqlalchemy.exc import IntegrityError

from timeline_pipeline.db.schema import WORKSPACE_STATUSES
from timeline_pipeline.db.schema import workspace_collaboration_resources as res
from timeline_pipeline.db.schema import workspace_curators as cur
from timeline_pipeline.db.schema import workspaces as ws
from timeline_pipeline.domain.keys import RESOURCE_LARK_CHAT, check_lark_id, check_workspace_id


class WorkspaceError(Exception):
    """A workspace operation refused for a reason the operator can act on."""


class WorkspaceExists(WorkspaceError):
    pass


class WorkspaceNotFound(WorkspaceError):
    pass


@dataclass(frozen=True, slots=True)
class Workspace:
    id: str
    type: str
    status: str
    title: str | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class ChatBinding:
    workspace: Workspace
    chat_id: str
    bound_at: datetime


def _max_chars(column: Any) -> int:
    length = getattr(column.type, "length", None)
    assert isinstance(length, int)
    return length


_TYPE_MAX_CHARS = _max_chars(ws.c.type)
_TITLE_MAX_CHARS = _max_chars(ws.c.title)


def _to_workspace(row: Row[Any]) -> Workspace:
    return Workspace(row.id, row.type, row.status, row.title, row.created_at, row.updated_at)


def create(
    conn: Connection,
    workspace_id: str,
    *,
    type_: str = "incident",
    status: str = "firing",
    created_at: datetime | None = None,
    title: str | None = None,
) -> Workspace:
    check_workspace_id(workspace_id)
    if status not in WORKSPACE_STATUSES:
        raise WorkspaceError(
            f"invalid status {status!r}: expected one of {', '.join(WORKSPACE_STATUSES)}"
        )
    if not type_ or len(type_) > _TYPE_MAX_CHARS:
        raise WorkspaceError(f"invalid workspace type: 1-{_TYPE_MAX_CHARS} characters")
    if title is not None and len(title) > _TITLE_MAX_CHARS:
        # SQLite would store it, PostgreSQL refuse it: one rule for both, from the column.
        raise WorkspaceError(f"invalid title: at most {_TITLE_MAX_CHARS} characters")
    now = datetime.now(UTC)
    created = created_at or now
    if created.tzinfo is None:
        raise WorkspaceError("invalid --created-at: give a timezone, e.g. 2026-11-29T10:00:00Z")
    try:
        with conn.begin_nested():
            conn.execute(
                ws.insert().values(
                    id=workspace_id,
                    type=type_,
                    status=status,
                    title=title,
                    created_at=created,
                    updated_at=now,
                )
            )
    except IntegrityError:
        raise WorkspaceExists(f"workspace {workspace_id!r} already exists") from None
    found = get(conn, workspace_id)
    assert found is not None
    return found


def get(conn: Connection, workspace_id: str) -> Workspace | None:
    row = conn.execute(select(ws).where(ws.c.id == workspace_id)).first()
    return _to_workspace(row) if row else None


def require(conn: Connection, workspace_id: str) -> Workspace:
    found = get(conn, workspace_id)
    if found is None:
        raise WorkspaceNotFound(f"workspace {workspace_id!r} does not exist")
    return found


def list_all(conn: Connection, *, limit: int = 1000) -> list[Workspace]:
    rows = conn.execute(select(ws).order_by(ws.c.created_at, ws.c.id).limit(limit))
    return [_to_workspace(r) for r in rows]


def set_status(conn: Connection, workspace_id: str, status: str) -> Workspace:
    if status not in WORKSPACE_STATUSES:
        raise WorkspaceError(f"invalid status {status!r}")
    result = conn.execute(
        ws.update()
        .where(ws.c.id == workspace_id)
        .values(status=status, updated_at=datetime.now(UTC))
    )
    if result.rowcount != 1:
        raise WorkspaceNotFound(f"workspace {workspace_id!r} does not exist")
    return require(conn, workspace_id)


def _insert(conn: Connection, table: Any) -> Any:
    return (postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert)(table)


def bind_chat(conn: Connection, workspace_id: str, chat_id: str) -> bool:
    """Bind a Lark chat to a workspace; True when new. A chat may serve several workspaces."""
    check_lark_id(chat_id)
    require(conn, workspace_id)
    result = conn.execute(
        _insert(conn, res)
        .values(
            workspace_id=workspace_id,
            resource_type=RESOURCE_LARK_CHAT,
            resource_key=chat_id,
            created_at=datetime.now(UTC),
        )
        .on_conflict_do_nothing()
        .returning(res.c.id)
    )
    # RETURNING, not rowcount: psycopg reports -1 for INSERT ... ON CONFLICT DO NOTHING.
    return result.first() is not None


def chats_of(conn: Connection, workspace_id: str) -> list[str]:
    rows = conn.execute(
        select(res.c.resource_key)
        .where(res.c.workspace_id == workspace_id, res.c.resource_type == RESOURCE_LARK_CHAT)
        .order_by(res.c.resource_key)
    )
    return [r.resource_key for r in rows]


def bindings_for_chat(conn: Connection, chat_id: str) -> list[ChatBinding]:
    """Every workspace a chat is bound to, read from the database (never from startup state)."""
    rows = conn.execute(
        select(ws, res.c.resource_key, res.c.created_at.label("bound_at"))
        .join(res, res.c.workspace_id == ws.c.id)
        .where(res.c.resource_type == RESOURCE_LARK_CHAT, res.c.resource_key == chat_id)
        .order_by(ws.c.id)
    )
    return [ChatBinding(_to_workspace(r), r.resource_key, r.bound_at) for r in rows]


def all_bindings(conn: Connection, *, statuses: Sequence[str] | None = None) -> list[ChatBinding]:
    stmt = (
        select(ws, res.c.resource_key, res.c.created_at.label("bound_at"))
        .join(res, res.c.workspace_id == ws.c.id)
        .where(res.c.resource_type == RESOURCE_LARK_CHAT)
        .order_by(ws.c.created_at, ws.c.id, res.c.resource_key)
    )
    if statuses is not None:
        stmt = stmt.where(ws.c.status.in_(list(statuses)))
    return [ChatBinding(_to_workspace(r), r.resource_key, r.bound_at) for r in conn.execute(stmt)]


def add_curator(conn: Connection, workspace_id: str, open_id: str) -> bool:
    check_lark_id(open_id, "open_id")
    require(conn, workspace_id)
    result = conn.execute(
        _insert(conn, cur)
        .values(workspace_id=workspace_id, open_id=open_id, created_at=datetime.now(UTC))
        .on_conflict_do_nothing()
        .returning(cur.c.open_id)
    )
    return result.first() is not None


def curators_of(conn: Connection, workspace_id: str) -> list[str]:
    rows = conn.execute(
        select(cur.c.open_id).where(cur.c.workspace_id == workspace_id).order_by(cur.c.open_id)
    )
    return [r.open_id for r in rows]
