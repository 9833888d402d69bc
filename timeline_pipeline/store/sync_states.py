"""Sync-state store: chat collection checkpoints and synthesis window states (docs/design.md §5).

Every transition that two workers could race on is one compare-and-set on the row's revision
and its status or a guard (`db.cas.compare_and_set`): the row it returns, or None, decides the
winner. A window row is created only by an INSERT ... SELECT that finds eligible evidence in
the window, so an empty window can never get a row.

The only module with SQL on `workspace_timeline_sync_states`: besides the transitions, the
reads of the health measurement, the windows awaiting a summary decision, reconciliation's
progress marker, and the correlated subqueries other stores' statements embed (README,
"Package layout").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import (
    Column,
    ColumnElement,
    Connection,
    ScalarSelect,
    and_,
    case,
    exists,
    false,
    func,
    literal,
    or_,
    select,
    true,
    tuple_,
)
from sqlalchemy.engine import Row

from timeline_pipeline.db.cas import compare_and_set
from timeline_pipeline.db.schema import workspace_timeline_evidence as ev
from timeline_pipeline.db.schema import workspace_timeline_sync_states as ss
from timeline_pipeline.db.schema import workspaces as ws
from timeline_pipeline.db.upsert import insert_for
from timeline_pipeline.domain.keys import (
    SOURCE_LARK,
    SOURCE_SYSTEM,
    SOURCE_TYPE_LARK_MESSAGES,
    SOURCE_TYPE_WINDOW,
    chat_checkpoint_key,
    format_window_start,
    window_source_key,
)
from timeline_pipeline.domain.lifecycle import (
    ExecutionMode,
    LegalHoldNote,
    LifecycleDescriptor,
    OnlyWhere,
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
from timeline_pipeline.domain.states import (
    BACKLOG_WINDOW_STATUSES,
    TERMINAL_WINDOW_STATUSES,
    CheckpointStatus,
    WindowStatus,
)
from timeline_pipeline.domain.sync_states import (
    CHECKPOINT_MARKER_KEY,
    CHECKPOINT_METADATA_VERSION,
    SyncState,
)
from timeline_pipeline.store import evidence

MAX_ERROR_CHARS = 1000


def _to_state(row: Row[Any]) -> SyncState:
    return SyncState(
        id=row.id,
        workspace_id=row.workspace_id,
        source=row.source,
        source_type=row.source_type,
        source_key=row.source_key,
        status=row.status,
        attempt_count=row.attempt_count,
        revision=row.revision,
        processing_started_at=row.processing_started_at,
        last_seen_updated_at=row.last_seen_updated_at,
        last_seen_cursor=row.last_seen_cursor,
        last_seen_content_hash=row.last_seen_content_hash,
        metadata=dict(row.metadata_json or {}),
        scope_key=row.scope_key,
        processor_version=row.processor_version,
        window_start=row.window_start,
        window_end=row.window_end,
        lease_owner=row.lease_owner,
        next_attempt_at=row.next_attempt_at,
        summary_attempted=bool(row.summary_attempted),
        last_error=row.last_error,
        deferral_count=int(row.deferral_count or 0),
        deferred=bool(row.deferred),
        unclaimed_runs=int(row.unclaimed_runs or 0),
    )


def _transition(
    conn: Connection,
    state: SyncState,
    *,
    values: dict[str, Any],
    expected_status: str | None = None,
    where: Any = None,
) -> SyncState | None:
    """One compare-and-set from the revision `state` was read at: the new state, or None."""
    row = compare_and_set(
        conn,
        ss,
        row_id=state.id,
        revision=state.revision,
        values=values,
        expected_status=expected_status,
        where=where,
    )
    return None if row is None else _to_state(row)


def get(conn: Connection, state_id: int) -> SyncState | None:
    row = conn.execute(select(ss).where(ss.c.id == state_id)).first()
    return _to_state(row) if row else None


def get_by_key(
    conn: Connection, workspace_id: str, source: str, source_type: str, source_key: str
) -> SyncState | None:
    row = conn.execute(
        select(ss).where(
            ss.c.workspace_id == workspace_id,
            ss.c.source == source,
            ss.c.source_type == source_type,
            ss.c.source_key == source_key,
        )
    ).first()
    return _to_state(row) if row else None


# --- chat collection checkpoint (docs/design.md §3) ---


def ensure_checkpoint(conn: Connection, workspace_id: str, chat_id: str) -> SyncState:
    now = datetime.now(UTC)
    key = chat_checkpoint_key(chat_id)
    conn.execute(
        insert_for(conn, ss)
        .values(
            workspace_id=workspace_id,
            source=SOURCE_LARK,
            source_type=SOURCE_TYPE_LARK_MESSAGES,
            source_key=key,
            status=CheckpointStatus.PENDING,
            attempt_count=0,
            revision=1,
            metadata_json={},
            scope_key=chat_id,
            summary_attempted=False,
            created_at=now,
            updated_at=now,
        )
        .on_conflict_do_nothing()
    )
    state = get_by_key(conn, workspace_id, SOURCE_LARK, SOURCE_TYPE_LARK_MESSAGES, key)
    assert state is not None
    return state


def advance_checkpoint(
    conn: Connection,
    state: SyncState,
    *,
    cursor: str | None,
    covered_until: datetime,
    metadata: dict[str, Any],
    now: datetime | None = None,
) -> bool:
    """Move the high-water mark forward after every page of a range is committed.

    Compare-and-set on the revision read at the start of the run: a concurrent run that
    committed first makes this one a no-op instead of moving the mark backwards.
    """
    stamp = now or datetime.now(UTC)
    values: dict[str, Any] = {
        "status": CheckpointStatus.COMPLETED,
        "last_seen_updated_at": covered_until,
        "metadata_json": {**state.metadata, **metadata},
        "last_error": None,
        "attempt_count": 0,
        "updated_at": stamp,
    }
    if cursor is not None and (state.last_seen_cursor is None or cursor > state.last_seen_cursor):
        values["last_seen_cursor"] = cursor
    return _transition(conn, state, values=values) is not None


def record_checkpoint_failure(
    conn: Connection, state: SyncState, error: str, *, now: datetime | None = None
) -> bool:
    """Count a failed run without touching the high-water mark."""
    moved = _transition(
        conn,
        state,
        values={
            "status": CheckpointStatus.FAILED,
            "attempt_count": ss.c.attempt_count + 1,
            "last_error": error[:MAX_ERROR_CHARS],
            "updated_at": now or datetime.now(UTC),
        },
    )
    return moved is not None


# --- synthesis windows (docs/design.md §5, §6) ---


def create_window_if_evidence(
    conn: Connection,
    *,
    workspace_id: str,
    chat_id: str,
    window_start: datetime,
    window_end: datetime,
    processor_version: str | None = None,
    now: datetime | None = None,
) -> SyncState | None:
    """Create the window's state row only if eligible evidence exists in the window.

    One INSERT ... SELECT ... WHERE EXISTS ... ON CONFLICT DO NOTHING: no row for an empty
    window, at most one row per window and namespace however many workers race.
    Returns the (new or existing) state, or None when the window is empty.
    """
    stamp = now or datetime.now(UTC)
    key = window_source_key(chat_id, window_start, processor_version)
    has_evidence = exists().where(
        ev.c.workspace_id == workspace_id,
        ev.c.scope_key == chat_id,
        ev.c.occurred_at >= window_start,
        ev.c.occurred_at < window_end,
        ev.c.ai_eligible == true(),
        ev.c.deleted == false(),
    )
    values: dict[str, Any] = {
        "workspace_id": literal(workspace_id),
        "source": literal(SOURCE_SYSTEM),
        "source_type": literal(SOURCE_TYPE_WINDOW),
        "source_key": literal(key),
        "status": literal(WindowStatus.PENDING.value),
        "attempt_count": literal(0),
        "revision": literal(1),
        "metadata_json": literal(
            {
                "window_start": format_window_start(window_start),
                "window_end": format_window_start(window_end),
            },
            ss.c.metadata_json.type,
        ),
        "scope_key": literal(chat_id),
        "processor_version": literal(processor_version, ss.c.processor_version.type),
        "window_start": literal(window_start, ss.c.window_start.type),
        "window_end": literal(window_end, ss.c.window_end.type),
        "summary_attempted": literal(False),
        "created_at": literal(stamp, ss.c.created_at.type),
        "updated_at": literal(stamp, ss.c.updated_at.type),
    }
    source = select(*[v.label(k) for k, v in values.items()]).where(has_evidence)
    conn.execute(insert_for(conn, ss).from_select(list(values), source).on_conflict_do_nothing())
    return get_by_key(conn, workspace_id, SOURCE_SYSTEM, SOURCE_TYPE_WINDOW, key)


def _runnable(stamp: datetime, max_attempts: int, stale_timeout: timedelta) -> Any:
    """A window that may run again: pending; failed with attempts left; or processing past the
    stale timeout with attempts left (its worker died). Claim and requeue share this rule."""
    return or_(
        ss.c.status == WindowStatus.PENDING,
        and_(ss.c.status == WindowStatus.FAILED, ss.c.attempt_count < max_attempts),
        and_(
            ss.c.status == WindowStatus.PROCESSING,
            ss.c.processing_started_at <= stamp - stale_timeout,
            ss.c.attempt_count < max_attempts,
        ),
    )


def claim_window(
    conn: Connection,
    state: SyncState,
    *,
    owner: str,
    max_attempts: int,
    stale_timeout: timedelta,
    now: datetime | None = None,
) -> SyncState | None:
    """Atomically move a window to `processing`; None when another worker won or it is done.

    Claimable: pending; failed with attempts left; processing whose start is older than the
    stale timeout (the worker died). The revision read by the caller must still be current.
    """
    stamp = now or datetime.now(UTC)
    claimable = _runnable(stamp, max_attempts, stale_timeout)
    return _transition(
        conn,
        state,
        where=claimable,
        values={
            "status": WindowStatus.PROCESSING,
            "attempt_count": ss.c.attempt_count + 1,
            "processing_started_at": stamp,
            "lease_owner": owner,
            "deferred": False,
            "updated_at": stamp,
        },
    )


def advance_window_cursor(
    conn: Connection,
    state: SyncState,
    *,
    cursor: str,
    metadata: dict[str, Any],
    now: datetime | None = None,
) -> SyncState | None:
    """Record a committed chunk; call in the same transaction that wrote the chunk's entries.

    A committed chunk is the worker reporting: it renews the lease, so the stale timeout bounds
    the silence between chunks, not the length of a long window."""
    stamp = now or datetime.now(UTC)
    return _transition(
        conn,
        state,
        expected_status=WindowStatus.PROCESSING,
        values={
            "last_seen_cursor": cursor,
            "processing_started_at": stamp,
            "metadata_json": {**state.metadata, **metadata},
            "updated_at": stamp,
        },
    )


def finish_window(
    conn: Connection,
    state: SyncState,
    *,
    status: str,
    aggregate_hash: str,
    metadata: dict[str, Any],
    now: datetime | None = None,
) -> SyncState | None:
    if status not in TERMINAL_WINDOW_STATUSES:
        raise ValueError(f"finish_window needs a terminal status, got {status!r}")
    stamp = now or datetime.now(UTC)
    return _transition(
        conn,
        state,
        expected_status=WindowStatus.PROCESSING,
        values={
            "status": status,
            "last_seen_content_hash": aggregate_hash,
            "last_seen_updated_at": stamp,
            "metadata_json": {**state.metadata, **metadata},
            "lease_owner": None,
            "last_error": None,
            "deferral_count": 0,
            "deferred": False,
            "updated_at": stamp,
        },
    )


def defer_window(
    conn: Connection,
    state: SyncState,
    *,
    error: str,
    retry_at: datetime,
    now: datetime | None = None,
) -> SyncState | None:
    """The model service was unavailable: give the attempt back and wait until `retry_at`.

    An outage is not the window's fault, so it must not use up whole-window attempts: the
    claim's increment is undone, the window goes back to `pending` with `deferred` set and
    `next_attempt_at` = the end of its window-level backoff, and `deferral_count` (the backoff's
    exponent) grows. The cursor is kept: committed chunks are not synthesized again. Same
    compare-and-set as every transition of a running window.
    """
    stamp = now or datetime.now(UTC)
    return _transition(
        conn,
        state,
        expected_status=WindowStatus.PROCESSING,
        values={
            "status": WindowStatus.PENDING,
            "attempt_count": case((ss.c.attempt_count > 0, ss.c.attempt_count - 1), else_=0),
            "deferral_count": ss.c.deferral_count + 1,
            "deferred": True,
            "next_attempt_at": retry_at,
            "last_error": error[:MAX_ERROR_CHARS],
            "lease_owner": None,
            "updated_at": stamp,
        },
    )


def fail_window(
    conn: Connection,
    state: SyncState,
    *,
    error: str,
    retry_at: datetime | None,
    now: datetime | None = None,
) -> SyncState | None:
    """Mark an attempt failed; whether it is retryable follows from attempt_count."""
    stamp = now or datetime.now(UTC)
    return _transition(
        conn,
        state,
        expected_status=WindowStatus.PROCESSING,
        values={
            "status": WindowStatus.FAILED,
            "last_error": error[:MAX_ERROR_CHARS],
            "next_attempt_at": retry_at,
            "lease_owner": None,
            "deferred": False,
            "updated_at": stamp,
        },
    )


def reset_window(conn: Connection, state: SyncState, *, now: datetime | None = None) -> bool:
    """An operator's explicit replay: the whole window runs again from its first chunk."""
    moved = _transition(
        conn,
        state,
        where=ss.c.status != WindowStatus.PROCESSING,
        values={
            "status": WindowStatus.PENDING,
            "attempt_count": 0,
            "last_seen_cursor": None,
            "last_error": None,
            "next_attempt_at": None,
            "summary_attempted": False,
            "deferral_count": 0,
            "deferred": False,
            "unclaimed_runs": 0,
            "updated_at": now or datetime.now(UTC),
        },
    )
    return moved is not None


