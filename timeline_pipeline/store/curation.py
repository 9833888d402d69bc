"""Queries for curation, the timeline API and the summary that store/entries.py does not hold.

* Entry edits by a curator (title, detail, category, time) as one compare-and-set on the
  revision the curator saw.
* The workspace summary: an AI write is one INSERT ... ON CONFLICT DO UPDATE ... WHERE
  source = 'ai', so an automatic summary can never replace a human one, whatever the timing;
  a human write is a compare-and-set on the revision.
* The windows awaiting a summary decision (terminal, `summary_attempted` false) and the visible
  entries each window created or changed, for the summary policy.
* Bound evidence with the identifiers that make a Lark link, for a page of entries at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, false, func, or_, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Row

from timeline_pipeline.db.schema import audit_events
from timeline_pipeline.db.schema import workspace_timeline_entries as en
from timeline_pipeline.db.schema import workspace_timeline_entry_evidence as ee
from timeline_pipeline.db.schema import workspace_timeline_evidence as ev
from timeline_pipeline.db.schema import workspace_timeline_summaries as su
from timeline_pipeline.db.schema import workspace_timeline_sync_states as ss
from timeline_pipeline.domain.keys import SOURCE_TYPE_WINDOW
from timeline_pipeline.domain.states import TERMINAL_WINDOW_STATUSES
from timeline_pipeline.lifecycle.declare import (
    BACKUP_NOTES,
    HARD_DELETE,
    NOT_PARTITIONED,
    archive_on_request,
)
from timeline_pipeline.lifecycle.descriptor import (
    ExecutionMode,
    LegalHoldNote,
    LifecycleDescriptor,
    RequiredIndex,
    RetentionClass,
    Scope,
)
from timeline_pipeline.store import entries
from timeline_pipeline.store.entries import EntryRow

__all__ = [
    "VISIBLE",
    "BoundEvidence",
    "SummaryRow",
    "SummaryWindow",
    "audit_curation",
    "bound_evidence",
    "edit_entry",
    "existing_evidence_ids",
    "get_entry",
    "get_summary",
    "summary_sources",
    "visible_entries",
    "visible_entry_counts",
    "windows_awaiting_summary",
    "write_ai_summary",
    "write_human_summary",
]

VISIBLE = ("draft", "confirmed")


@dataclass(frozen=True, slots=True)
class BoundEvidence:
    entry_id: int
    evidence_id: int
    source: str
    source_type: str
    source_key: str
    occurred_at: datetime
    deleted: bool


@dataclass(frozen=True, slots=True)
class SummaryRow:
    workspace_id: str
    content: str
    source: str
    revision: int
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class SummaryWindow:
    """A terminal window whose summary decision has not been made yet."""

    state_id: int
    workspace_id: str
    source_key: str
    status: str
    revision: int
    window_start: datetime | None
    processor_version: str | None
    entries_created: int
    entries_updated: int


def _insert(conn: Connection, table: Any) -> Any:
    return (postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert)(table)


# --- entries ---------------------------------------------------------------------------------


def get_entry(conn: Connection, workspace_id: str, entry_id: int) -> EntryRow | None:
    """The entry if it belongs to `workspace_id`; another workspace's entry is not found."""
    entry = entries.get(conn, entry_id)
    return entry if entry is not None and entry.workspace_id == workspace_id else None


def edit_entry(
    conn: Connection, entry: EntryRow, values: Mapping[str, Any], *, now: datetime
) -> EntryRow | None:
    """A curator's rewrite, applied only if the entry is still at the revision they saw.

    Sets `human_edited`, which is what keeps synthesis from ever rewriting the text again.
    None when the entry changed meanwhile.
    """
    allowed = {"title", "detail", "category", "occurred_at"}
    unknown = set(values) - allowed
    if unknown:
        raise ValueError(f"not editable: {sorted(unknown)}")
    result = conn.execute(
        en.update()
        .where(en.c.id == entry.id, en.c.revision == entry.revision)
        .values(**values, human_edited=True, revision=en.c.revision + 1, updated_at=now)
    )
    return entries.get(conn, entry.id) if result.rowcount == 1 else None


def existing_evidence_ids(conn: Connection, workspace_id: str, ids: Sequence[int]) -> set[int]:
    if not ids:
        return set()
    rows = conn.execute(
        select(ev.c.id).where(ev.c.workspace_id == workspace_id, ev.c.id.in_(sorted(set(ids))))
    )
    return {row.id for row in rows}


