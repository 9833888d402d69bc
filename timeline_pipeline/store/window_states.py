"""Synthesis window states (docs/design.md §5, §6): a window's row, its transitions, discovery's
reads, the windows awaiting a summary decision (docs/design.md §8) and the correlated subquery
of a chat's latest window.

A window row is created only by an INSERT ... SELECT that finds eligible evidence in the window,
so an empty window can never get a row. Every transition is one compare-and-set
(`store/sync_states.py`), so two workers racing on a window cannot both win.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

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

from timeline_pipeline.db.rows import records
from timeline_pipeline.db.schema import workspace_timeline_evidence as ev
from timeline_pipeline.db.schema import workspace_timeline_sync_states as ss
from timeline_pipeline.db.upsert import insert_for
from timeline_pipeline.domain.keys import SOURCE_SYSTEM, SOURCE_TYPE_WINDOW
from timeline_pipeline.domain.states import (
    BACKLOG_WINDOW_STATUSES,
    TERMINAL_WINDOW_STATUSES,
    WindowStatus,
)
from timeline_pipeline.domain.sync_states import LEGACY_WINDOW_SECONDS, SyncState
from timeline_pipeline.domain.window_keys import format_window_start, window_source_key
from timeline_pipeline.store.sync_states import MAX_ERROR_CHARS, get_by_key, to_state, transition


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
        # The size it is made with (docs/design.md §5): discovery refuses another size while
        # this one is in use (`windows.planning.window_size_conflict`).
        "window_seconds": literal(int((window_end - window_start).total_seconds())),
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


RELEASED: Final[dict[str, Any]] = {"lease_owner": None, "deferred": False}
"""What a window no worker holds any more (failed, finished, requested again) carries: no lease,
and no deferral."""


def _holder_writes(
    conn: Connection, state: SyncState, stamp: datetime, **values: Any
) -> SyncState | None:
    """A write by the run that holds the window (docs/design.md, window states): only while the
    window is still `processing` at the revision the run read, stamped `stamp`."""
    values["updated_at"] = stamp
    return transition(conn, state, expected_status=WindowStatus.PROCESSING, values=values)


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
    values = {
        "status": WindowStatus.PROCESSING,
        "attempt_count": ss.c.attempt_count + 1,
        "processing_started_at": stamp,
        "lease_owner": owner,
        "deferred": False,
        "updated_at": stamp,
    }
    return transition(
        conn, state, where=_runnable(stamp, max_attempts, stale_timeout), values=values
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
    return _holder_writes(
        conn,
        state,
        stamp,
        last_seen_cursor=cursor,
        processing_started_at=stamp,
        metadata_json={**state.metadata, **metadata},
    )


def finish_window(
    conn: Connection,
    state: SyncState,
    *,
    status: str,
    aggregate_hash: str,
    metadata: dict[str, Any],
    now: datetime | None = None,
    review_card: bool = False,
) -> SyncState | None:
    """`review_card`: flag the window for the card worker, which plans its review card after
    this transaction, in one of its own (docs/review-cards.md, "How a card is planned"). The
    flag is only ever set here: a finish without it leaves an earlier one to the worker."""
    if status not in TERMINAL_WINDOW_STATUSES:
        raise ValueError(f"finish_window needs a terminal status, got {status!r}")
    stamp = now or datetime.now(UTC)
    return _holder_writes(
        conn,
        state,
        stamp,
        status=status,
        last_seen_content_hash=aggregate_hash,
        last_seen_updated_at=stamp,
        metadata_json={**state.metadata, **metadata},
        last_error=None,
        deferral_count=0,
        **RELEASED,
        **({"review_card_pending": True} if review_card else {}),
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
    return _holder_writes(
        conn,
        state,
        now or datetime.now(UTC),
        status=WindowStatus.PENDING,
        attempt_count=case((ss.c.attempt_count > 0, ss.c.attempt_count - 1), else_=0),
        deferral_count=ss.c.deferral_count + 1,
        deferred=True,
        next_attempt_at=retry_at,
        last_error=error[:MAX_ERROR_CHARS],
        lease_owner=None,
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
    return _holder_writes(
        conn,
        state,
        now or datetime.now(UTC),
        status=WindowStatus.FAILED,
        last_error=error[:MAX_ERROR_CHARS],
        next_attempt_at=retry_at,
        **RELEASED,
    )


def reset_window(conn: Connection, state: SyncState, *, now: datetime | None = None) -> bool:
    """An operator's explicit replay: the whole window runs again from its first chunk."""
    moved = transition(
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
    return records(
        conn,
        select(ss)
        .where(
            ss.c.source_type == SOURCE_TYPE_WINDOW,
            ss.c.status == WindowStatus.PROCESSING,
            ss.c.processing_started_at <= stamp - stale_timeout,
        )
        .order_by(ss.c.window_start)
        .limit(limit),
        to_state,
    )


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


def reopen_summary(conn: Connection, state_ids: Sequence[int]) -> int:
    """Let the summary decide again for these finished windows (a recall changed one of their
    entries, docs/lifecycle.md "What a recall and a hold do to each copy"): the flag
    `mark_summary_attempted` flipped goes back, so the summary sensor sees the windows again."""
    if not state_ids:
        return 0
    result = conn.execute(
        ss.update()
        .where(ss.c.id.in_(sorted(set(state_ids))), ss.c.summary_attempted == true())
        .values(summary_attempted=False, revision=ss.c.revision + 1)
    )
    return int(result.rowcount)


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
    values = {
        "status": WindowStatus.PENDING,
        "next_attempt_at": reissue_at,
        **RELEASED,
        "updated_at": stamp,
    }
    return transition(
        conn, state, where=_runnable(stamp, max_attempts, stale_timeout), values=values
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
    values: dict[str, Any] = {
        "attempt_count": ss.c.attempt_count + 1,
        "unclaimed_runs": ss.c.unclaimed_runs + 1,
        **RELEASED,
        "updated_at": now or datetime.now(UTC),
    }
    if state.attempt_count + 1 >= max_attempts:
        values.update(status=WindowStatus.FAILED, next_attempt_at=None, last_error=UNCLAIMED_ERROR)
    else:
        values.update(status=WindowStatus.PENDING, next_attempt_at=reissue_at)
    return transition(conn, state, expected_status=WindowStatus.PENDING, values=values)


@dataclass(frozen=True, slots=True)
class WindowPoll:
    """What an idle discovery tick reads, in one statement (`poll_unfinished_windows`)."""

    max_evidence_id: int
    unfinished: list[SyncState]
    latest_seconds: int | None = None
    """The recorded size of the default namespace's latest window state (the last made;
    `LEGACY_WINDOW_SECONDS` for a row that records none); None when there is no window yet."""
    latest_end: datetime | None = None
    """That window's end."""

    @property
    def latest(self) -> tuple[timedelta, datetime] | None:
        """The last-made window's size and end, as `window_size_conflict` reads them."""
        if self.latest_seconds is None or self.latest_end is None:
            return None
        return timedelta(seconds=self.latest_seconds), self.latest_end


def poll_unfinished_windows(conn: Connection, *, max_attempts: int, limit: int) -> WindowPoll:
    """The highest evidence id, every unfinished window state and the size of the latest
    window, in one statement.

    Unfinished: pending, processing, or failed with attempts left, however old the window and
    whatever its workspace's status: every window with a state ends in a terminal status (or
    exhausted, for an operator), so none is left out once it ages past the lookback. Rows are
    unfinished only while requested or retrying, so there are few of them. This is the whole
    cost of an idle discovery tick, so it is one indexed round trip: a one-row subquery for
    max(id) and the last-made window's size and end (a backward seek of the primary key),
    left-joined to the (few) unfinished rows.
    """
    latest = (
        select(ss.c.window_seconds, ss.c.window_end)
        .where(ss.c.source_type == SOURCE_TYPE_WINDOW, ss.c.processor_version.is_(None))
        .order_by(ss.c.id.desc())
        .limit(1)
        .subquery("latest")
    )
    top = (
        select(
            func.max(ev.c.id).label("max_evidence_id"),
            select(func.coalesce(latest.c.window_seconds, LEGACY_WINDOW_SECONDS))
            .scalar_subquery()
            .label("latest_seconds"),
            select(latest.c.window_end).scalar_subquery().label("latest_end"),
        )
    ).subquery("top")
    unfinished = and_(
        ss.c.source_type == SOURCE_TYPE_WINDOW,
        or_(
            ss.c.status.in_(BACKLOG_WINDOW_STATUSES),
            and_(ss.c.status == WindowStatus.FAILED, ss.c.attempt_count < max_attempts),
        ),
    )
    rows = conn.execute(
        select(top.c.max_evidence_id, top.c.latest_seconds, top.c.latest_end, ss)
        .select_from(top.outerjoin(ss, unfinished))
        .order_by(ss.c.window_start, ss.c.id)
        .limit(limit)
    ).all()
    if not rows:
        return WindowPoll(0, [])
    first = rows[0]
    return WindowPoll(
        max_evidence_id=int(first.max_evidence_id or 0),
        unfinished=[to_state(row) for row in rows if row.id is not None],
        latest_seconds=None if first.latest_seconds is None else int(first.latest_seconds),
        latest_end=first.latest_end,
    )


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
            state = to_state(row)
            found[(state.workspace_id, state.source_key)] = state
    return found


# --- windows awaiting a summary decision (docs/design.md §8) --------------------------------


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


# --- the correlated fragment other stores' statements embed --------------------------------


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