def stale_processing(
    conn: Connection, *, stale_timeout: timedelta, now: datetime | None = None, limit: int = 100
) -> list[SyncState]:
    stamp = now or datetime.now(UTC)
    rows = conn.execute(
        select(ss)
        .where(
            ss.c.source_type == SOURCE_TYPE_WINDOW,
            ss.c.status == WindowStatus.PROCESSING,
            ss.c.processing_started_at <= stamp - stale_timeout,
        )
        .order_by(ss.c.window_start)
        .limit(limit)
    )
    return [_to_state(r) for r in rows]


def mark_summary_attempted(conn: Connection, state_id: int) -> bool:
    """At most one summary attempt per window: the flag flips once, the rowcount says who.

    Only a finished window: one that a replay has just reset is not flagged (nor its revision
    moved under the run that replays it)."""
    result = conn.execute(
        ss.update()
        .where(
            ss.c.id == state_id,
            ss.c.summary_attempted == false(),
            ss.c.status.in_(TERMINAL_WINDOW_STATUSES),
        )
        .values(summary_attempted=True, revision=ss.c.revision + 1)
    )
    return result.rowcount == 1


# --- window discovery (docs/design.md §6): the sensor's reads and its one extra transition ---


def requeue_window(
    conn: Connection,
    state: SyncState,
    *,
    max_attempts: int,
    stale_timeout: timedelta,
    reissue_at: datetime,
    now: datetime | None = None,
) -> SyncState | None:
    """Mark a window as requested: `pending`, with `next_attempt_at` = when to check the request.

    Accepted from pending (a fresh row, or one the rerun job made), from failed with attempts
    left, and from a stale `processing` row with attempts left (its worker died). Attempts and
    the cursor are kept: the next run resumes after the last committed chunk. Compare-and-set on
    the revision the caller read, so a run that claimed the window meanwhile wins.
    """
    stamp = now or datetime.now(UTC)
    requeueable = _runnable(stamp, max_attempts, stale_timeout)
    return _transition(
        conn,
        state,
        where=requeueable,
        values={
            "status": WindowStatus.PENDING,
            "next_attempt_at": reissue_at,
            "lease_owner": None,
            "deferred": False,
            "updated_at": stamp,
        },
    )