def bound_evidence(
    conn: Connection, workspace_id: str, entry_ids: Sequence[int]
) -> dict[int, list[BoundEvidence]]:
    """Each entry's evidence (id, source identity) in (occurred_at, id) order, in one query."""
    found: dict[int, list[BoundEvidence]] = {entry_id: [] for entry_id in entry_ids}
    if not entry_ids:
        return found
    rows = conn.execute(
        select(
            ee.c.entry_id,
            ev.c.id,
            ev.c.source,
            ev.c.source_type,
            ev.c.source_key,
            ev.c.occurred_at,
            ev.c.deleted,
        )
        .join(ev, ev.c.id == ee.c.evidence_id)
        .where(ee.c.entry_id.in_(list(entry_ids)), ev.c.workspace_id == workspace_id)
        .order_by(ee.c.entry_id, ev.c.occurred_at, ev.c.id)
    )
    for row in rows:
        found[row.entry_id].append(
            BoundEvidence(
                row.entry_id,
                row.id,
                row.source,
                row.source_type,
                row.source_key,
                row.occurred_at,
                bool(row.deleted),
            )
        )
    return found


def visible_entries(conn: Connection, workspace_id: str, *, limit: int) -> list[EntryRow]:
    """Draft and confirmed entries in time order, at most `limit` (never a hidden one)."""
    found: list[EntryRow] = []
    after: tuple[datetime, int] | None = None
    while len(found) < limit:
        want = min(500, limit - len(found))
        page = entries.list_for_workspace(
            conn, workspace_id, statuses=VISIBLE, after=after, limit=want
        )
        found.extend(page)
        if len(page) < want:
            break
        after = (page[-1].occurred_at, page[-1].id)
    return found


# --- summaries -------------------------------------------------------------------------------


