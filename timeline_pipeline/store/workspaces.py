"""Workspaces, their Lark chat bindings and curators: the only module with SQL on
`workspaces`, `workspace_collaboration_resources` and `workspace_curators`, including the
per-chat reads of discovery and the health measurement (README, "Package layout")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Select, Table, func, select
from sqlalchemy.engine import Row
from sqlalchemy.exc import IntegrityError

from timeline_pipeline.db.rows import record_where, records
from timeline_pipeline.db.schema import WORKSPACE_STATUSES
from timeline_pipeline.db.schema import workspace_collaboration_resources as res
from timeline_pipeline.db.schema import workspace_curators as cur
from timeline_pipeline.db.schema import workspaces as ws
from timeline_pipeline.db.upsert import insert_new
from timeline_pipeline.domain.keys import (
    RESOURCE_LARK_CHAT,
    InvalidKey,
    check_lark_id,
    check_workspace_id,
)
from timeline_pipeline.domain.records import record_of
from timeline_pipeline.domain.workspaces import ChatBinding, Workspace
from timeline_pipeline.i18n.locales import check_locale_choice, check_time_zone
from timeline_pipeline.store import checkpoints, evidence, status_changes, window_states


class WorkspaceError(Exception):
    """A workspace operation refused for a reason the operator can act on."""


class WorkspaceExists(WorkspaceError):
    pass


class WorkspaceNotFound(WorkspaceError):
    pass


def _max_chars(column: Any) -> int:
    length = getattr(column.type, "length", None)
    assert isinstance(length, int)
    return length


_TYPE_MAX_CHARS = _max_chars(ws.c.type)
_TITLE_MAX_CHARS = _max_chars(ws.c.title)


def _to_workspace(row: Row[Any]) -> Workspace:
    return record_of(Workspace, row)


def create(
    conn: Connection,
    workspace_id: str,
    *,
    type_: str = "incident",
    status: str = "firing",
    created_at: datetime | None = None,
    title: str | None = None,
    locale: str | None = None,
    time_zone: str | None = None,
) -> Workspace:
    check_workspace_id(workspace_id)
    _check_language(locale, time_zone)
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
                    locale=locale,
                    time_zone=time_zone,
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
    return record_where(conn, ws, _to_workspace, ws.c.id == workspace_id)


def require(conn: Connection, workspace_id: str) -> Workspace:
    found = get(conn, workspace_id)
    if found is None:
        raise WorkspaceNotFound(f"workspace {workspace_id!r} does not exist")
    return found


def list_all(conn: Connection, *, limit: int = 1000) -> list[Workspace]:
    return records(conn, select(ws).order_by(ws.c.created_at, ws.c.id).limit(limit), _to_workspace)


def newest_with_status(conn: Connection, statuses: Sequence[str], *, limit: int) -> list[Workspace]:
    """The newest `limit` workspaces in `statuses`: what the report sensor looks at each tick
    (an incident's report changes while it is recent; docs/report.md, "When it is built")."""
    return records(
        conn,
        select(ws)
        .where(ws.c.status.in_(list(statuses)))
        .order_by(ws.c.created_at.desc(), ws.c.id.desc())
        .limit(limit),
        _to_workspace,
    )


def set_status(
    conn: Connection, workspace_id: str, status: str, *, actor: str, now: datetime | None = None
) -> Workspace:
    """Move the workspace to `status`; a real change is recorded with its actor and time
    (`store/status_changes.py`: the report's `resolved` milestone and its sensor read it)."""
    if status not in WORKSPACE_STATUSES:
        raise WorkspaceError(f"invalid status {status!r}")
    moment = now or datetime.now(UTC)
    result = conn.execute(
        ws.update()
        .where(ws.c.id == workspace_id, ws.c.status != status)
        .values(status=status, updated_at=moment)
    )
    if result.rowcount == 1:
        status_changes.record(
            conn, workspace_id=workspace_id, status=status, actor=actor, now=moment
        )
    return require(conn, workspace_id)


def _check_language(locale: str | None, time_zone: str | None) -> None:
    try:
        if locale is not None:
            check_locale_choice(locale)
        if time_zone is not None:
            check_time_zone(time_zone)
    except ValueError as exc:
        raise WorkspaceError(str(exc)) from None


_UNCHANGED: Any = object()


def set_language(
    conn: Connection,
    workspace_id: str,
    *,
    locale: str | None = _UNCHANGED,
    time_zone: str | None = _UNCHANGED,
) -> Workspace:
    """Set the workspace's locale and/or time zone (None: follow the setting again)."""
    values: dict[str, Any] = {}
    if locale is not _UNCHANGED:
        _check_language(locale, None)
        values["locale"] = locale
    if time_zone is not _UNCHANGED:
        _check_language(None, time_zone)
        values["time_zone"] = time_zone
    result = conn.execute(
        ws.update().where(ws.c.id == workspace_id).values(**values, updated_at=datetime.now(UTC))
    )
    if result.rowcount != 1:
        raise WorkspaceNotFound(f"workspace {workspace_id!r} does not exist")
    return require(conn, workspace_id)


def bind_chat(conn: Connection, workspace_id: str, chat_id: str) -> bool:
    """Bind a Lark chat to a workspace; True when new. A chat may serve several workspaces."""
    check_lark_id(chat_id)
    return _add_to_workspace(
        conn,
        res,
        {
            "workspace_id": workspace_id,
            "resource_type": RESOURCE_LARK_CHAT,
            "resource_key": chat_id,
            "created_at": datetime.now(UTC),
        },
    )


def _add_to_workspace(conn: Connection, table: Table, values: dict[str, Any]) -> bool:
    """A row that belongs to an existing workspace (`WorkspaceNotFound` otherwise), a chat
    binding or a curator; True when it is new, False when it was there already."""
    require(conn, values["workspace_id"])
    return insert_new(conn, table, values, returning=[table.c.workspace_id]) is not None


def chats_of(conn: Connection, workspace_id: str) -> list[str]:
    rows = conn.execute(
        select(res.c.resource_key)
        .where(res.c.workspace_id == workspace_id, res.c.resource_type == RESOURCE_LARK_CHAT)
        .order_by(res.c.resource_key)
    )
    return [r.resource_key for r in rows]


def _with_chats(*columns: Any) -> Select[Any]:
    """Workspaces joined to their bound chats, one row per binding: the workspace's columns,
    the chat id (`resource_key`), then `columns`."""
    return (
        select(ws, res.c.resource_key, *columns)
        .join(res, res.c.workspace_id == ws.c.id)
        .where(res.c.resource_type == RESOURCE_LARK_CHAT)
    )


def bindings_for_chat(conn: Connection, chat_id: str) -> list[ChatBinding]:
    """Every workspace a chat is bound to, read from the database (never from startup state)."""
    rows = conn.execute(
        _with_chats(res.c.created_at.label("bound_at"))
        .where(res.c.resource_key == chat_id)
        .order_by(ws.c.id)
    )
    return [ChatBinding(_to_workspace(r), r.resource_key, r.bound_at) for r in rows]


def all_bindings(conn: Connection, *, statuses: Sequence[str] | None = None) -> list[ChatBinding]:
    stmt = _with_chats(res.c.created_at.label("bound_at")).order_by(
        ws.c.created_at, ws.c.id, res.c.resource_key
    )
    if statuses is not None:
        stmt = stmt.where(ws.c.status.in_(list(statuses)))
    return [ChatBinding(_to_workspace(r), r.resource_key, r.bound_at) for r in conn.execute(stmt)]


_OPEN_ID_MAX_CHARS = _max_chars(cur.c.open_id)


def _check_open_id(open_id: str) -> None:
    check_lark_id(open_id, "open_id")
    if len(open_id) > _OPEN_ID_MAX_CHARS:
        raise InvalidKey(f"invalid open_id: at most {_OPEN_ID_MAX_CHARS} characters")


def add_curator(conn: Connection, workspace_id: str, open_id: str) -> bool:
    """True when the curator is new; an existing one is left as it is."""
    _check_open_id(open_id)
    return _add_to_workspace(
        conn,
        cur,
        {"workspace_id": workspace_id, "open_id": open_id, "created_at": datetime.now(UTC)},
    )


def remove_curator(conn: Connection, workspace_id: str, open_id: str) -> bool:
    """True when the curator was there; their past decisions stay in the audit log."""
    _check_open_id(open_id)
    require(conn, workspace_id)
    result = conn.execute(
        cur.delete().where(cur.c.workspace_id == workspace_id, cur.c.open_id == open_id)
    )
    return result.rowcount == 1


def curators_of(conn: Connection, workspace_id: str) -> list[str]:
    rows = conn.execute(
        select(cur.c.open_id).where(cur.c.workspace_id == workspace_id).order_by(cur.c.open_id)
    )
    return [r.open_id for r in rows]


def chats_curated_by(conn: Connection, open_id: str) -> list[tuple[str, str]]:
    """(workspace id, chat id) of every chat bound to a workspace `open_id` curates: where a
    pin reaction by them can land (docs/pins.md)."""
    rows = conn.execute(
        select(cur.c.workspace_id, res.c.resource_key)
        .join(res, res.c.workspace_id == cur.c.workspace_id)
        .where(cur.c.open_id == open_id, res.c.resource_type == RESOURCE_LARK_CHAT)
        .order_by(cur.c.workspace_id, res.c.resource_key)
    )
    return [(r.workspace_id, r.resource_key) for r in rows]


# --- bound chats with their positions (discovery's cold start, health) -----------------------


@dataclass(frozen=True, slots=True)
class BoundChat:
    workspace: Workspace
    chat_id: str
    latest_window_start: datetime | None
    latest_evidence_at: datetime | None


@dataclass(frozen=True, slots=True)
class FollowedChat:
    """A bound chat with the first eligible evidence after its latest window (from
    `since` when it has none) and its collection checkpoint (None: never collected)."""

    workspace: Workspace
    chat_id: str
    first_after_latest_window: datetime | None
    collected_until: datetime | None


def bound_chats_with_latest_window(
    conn: Connection, *, statuses: Sequence[str] | None = None
) -> list[BoundChat]:
    """Every bound chat (of workspaces in `statuses`, default: any status), with its latest
    default-namespace window and its latest eligible evidence.

    One statement: both are correlated "first row in descending order" subqueries that each
    database answers with a backward seek of an index ((workspace_id, scope_key, source_type,
    window_start) and (workspace_id, scope_key, occurred_at, id)), so the cost follows the
    number of chats, not the number of windows or messages they ever had.
    """
    latest = window_states.latest_window_of_chat(
        "window_start", res.c.workspace_id, res.c.resource_key
    )
    newest = evidence.latest_eligible_at(res.c.workspace_id, res.c.resource_key)
    stmt = _with_chats(
        latest.label("latest_window_start"), newest.label("latest_evidence_at")
    ).order_by(ws.c.id, res.c.resource_key)
    if statuses is not None:
        stmt = stmt.where(ws.c.status.in_(list(statuses)))
    rows = conn.execute(stmt)
    return [
        BoundChat(
            _to_workspace(row),
            row.resource_key,
            row.latest_window_start,
            row.latest_evidence_at,
        )
        for row in rows
    ]


def followed_chats(conn: Connection, *, since: datetime) -> list[FollowedChat]:
    """Every bound chat, in a workspace of any status, with the first eligible evidence after
    its latest window (or from `since` when it has none) and its collection checkpoint.

    One statement of per-chat index seeks: the latest window's end (backward seek), the first
    evidence from there (forward seek), the checkpoint (unique-key lookup).
    """
    latest_end = window_states.latest_window_of_chat(
        "window_end", res.c.workspace_id, res.c.resource_key
    )
    first_after = evidence.first_eligible_at(
        res.c.workspace_id,
        res.c.resource_key,
        at_or_after=func.coalesce(latest_end, evidence.occurred_at_param("since", since)),
    )
    collected = checkpoints.collected_until(res.c.workspace_id, res.c.resource_key)
    rows = conn.execute(
        _with_chats(first_after.label("first_at"), collected.label("collected_until"))
    )
    return [
        FollowedChat(_to_workspace(row), row.resource_key, row.first_at, row.collected_until)
        for row in rows
    ]


def workspaces_by_ids(conn: Connection, ids: Sequence[str]) -> dict[str, Workspace]:
    found: dict[str, Workspace] = {}
    unique = sorted(set(ids))
    for start in range(0, len(unique), 500):
        rows = conn.execute(select(ws).where(ws.c.id.in_(unique[start : start + 500])))
        for row in rows:
            found[row.id] = _to_workspace(row)
    return found