UNCLAIMED_ERROR = "runs ended without claiming the window (see their Dagster logs)"


def relaunch_unclaimed(
    conn: Connection,
    state: SyncState,
    *,
    max_attempts: int,
    reissue_at: datetime,
    now: datetime | None = None,
) -> SyncState | None:
    """A requested run finished without claiming the window: count it, then request again.

    Such a run never reached the claim (it failed at start), so nothing counted it; relaunching
    it for free would repeat forever. It counts as a whole-window attempt (`unclaimed_runs`
    says how many were of this kind): with attempts left the window is requested again, else it
    is `failed` for an operator, like any window out of attempts. Compare-and-set on the
    revision of the `pending` row the caller read, so a run that claimed it meanwhile wins.
    """
    stamp = now or datetime.now(UTC)
    exhausted = state.attempt_count + 1 >= max_attempts
    values: dict[str, Any] = {
        "attempt_count": ss.c.attempt_count + 1,
        "unclaimed_runs": ss.c.unclaimed_runs + 1,
        "lease_owner": None,
        "deferred": False,
        "updated_at": stamp,
    }
    if exhausted:
        values.update(status=WindowStatus.FAILED, next_attempt_at=None, last_error=UNCLAIMED_ERROR)
    else:
        values.update(status=WindowStatus.PENDING, next_attempt_at=reissue_at)
    return _transition(
        conn,
        state,
        expected_status=WindowStatus.PENDING,
        values=values,
    )