def _to_summary(row: Row[Any]) -> SummaryRow:
    return SummaryRow(
        workspace_id=row.workspace_id,
        content=row.content,
        source=row.source,
        revision=row.revision,
        metadata=dict(row.metadata_json or {}),
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def get_summary(conn: Connection, workspace_id: str) -> SummaryRow | None:
    row = conn.execute(select(su).where(su.c.workspace_id == workspace_id)).first()
    return _to_summary(row) if row else None


def summary_sources(conn: Connection, workspace_ids: Sequence[str]) -> dict[str, str]:
    """workspace id -> `ai` or `human`, for the workspaces that have a summary."""
    if not workspace_ids:
        return {}
    rows = conn.execute(
        select(su.c.workspace_id, su.c.source).where(su.c.workspace_id.in_(sorted(workspace_ids)))
    )
    return {row.workspace_id: row.source for row in rows}


def write_ai_summary(
    conn: Connection,
    workspace_id: str,
    content: str,
    metadata: Mapping[str, Any],
    *,
    now: datetime,
) -> SummaryRow | None:
    """Create or replace the automatic summary; None (and nothing written) if it is human's.

    The WHERE of the upsert is the whole protection: a human summary written a moment before
    makes this statement update no row, however the two writers interleave.
    """
    stmt = _insert(conn, su).values(
        workspace_id=workspace_id,
        content=content,
        source="ai",
        revision=1,
        metadata_json=dict(metadata),
        created_at=now,
        updated_at=now,
    )
    stmt = stmt.on_conflict_do_update(
        index_elements=[su.c.workspace_id],
        set_={
            "content": stmt.excluded.content,
            "metadata_json": stmt.excluded.metadata_json,
            "revision": su.c.revision + 1,
            "updated_at": stmt.excluded.updated_at,
        },
        where=su.c.source == "ai",
    ).returning(su.c.workspace_id)
    if conn.execute(stmt).first() is None:
        return None
    return get_summary(conn, workspace_id)


def write_human_summary(
    conn: Connection,
    workspace_id: str,
    content: str,
    *,
    expected_revision: int | None,
    now: datetime,
    metadata: Mapping[str, Any] | None = None,
) -> SummaryRow | None:
    """A curator's summary, from then on never replaced automatically.

    `expected_revision` None: there must be no summary yet (an insert that loses to a
    concurrent one returns None). Otherwise the stored summary, AI or human, must still be at
    that revision. None means the precondition failed and nothing was written.
    """
    meta = dict(metadata or {})
    if expected_revision is None:
        row = conn.execute(
            _insert(conn, su)
            .values(
                workspace_id=workspace_id,
                content=content,
                source="human",
                revision=1,
                metadata_json=meta,
                created_at=now,
                updated_at=now,
            )
            .on_conflict_do_nothing()
            .returning(su.c.workspace_id)
        ).first()
    else:
        row = conn.execute(
            su.update()
            .where(su.c.workspace_id == workspace_id, su.c.revision == expected_revision)
            .values(
                content=content,
                source="human",
                metadata_json=meta,
                revision=su.c.revision + 1,
                updated_at=now,
            )
            .returning(su.c.workspace_id)
        ).first()
    return get_summary(conn, workspace_id) if row is not None else None


# --- windows awaiting a summary decision ------------------------------------------------------


def _count(metadata: Mapping[str, Any], key: str) -> int:
    try:
        return max(0, int(metadata.get(key, 0) or 0))
    except (TypeError, ValueError):
        return 0


def windows_awaiting_summary(
    conn: Connection,
    *,
    since: datetime,
    limit: int,
    workspace_id: str | None = None,
) -> list[SummaryWindow]:
    """Terminal windows with `summary_attempted` false, oldest first, at most `limit`.

    Bounded like discovery: default-namespace windows from `since` (the ingestion lookback; an
    older window cannot complete any more), versioned reruns always. The (source_type, status,
    window_start) index serves the scan.
    """
    stmt = select(ss).where(
        ss.c.source_type == SOURCE_TYPE_WINDOW,
        ss.c.status.in_(TERMINAL_WINDOW_STATUSES),
        ss.c.summary_attempted == false(),
        or_(ss.c.window_start >= since, ss.c.processor_version.is_not(None)),
    )
    if workspace_id is not None:
        stmt = stmt.where(ss.c.workspace_id == workspace_id)
    rows = conn.execute(stmt.order_by(ss.c.window_start, ss.c.id).limit(limit))
    found: list[SummaryWindow] = []
    for row in rows:
        metadata = dict(row.metadata_json or {})
        found.append(
            SummaryWindow(
                state_id=row.id,
                workspace_id=row.workspace_id,
                source_key=row.source_key,
                status=row.status,
                revision=row.revision,
                window_start=row.window_start,
                processor_version=row.processor_version,
                entries_created=_count(metadata, "entries_created"),
                entries_updated=_count(metadata, "entries_updated"),
            )
        )
    return found


def visible_entry_counts(conn: Connection, windows: Sequence[SummaryWindow]) -> dict[int, int]:
    """How many visible entries each window state last created or changed.

    Filtered by the windows' workspaces too, so the (workspace_id, occurred_at, id) index
    narrows the scan to those workspaces' entries.
    """
    counts = {w.state_id: 0 for w in windows}
    if not windows:
        return counts
    rows = conn.execute(
        select(en.c.window_state_id, func.count().label("n"))
        .where(
            en.c.workspace_id.in_(sorted({w.workspace_id for w in windows})),
            en.c.window_state_id.in_(sorted(counts)),
            en.c.status.in_(VISIBLE),
        )
        .group_by(en.c.window_state_id)
    )
    for row in rows:
        counts[row.window_state_id] = int(row.n)
    return counts


# --- audit -----------------------------------------------------------------------------------


def audit_curation(
    conn: Connection,
    *,
    actor: str,
    action: str,
    subject_type: str,
    subject_id: str,
    workspace_id: str,
    details: Mapping[str, Any],
    now: datetime,
) -> None:
    """One audit event per curation change, in the change's own transaction (ids and
    revisions only: never the text, which may quote the chat)."""
    conn.execute(
        audit_events.insert().values(
            occurred_at=now,
            actor=actor[:128],
            action=action,
            subject_type=subject_type,
            subject_id=subject_id,
            workspace_id=workspace_id,
            details_json=dict(details),
        )
    )


# --- lifecycle -------------------------------------------------------------------------------

DESCRIPTORS = (
    LifecycleDescriptor(
        key="curation.workspace_timeline_summaries",
        table_name="workspace_timeline_summaries",
        owner="curation",
        scope=Scope.WORKSPACE,
        cursor_column="updated_at",
        retention_class=RetentionClass.COMMUNICATION_LOG,
        retention_min_days=30,
        retention_max_days=730,
        default_retention_days=180,
        partition=NOT_PARTITIONED,
        archive=archive_on_request("The workspace summary"),
        deletion=HARD_DELETE,
        legal_hold=LegalHoldNote(),
        required_indexes=(
            RequiredIndex(("workspace_id", "updated_at", "id"), "the purge's keyset"),
        ),
        batch_limit=5_000,
        backup_restore_notes=BACKUP_NOTES,
        execution_mode=ExecutionMode.GENERIC,
    ),
    LifecycleDescriptor(
        key="curation.audit_events",
        table_name="audit_events",
        owner="curation",
        scope=Scope.GLOBAL,
        cursor_column="occurred_at",
        retention_class=RetentionClass.AUDIT_SECURITY,
        retention_min_days=365,
        retention_max_days=2555,
        default_retention_days=730,
        partition=NOT_PARTITIONED,
        archive=archive_on_request("The audit trail"),
        deletion=HARD_DELETE,
        legal_hold=LegalHoldNote(),
        required_indexes=(RequiredIndex(("occurred_at", "id"), "the purge's keyset"),),
        batch_limit=10_000,
        backup_restore_notes=BACKUP_NOTES,
        execution_mode=ExecutionMode.GENERIC,
        notes="Ids and keys only, never content; kept longer than what it describes so that "
        "who changed what can be answered after the data is gone.",
    ),
)