def poll_unfinished_windows(
    conn: Connection, *, max_attempts: int, limit: int
) -> tuple[int, list[SyncState]]:
    """The highest evidence id and every unfinished window state, in one statement.

    Unfinished: pending, processing, or failed with attempts left, however old the window and
    whatever its workspace's status: every window with a state ends in a terminal status (or
    exhausted, for an operator), so none is left out once it ages past the lookback. Rows are
    unfinished only while requested or retrying, so there are few of them. This is the whole
    cost of an idle discovery tick, so it is one indexed round trip: a one-row subquery for
    max(id), left-joined to the (few) unfinished rows.
    """
    top = select(func.max(ev.c.id).label("max_evidence_id")).subquery("top")
    unfinished = and_(
        ss.c.source_type == SOURCE_TYPE_WINDOW,
        or_(
            ss.c.status.in_(BACKLOG_WINDOW_STATUSES),
            and_(ss.c.status == WindowStatus.FAILED, ss.c.attempt_count < max_attempts),
        ),
    )
    rows = conn.execute(
        select(top.c.max_evidence_id, ss)
        .select_from(top.outerjoin(ss, unfinished))
        .order_by(ss.c.window_start, ss.c.id)
        .limit(limit)
    ).all()
    max_id = int(rows[0].max_evidence_id or 0) if rows else 0
    return max_id, [_to_state(row) for row in rows if row.id is not None]


def window_states_by_keys(
    conn: Connection, keys: Sequence[tuple[str, str]], *, batch_size: int = 500
) -> dict[tuple[str, str], SyncState]:
    """Bulk-load window states by (workspace_id, source_key), through the unique index."""
    found: dict[tuple[str, str], SyncState] = {}
    unique = sorted(set(keys))
    for start in range(0, len(unique), batch_size):
        batch = unique[start : start + batch_size]
        rows = conn.execute(
            select(ss).where(
                ss.c.source == SOURCE_SYSTEM,
                ss.c.source_type == SOURCE_TYPE_WINDOW,
                tuple_(ss.c.workspace_id, ss.c.source_key).in_(batch),
            )
        )
        for row in rows:
            state = _to_state(row)
            found[(state.workspace_id, state.source_key)] = state
    return found


def checkpoint_coverage(
    conn: Connection, chats: Sequence[tuple[str, str]], *, batch_size: int = 500
) -> dict[tuple[str, str], datetime | None]:
    """`last_seen_updated_at` of each chat's collection checkpoint: how far history is covered."""
    keys = sorted({(ws, chat_checkpoint_key(chat)) for ws, chat in chats})
    found: dict[tuple[str, str], datetime | None] = {}
    for start in range(0, len(keys), batch_size):
        batch = keys[start : start + batch_size]
        rows = conn.execute(
            select(ss.c.workspace_id, ss.c.scope_key, ss.c.last_seen_updated_at).where(
                ss.c.source == SOURCE_LARK,
                ss.c.source_type == SOURCE_TYPE_LARK_MESSAGES,
                tuple_(ss.c.workspace_id, ss.c.source_key).in_(batch),
            )
        )
        for row in rows:
            found[(row.workspace_id, row.scope_key)] = row.last_seen_updated_at
    return found


# --- windows awaiting a summary decision ------------------------------------------------


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


def _count(metadata: Mapping[str, Any], key: str) -> int:
    try:
        return max(0, int(metadata.get(key, 0) or 0))
    except (TypeError, ValueError):
        return 0


def windows_awaiting_summary(
    conn: Connection,
    *,
    limit: int,
    workspace_id: str | None = None,
    after: tuple[datetime, int] | None = None,
) -> list[SummaryWindow]:
    """Terminal windows with `summary_attempted` false, oldest first, at most `limit`.

    Driven by the window's own flag, with no lookback: a window of an ended incident or of a
    long backlog may finish long after its start and still gets its decision. A keyset read
    (`after` = the last row's (window_start, id)) on the (source_type, summary_attempted,
    window_start, id) index: the flag is flipped once per window, so the rows it reads are
    the undecided ones, never the whole history.
    """
    stmt = select(ss).where(
        ss.c.source_type == SOURCE_TYPE_WINDOW,
        ss.c.summary_attempted == false(),
        ss.c.status.in_(TERMINAL_WINDOW_STATUSES),
    )
    if workspace_id is not None:
        stmt = stmt.where(ss.c.workspace_id == workspace_id)
    if after is not None:
        stmt = stmt.where(tuple_(ss.c.window_start, ss.c.id) > tuple_(after[0], after[1]))
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


# --- reconciliation progress ----------------------------------------------------------------


def record_progress(
    conn: Connection, state: SyncState, marker: dict[str, Any], *, now: datetime
) -> SyncState | None:
    """Store the in-progress marker (CAS on revision); None when another run moved the row.

    The high-water mark (`last_seen_cursor`, `last_seen_updated_at`) is deliberately untouched:
    it moves only in `advance_checkpoint`, once the whole range is committed (docs/design.md §3).
    """
    metadata = {
        **state.metadata,
        "version": CHECKPOINT_METADATA_VERSION,
        CHECKPOINT_MARKER_KEY: marker,
    }
    started = state.processing_started_at if state.status == "processing" else now
    result = conn.execute(
        ss.update()
        .where(ss.c.id == state.id, ss.c.revision == state.revision)
        .values(
            status="processing",
            processing_started_at=started,
            metadata_json=metadata,
            revision=ss.c.revision + 1,
            updated_at=now,
        )
    )
    if result.rowcount != 1:
        return None
    return dataclasses.replace(
        state,
        status="processing",
        processing_started_at=started,
        metadata=metadata,
        revision=state.revision + 1,
    )


# --- correlated fragments and health reads ---------------------------------------------------


def latest_window_of_chat(
    column: str,
    workspace_id: Column[Any],
    scope_key: ColumnElement[Any],
) -> ScalarSelect[Any]:
    """The `column` of the latest default-namespace window of the chat (`workspace_id`,
    `scope_key`) of the enclosing statement: one backward seek of (workspace_id, scope_key,
    source_type, window_start), however many windows the chat ever had."""
    return (
        select(ss.c[column])
        .where(
            ss.c.workspace_id == workspace_id,
            ss.c.scope_key == scope_key,
            ss.c.source_type == SOURCE_TYPE_WINDOW,
            ss.c.processor_version.is_(None),
        )
        .order_by(ss.c.window_start.desc())
        .limit(1)
        .correlate(workspace_id.table)
        .scalar_subquery()
    )


def collected_until(
    workspace_id: ColumnElement[Any], scope_key: ColumnElement[Any]
) -> ScalarSelect[Any]:
    """The collection checkpoint's `last_seen_updated_at` of the chat of the enclosing
    statement: one unique-key lookup."""
    return (
        select(ss.c.last_seen_updated_at)
        .where(
            ss.c.workspace_id == workspace_id,
            ss.c.scope_key == scope_key,
            ss.c.source_type == SOURCE_TYPE_LARK_MESSAGES,
            ss.c.source == SOURCE_LARK,
        )
        .limit(1)
        .scalar_subquery()
    )


@dataclass(frozen=True, slots=True)
class WindowCounts:
    """Windows of one workspace and status, with the health tallies among them."""

    workspace_id: str
    status: str
    windows: int
    stale: int
    exhausted: int
    retried: int
    retries: int
    late_windows: int
    late: int


def _sum_if(condition: ColumnElement[bool], value: Any = 1) -> Any:
    return func.sum(case((condition, value), else_=0))


def window_counts(
    conn: Connection,
    *,
    finished_statuses: Sequence[str],
    horizon: datetime,
    stale_before: datetime,
    max_attempts: int,
) -> list[WindowCounts]:
    """Per workspace and status: backlog windows (pending, processing) of any age, the
    `finished_statuses` from `horizon` on, both through the (source_type, status,
    window_start) index."""
    retried = ss.c.attempt_count > 1
    late = func.coalesce(ss.c.metadata_json["late_evidence"].as_integer(), 0)
    stale = and_(ss.c.status == WindowStatus.PROCESSING, ss.c.processing_started_at <= stale_before)
    exhausted = and_(ss.c.status == WindowStatus.FAILED, ss.c.attempt_count >= max_attempts)
    columns = [
        ss.c.workspace_id,
        ss.c.status,
        func.count().label("n"),
        _sum_if(stale).label("stale"),
        _sum_if(exhausted).label("exhausted"),
        _sum_if(retried).label("retried"),
        _sum_if(retried, ss.c.attempt_count - 1).label("retries"),
        # A finished run records evidence it saw but did not process (`late_evidence`).
        _sum_if(late > 0).label("late_windows"),
        _sum_if(late > 0, late).label("late"),
    ]
    backlog = (
        select(*columns)
        .where(ss.c.source_type == SOURCE_TYPE_WINDOW, ss.c.status.in_(BACKLOG_WINDOW_STATUSES))
        .group_by(ss.c.workspace_id, ss.c.status)
    )
    finished = (
        select(*columns)
        .where(
            ss.c.source_type == SOURCE_TYPE_WINDOW,
            ss.c.status.in_(list(finished_statuses)),
            ss.c.window_start >= horizon,
        )
        .group_by(ss.c.workspace_id, ss.c.status)
    )
    return [
        WindowCounts(
            row.workspace_id,
            row.status,
            int(row.n),
            int(row.stale or 0),
            int(row.exhausted or 0),
            int(row.retried or 0),
            int(row.retries or 0),
            int(row.late_windows or 0),
            int(row.late or 0),
        )
        for statement in (backlog, finished)
        for row in conn.execute(statement)
    ]


def stale_and_failed_windows(
    conn: Connection, *, stale_before: datetime, horizon: datetime, limit: int
) -> tuple[list[Any], list[Any]]:
    """At most `limit` stale `processing` windows (any age) and `failed` windows from
    `horizon` on, oldest first: (workspace_id, scope_key, source_key, window_start,
    processor_version, status, attempt_count) rows."""
    columns = (
        ss.c.workspace_id,
        ss.c.scope_key,
        ss.c.source_key,
        ss.c.window_start,
        ss.c.processor_version,
        ss.c.status,
        ss.c.attempt_count,
    )
    stale = conn.execute(
        select(*columns)
        .where(
            ss.c.source_type == SOURCE_TYPE_WINDOW,
            ss.c.status == WindowStatus.PROCESSING,
            ss.c.processing_started_at <= stale_before,
        )
        .order_by(ss.c.window_start, ss.c.id)
        .limit(limit)
    )
    failed = conn.execute(
        select(*columns)
        .where(
            ss.c.source_type == SOURCE_TYPE_WINDOW,
            ss.c.status == WindowStatus.FAILED,
            ss.c.window_start >= horizon,
        )
        .order_by(ss.c.window_start, ss.c.id)
        .limit(limit)
    )
    return list(stale), list(failed)


def first_evidence_of_oldest_unfinished_windows(
    conn: Connection, statuses: Sequence[str]
) -> list[tuple[str, str, datetime | None]]:
    """Per chat with a default-namespace window in `statuses`: (workspace id, chat id, the
    first eligible evidence of its oldest such window). Windows of a deleted workspace are
    left out (the join with `workspaces`)."""
    oldest = (
        select(
            ss.c.workspace_id,
            ss.c.scope_key,
            func.min(ss.c.window_start).label("start"),
            func.min(ss.c.window_end).label("end"),
        )
        .select_from(ss.join(ws, ws.c.id == ss.c.workspace_id))
        .where(
            ss.c.source_type == SOURCE_TYPE_WINDOW,
            ss.c.status.in_(list(statuses)),
            ss.c.processor_version.is_(None),
        )
        .group_by(ss.c.workspace_id, ss.c.scope_key)
        .subquery("oldest")
    )
    first = evidence.first_eligible_at(
        oldest.c.workspace_id,
        oldest.c.scope_key,
        at_or_after=oldest.c.start,
        before=oldest.c.end,
    )
    rows = conn.execute(
        select(ws, oldest.c.scope_key, first.label("first_at")).join(
            oldest, oldest.c.workspace_id == ws.c.id
        )
    )
    return [(row.id, row.scope_key, row.first_at) for row in rows]


def summary_backlog(conn: Connection, *, horizon: datetime) -> tuple[int, datetime | None]:
    """Finished windows from `horizon` on whose summary decision is still to be made, and
    the oldest `last_seen_updated_at` among them."""
    row = conn.execute(
        select(func.count().label("n"), func.min(ss.c.last_seen_updated_at).label("since")).where(
            ss.c.source_type == SOURCE_TYPE_WINDOW,
            ss.c.status.in_(TERMINAL_WINDOW_STATUSES),
            ss.c.window_start >= horizon,
            ss.c.summary_attempted == false(),
        )
    ).one()
    return int(row.n), row.since


# --- lifecycle -------------------------------------------------------------------------------

DESCRIPTOR = LifecycleDescriptor(
    key="sync_states.workspace_timeline_sync_states",
    table_name="workspace_timeline_sync_states",
    owner="sync_states",
    scope=Scope.WORKSPACE,
    cursor_column="updated_at",
    retention_class=RetentionClass.SYSTEM_EVENT,
    retention_min_days=14,
    retention_max_days=730,
    default_retention_days=90,
    partition=NOT_PARTITIONED,
    archive=NOT_ARCHIVED,
    deletion=HARD_DELETE,
    legal_hold=LegalHoldNote(),
    required_indexes=(RequiredIndex(("workspace_id", "updated_at", "id"), "the purge's keyset"),),
    batch_limit=5_000,
    backup_restore_notes=BACKUP_NOTES,
    execution_mode=ExecutionMode.GENERIC,
    # Finished windows and checkpoints only: a pending or processing window is never purged.
    only_where=(OnlyWhere("status", ("completed", "ignored", "failed")),),
    report_columns=("source_type", "scope_key", "window_start", "processor_version"),
    notes="Window states and chat checkpoints. A purged window's Dagster partition and its "
    "old runs are removed with it; a purged checkpoint makes the next collection of that chat "
    "start from the ingestion lookback.",
)
