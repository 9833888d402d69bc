"""Window discovery: one tick of the watcher of docs/design.md §6, as the sensor runs it.

What a tick does, cheapest first:

1. One statement returns the highest evidence id and every unfinished window state (pending,
   processing, failed with attempts left). With nothing new and nothing unfinished, that is the
   whole tick.
2. Evidence ids above the cursor's settled mark are read (a primary-key range: the new rows
   only) and mapped to fixed UTC windows. A window before a chat's frontier is checked on its
   own (late delivery into an old, empty window); later ones are left to the frontier walk.
3. Candidates are taken oldest first across all workspaces from one heap: due retries, stale
   windows, late windows and each chat's frontier. A frontier is walked one non-empty window
   at a time with a single index seek per window (`first_eligible_at_or_after`), so a tick costs
   O(uncovered windows), never O(history); a chat whose frontier is a window that cannot have
   closed yet costs nothing at all.
4. A window is taken only once closed (`window_end + close grace`) and, with reconciliation on,
   once the chat's collection checkpoint covers its end; it gets its state row only then, and
   only if eligible evidence exists (`create_window_if_evidence`); the row is marked requested
   (`requeue_window`) in the same transaction. Backlog limits (per workspace and global) cap
   the windows requested and not finished; what does not fit stays behind the frontier for a
   later tick, so a backlog drains at the speed of runs, not of ticks.
5. Stale `processing` rows become retryable (or failed once their attempts are spent), windows
   deferred by an AI outage are requested again once a backoff ends (all of them, in window
   order, keeping their slots), and requests that never turned into a Dagster run are re-issued
   after a stale timeout (a run that ended without claiming its window counts as an attempt).
   A stale window's run is released only when it holds no live lease (a run that still works
   keeps going and loses only the window taken from it); the windows a released run was asked
   to synthesize and never claimed are requested again at once, with no attempt charged.

Workspace eligibility (status, age, type) decides what is ingested, not what is synthesized:
every chat with stored evidence is followed and every window state is handled the same in every
workspace, whatever its status became, so all stored evidence ends in a terminal window. Only
the wait for collection coverage applies to workspaces that are still collected.

Pure rules live in `windows.planning`; this module only reads, writes and orders.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Protocol

import structlog
from sqlalchemy import Connection, Engine

from timeline_pipeline.domain.keys import InvalidKey
from timeline_pipeline.domain.states import WindowStatus
from timeline_pipeline.domain.sync_states import SyncState
from timeline_pipeline.domain.window_keys import WindowRef, window_start_of
from timeline_pipeline.domain.workspaces import Workspace
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import checkpoints, evidence, window_states, workspaces
from timeline_pipeline.windows.batches import RunScope, request_group, run_tags
from timeline_pipeline.windows.collection import waits_for_collection
from timeline_pipeline.windows.planning import (
    Admission,
    ChatKey,
    DiscoveryCursor,
    DiscoveryLimits,
    StateAction,
    classify_state,
    collection_covers,
    is_closed,
    run_key,
    window_size_conflict,
)

__all__ = [
    "DEFAULT_TICK_BUDGET",
    "SCAN_CAP",
    "DiscoveryTick",
    "RunLookup",
    "RunScopes",
    "TickOutcome",
    "WindowRequest",
]

SCAN_CAP = 50_000
"""Evidence ids read per tick at most; a larger burst is read over the next ticks."""

UNFINISHED_LIMIT = 10_000
"""Unfinished window states loaded per tick; far above the backlog limits that bound them."""

BATCH_HOLD_SECONDS = 0.2
"""Longest a tick holds one transaction open before committing what it has done."""

DEFAULT_TICK_BUDGET = timedelta(seconds=40)
"""Stop starting new work after this long: Dagster abandons a tick after 60 s."""

log = structlog.get_logger(__name__)

STALE_ERROR = "stale: the worker stopped reporting and no attempts are left"


def _recorded_seconds(
    window: timedelta, unfinished: Sequence[SyncState], latest_seconds: int | None
) -> int | None:
    """The other size in use, for the refusal's log line."""
    for state in unfinished:
        size = state.recorded_window
        if size is not None and size != window:
            return int(size.total_seconds())
    return latest_seconds


class RunLookup(Protocol):
    """Which of these request groups (`windows.batches.request_group`) Dagster has runs for:
    group -> True once every run of the group has finished."""

    def __call__(self, groups: Sequence[str], /) -> Mapping[str, bool]: ...


class RunScopes(Protocol):
    """The windows each of these runs (lease owners) was asked to synthesize
    (`windows.batches.RunScope`); a run the sensor did not request is left out."""

    def __call__(self, run_ids: Sequence[str], /) -> Mapping[str, RunScope]: ...


@dataclass(frozen=True, slots=True)
class WindowRequest:
    """A run to request for one window partition."""

    ref: WindowRef
    state: SyncState
    run_key: str
    """The key of a run of this window alone; a batch run has its own (`windows.batches`)."""
    tags: Mapping[str, str]
    reason: str  # new | retry | stale | deferred | pending | reissue | relaunch | unreached
    group: str = ""
    """The tick and lane that requested it (`timeline/request`)."""


@dataclass
class TickOutcome:
    cursor: DiscoveryCursor
    requests: list[WindowRequest] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    oldest_uncovered: datetime | None = None
    skip_reason: str | None = None
    abandoned_owners: list[str] = field(default_factory=list)
    """Lease owners (run ids) of windows found stale this tick that hold no live lease: they
    stopped reporting, so whatever tracks them as running (Dagster's run queue) should stop
    counting them. A run with a live lease on another window still works and is not named."""


@dataclass(frozen=True, slots=True)
class _Walk:
    chat: ChatKey


@dataclass(frozen=True, slots=True)
class _New:
    ref: WindowRef
    from_walk: bool


@dataclass(frozen=True, slots=True)
class _Retry:
    ref: WindowRef
    state: SyncState
    action: StateAction


_Item = _Walk | _New | _Retry


class DiscoveryTick:
    """One evaluation; build a new one per tick."""

    def __init__(
        self,
        engine: Engine,
        settings: LarkTimelineSettings,
        cursor: DiscoveryCursor,
        now: datetime,
        *,
        run_lookup: RunLookup | None = None,
        run_scopes: RunScopes | None = None,
        budget: timedelta = DEFAULT_TICK_BUDGET,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.engine = engine
        self.settings = settings
        self.limits = DiscoveryLimits.from_settings(settings)
        self.cursor = cursor
        self.now = now
        self.run_lookup = run_lookup
        self.run_scopes = run_scopes
        self._clock = clock
        self._deadline = clock() + budget.total_seconds()
        self.outcome = TickOutcome(cursor=cursor)
        self._workspaces: dict[str, Workspace] = {}
        self._coverage: dict[ChatKey, datetime | None] = {}
        self._heap: list[tuple[datetime, int, _Item]] = []
        self._seq = itertools.count()
        self._walk_at: dict[ChatKey, datetime] = {}
        self._held: dict[ChatKey, datetime] = {}
        self._polled: set[int] = set()
        self._alive: set[str] = set()
        """Lease owners holding a live (not stale) lease: runs that still work."""
        self._rerequested: set[int] = set()
        self._conn: Connection | None = None
        self._began: float | None = None

    # --- plumbing ----------------------------------------------------------------------------

    @contextmanager
    def _tx(self) -> Iterator[Connection]:
        """One connection for the tick, committed in short batches.

        A commit per window would make a tick cost one WAL flush per window (most of its time
        on PostgreSQL); one transaction for the whole tick would hold SQLite's write lock
        (every transaction there is BEGIN IMMEDIATE) while the receiver waits. So work is
        committed once it has held the transaction for `BATCH_HOLD_SECONDS`, and at the end.
        State writes are requests only once committed: the tick commits before it returns.
        """
        if self._conn is None:
            self._conn = self.engine.connect()
        conn = self._conn
        try:
            yield conn
        except BaseException:
            conn.rollback()
            raise
        if not conn.in_transaction():
            return
        if self._began is None:
            self._began = self._clock()
        elif self._clock() - self._began >= BATCH_HOLD_SECONDS:
            self._commit()

    def _commit(self) -> None:
        if self._conn is not None and self._conn.in_transaction():
            self._conn.commit()
        self._began = None

    def _out_of_time(self) -> bool:
        return self._clock() >= self._deadline

    def _push(self, start: datetime, item: _Item) -> None:
        heapq.heappush(self._heap, (start, next(self._seq), item))

    def _note_uncovered(self, start: datetime) -> None:
        oldest = self.outcome.oldest_uncovered
        if oldest is None or start < oldest:
            self.outcome.oldest_uncovered = start

    @property
    def _horizon(self) -> datetime:
        """Where a cold start begins looking: nothing older can have been ingested since."""
        return window_start_of(self.now - self.limits.lookback, self.limits.window)

    def _waits(self, workspace_id: str) -> bool:
        """Whether the workspace's windows wait for collection coverage: the rule shared with
        reruns (`windows.collection.waits_for_collection`)."""
        return waits_for_collection(
            self._workspaces.get(workspace_id),
            self.settings,
            self.now,
            reconciliation_enabled=self.limits.reconciliation_enabled,
        )

    def _request(self, ref: WindowRef, state: SyncState, reason: str) -> None:
        lanes = self.limits.lanes
        self.outcome.requests.append(
            WindowRequest(
                ref,
                state,
                run_key(ref, state),
                run_tags(ref, state, lanes),
                reason,
                request_group(ref, state, lanes),
            )
        )
        self.outcome.counts[f"requested_{reason}"] += 1

    # --- the tick ----------------------------------------------------------------------------

    def run(self) -> TickOutcome:
        try:
            outcome = self._run()
            self._commit()
            return outcome
        finally:
            if self._conn is not None:
                if self._conn.in_transaction():
                    self._conn.rollback()
                self._conn.close()
                self._conn = None

    def _run(self) -> TickOutcome:
        if not self.settings.enabled:
            self.outcome.skip_reason = "the Lark timeline is disabled (enabled: false)"
            return self.outcome
        limits = self.limits
        with self._tx() as conn:
            poll = window_states.poll_unfinished_windows(
                conn, max_attempts=limits.max_attempts, limit=UNFINISHED_LIMIT
            )
        max_id, unfinished = poll.max_evidence_id, poll.unfinished
        refused = window_size_conflict(
            limits.window, unfinished, poll.latest, self.now, limits.lookback
        )
        if refused is not None:
            # Nothing is written and the cursor stays: the tick resumes where it was once the
            # sizes agree (docs/changing.md, "A 15-minute window").
            log.warning(
                "window_discovery.size_refused",
                configured_seconds=int(limits.window.total_seconds()),
                recorded_seconds=_recorded_seconds(limits.window, unfinished, poll.latest_seconds),
                reason=refused,
            )
            self.outcome.skip_reason = refused
            return self.outcome
        frontiers, late = self._read_new_evidence(max_id)
        self._load_workspaces(frontiers, late)
        admission = self._plan_unfinished(unfinished)
        self._plan_late(late, frontiers)
        for chat, start in frontiers.items():
            # Followed whatever the workspace's status became: its stored evidence is synthesized.
            self._walk_at[chat] = start
            self._push(start, _Walk(chat))
        self._load_coverage()
        self._drain(admission)
        self._release_dead_runs(unfinished)
        self._reissue(unfinished)
        self._finish_cursor()
        self.outcome.counts["in_flight"] = admission.total
        return self.outcome

    def _read_new_evidence(self, max_id: int) -> tuple[dict[ChatKey, datetime], set[WindowRef]]:
        """Frontiers to walk, and windows before them that got late evidence."""
        cursor = self.cursor
        late: set[WindowRef] = set()
        if not cursor.bootstrapped:
            frontiers = self._bootstrap()
            self.cursor = DiscoveryCursor(
                settled_id=max_id,
                scanned_id=max_id,
                marks=((self.now, max_id),),
                last_tick=self.now,
                bootstrapped=True,
            )
            self.outcome.counts["bootstrapped_chats"] = len(frontiers)
            return frontiers, late
        frontiers = dict(cursor.frontiers)
        settled, upper = cursor.scan_bounds(max_id, SCAN_CAP)
        rows: list[tuple[str, str, datetime]] = []
        if upper > settled:
            with self._tx() as conn:
                rows = evidence.eligible_since(conn, settled, upper)
        self.outcome.counts["scanned_rows"] = len(rows)
        for workspace_id, chat_id, occurred_at in rows:
            start = window_start_of(occurred_at, self.limits.window)
            frontier = frontiers.get((workspace_id, chat_id))
            if frontier is not None and start >= frontier:
                continue  # the frontier walk will reach it
            try:
                late.add(WindowRef(workspace_id, chat_id, start))
            except (InvalidKey, ValueError):
                self.outcome.counts["invalid_ids"] += 1
        self.cursor = cursor.advance(now=self.now, settled=settled, scanned_to=upper)
        return frontiers, late

    def _bootstrap(self) -> dict[ChatKey, datetime]:
        """Cold start: every bound chat, in any workspace status, resumes after its latest
        window state (no earlier than the lookback: nothing older can have been ingested).

        Windows that already have a state are covered by the unfinished-state poll; what is
        new lies after the latest one. (Late evidence into an older, empty window while the
        cursor was lost is not looked for, like late evidence into a completed window.)
        """
        frontiers: dict[ChatKey, datetime] = {}
        with self._tx() as conn:
            chats = workspaces.bound_chats_with_latest_window(conn)
        horizon = self._horizon
        for bound in chats:
            self._workspaces[bound.workspace.id] = bound.workspace
            start = horizon
            if bound.latest_window_start is not None:
                start = max(horizon, bound.latest_window_start + self.limits.window)
            if bound.latest_evidence_at is None or bound.latest_evidence_at < start:
                continue  # nothing after its latest window: quiet, costs nothing to follow
            try:
                WindowRef(bound.workspace.id, bound.chat_id, start)
            except (InvalidKey, ValueError):
                self.outcome.counts["invalid_ids"] += 1
                continue
            frontiers[(bound.workspace.id, bound.chat_id)] = start
        return frontiers

    def _load_workspaces(
        self,
        frontiers: Mapping[ChatKey, datetime],
        late: set[WindowRef],
    ) -> None:
        # Only windows without a state yet need their workspace (does collection still run,
        # so that they wait for it?); existing states are handled the same in every workspace,
        # so a tick with work in flight stays cheap.
        wanted = {ws for ws, _ in frontiers} | {ref.workspace_id for ref in late}
        wanted -= self._workspaces.keys()
        if wanted:
            with self._tx() as conn:
                self._workspaces.update(workspaces.workspaces_by_ids(conn, sorted(wanted)))

    def _load_coverage(self) -> None:
        if not self.limits.reconciliation_enabled:
            return
        chats: set[ChatKey] = set()
        for _, _, item in self._heap:
            if isinstance(item, _Walk):
                chats.add(item.chat)
            elif isinstance(item, _New):
                chats.add(item.ref.chat_key)
        if chats:
            with self._tx() as conn:
                self._coverage = checkpoints.checkpoint_coverage(conn, sorted(chats))

    def _plan_unfinished(self, unfinished: Sequence[SyncState]) -> Admission:
        limits = self.limits
        in_flight: list[str] = []
        outage_due = any(
            classify_state(state, self.now, limits) is StateAction.RETRY_DEFERRED
            for state in unfinished
        )
        for state in unfinished:  # oldest window first
            self._polled.add(state.id)
            if state.scope_key is None or state.window_start is None:
                continue
            try:
                ref = WindowRef(
                    state.workspace_id, state.scope_key, state.window_start, state.processor_version
                )
            except (InvalidKey, ValueError):
                self.outcome.counts["invalid_ids"] += 1
                continue
            action = classify_state(state, self.now, limits)
            if action is StateAction.RUNNING and state.lease_owner:
                self._alive.add(state.lease_owner)
            if action is StateAction.DEFERRED and outage_due:
                # One deferred window's backoff is over: all of them go again, in window
                # order, so that once the model answers the backlog resumes oldest first
                # rather than in the order the jittered backoffs happen to end.
                action = StateAction.RETRY_DEFERRED
            self._note_uncovered(ref.window_start)
            if action.in_flight:
                in_flight.append(state.workspace_id)
            if action is StateAction.FAIL_STALE:
                with self._tx() as conn:
                    failed = window_states.fail_window(
                        conn, state, error=STALE_ERROR, retry_at=None, now=self.now
                    )
                self.outcome.counts["failed_stale"] += int(failed is not None)
                if failed is not None and state.lease_owner:
                    self.outcome.abandoned_owners.append(state.lease_owner)
            elif action in (
                StateAction.REQUEUE_STALE,
                StateAction.REQUEST,
                StateAction.RETRY_DEFERRED,
            ):
                # Whatever the workspace's status became: a window with a state row holds
                # stored evidence, and it ends in a terminal status in every workspace.
                self._push(ref.window_start, _Retry(ref, state, action))
            elif action is StateAction.WAIT:
                self.outcome.counts["waiting_retry"] += 1
            elif action is StateAction.DEFERRED:
                self.outcome.counts["waiting_outage"] += 1
        return Admission(limits.per_workspace, limits.global_limit, in_flight)

    def _plan_late(self, late: set[WindowRef], frontiers: Mapping[ChatKey, datetime]) -> None:
        candidates = list(late)
        if not candidates:
            return
        with self._tx() as conn:
            existing = window_states.window_states_by_keys(
                conn, [(ref.workspace_id, ref.source_key) for ref in candidates]
            )
        for ref in sorted(candidates, key=WindowRef.sort_key):
            if (ref.workspace_id, ref.source_key) in existing:
                continue  # finished, or unfinished and already in the poll
            frontier = frontiers.get(ref.chat_key)
            if frontier is not None and ref.window_start >= frontier:
                continue
            self._push(ref.window_start, _New(ref, from_walk=False))

    def _drain(self, admission: Admission) -> None:
        while self._heap:
            start, _, item = heapq.heappop(self._heap)
            stop = admission.full or self._out_of_time()
            if isinstance(item, _Walk):
                self._step_walk(item.chat, start, admission, stop)
            elif isinstance(item, _Retry):
                self._retry(item, admission, stop)
            else:
                self._take_new(item, admission, stop)
        if self._out_of_time():
            self.outcome.counts["budget_exhausted"] = 1

    def _hold(self, chat: ChatKey, start: datetime, *, from_walk: bool, reason: str) -> None:
        if from_walk:
            self._walk_at[chat] = start
        else:
            held = self._held.get(chat)
            self._held[chat] = start if held is None else min(held, start)
        self.outcome.counts[f"held_{reason}"] += 1

    def _step_walk(self, chat: ChatKey, start: datetime, admission: Admission, stop: bool) -> None:
        limits = self.limits
        if not is_closed(start + limits.window, self.now, limits.close_grace):
            self._walk_at[chat] = start  # nothing at or after `start` can have closed yet
            return
        if stop or not admission.has_room(chat[0]):
            self._walk_at[chat] = start
            self.outcome.counts["held_backlog"] += 1
            return
        with self._tx() as conn:
            found = evidence.first_eligible_at_or_after(conn, chat[0], chat[1], start)
        self.outcome.counts["seeks"] += 1
        if found is None:
            self._walk_at.pop(chat, None)  # nothing uncovered left: the chat goes quiet
            return
        window = window_start_of(found, limits.window)
        self._walk_at[chat] = window
        self._push(window, _New(WindowRef(chat[0], chat[1], window), from_walk=True))

    def _requeue(self, conn: Connection, state: SyncState) -> SyncState | None:
        """Back to pending by the window's own rules (attempts, stale timeout, reissue)."""
        return window_states.requeue_window(
            conn,
            state,
            max_attempts=self.limits.max_attempts,
            stale_timeout=self.limits.stale_timeout,
            reissue_at=self.now + self.limits.reissue_after,
            now=self.now,
        )

    def _retry(self, item: _Retry, admission: Admission, stop: bool) -> None:
        ref, state = item.ref, item.state
        if item.action is StateAction.REQUEST and (stop or not admission.admit(ref.workspace_id)):
            self.outcome.counts["deferred_retries"] += 1
            return
        if self._out_of_time():
            return
        with self._tx() as conn:
            requeued = self._requeue(conn, state)
        if requeued is None:  # a run took it meanwhile
            if item.action is StateAction.REQUEST:
                admission.release(ref.workspace_id)
            return
        if item.action is StateAction.REQUEUE_STALE:
            reason = "stale"
            if state.lease_owner:
                self.outcome.abandoned_owners.append(state.lease_owner)
        elif item.action is StateAction.RETRY_DEFERRED:
            reason = "deferred"
        else:
            reason = "retry" if state.status == WindowStatus.FAILED else "pending"
        self._request(ref, requeued, reason)

    def _take_new(self, item: _New, admission: Admission, stop: bool) -> None:
        limits = self.limits
        ref = item.ref
        chat = ref.chat_key
        end = ref.window_end(limits.window)
        if not is_closed(end, self.now, limits.close_grace):
            self._hold(chat, ref.window_start, from_walk=item.from_walk, reason="open")
            return
        if not collection_covers(end, self._coverage.get(chat), self._waits(ref.workspace_id)):
            self._hold(chat, ref.window_start, from_walk=item.from_walk, reason="collecting")
            self._note_uncovered(ref.window_start)
            return
        if stop or not admission.admit(ref.workspace_id):
            self._hold(chat, ref.window_start, from_walk=item.from_walk, reason="backlog")
            self._note_uncovered(ref.window_start)
            return
        with self._tx() as conn:
            state = window_states.create_window_if_evidence(
                conn,
                workspace_id=ref.workspace_id,
                chat_id=ref.chat_id,
                window_start=ref.window_start,
                window_end=end,
                now=self.now,
            )
            fresh = (
                state is not None
                and state.id not in self._polled
                and classify_state(state, self.now, limits) is StateAction.REQUEST
            )
            requeued = None
            if fresh:
                assert state is not None
                requeued = window_states.requeue_window(
                    conn,
                    state,
                    max_attempts=limits.max_attempts,
                    stale_timeout=limits.stale_timeout,
                    reissue_at=self.now + limits.reissue_after,
                    now=self.now,
                )
        if requeued is not None:
            self._note_uncovered(ref.window_start)
            self._request(ref, requeued, "new")
        else:
            admission.release(ref.workspace_id)
            self.outcome.counts["already_known" if state is not None else "emptied"] += 1
        if item.from_walk:
            self._walk_at[chat] = end
            self._push(end, _Walk(chat))

    def _release_dead_runs(self, unfinished: Sequence[SyncState]) -> None:
        """Name the runs whose stale windows the sweep took, and request again at once, with no
        attempt charged, the windows they were asked to synthesize and never claimed.

        A run that holds a live lease on another window still works: the sweep took only the
        stale window from it (its late writes to that window fail their compare-and-set) and it
        goes on with its batch, so it is not named. A run that holds none is dead (or hung): it
        is named, so that the orchestrator releases its queue slot, and its batch's windows
        still `pending` under its request are requested again in this tick rather than after
        two more stale timeouts, and not as an unclaimed run's attempt: they were never its
        fault (docs/scaling.md).
        """
        owners = dict.fromkeys(self.outcome.abandoned_owners)
        dead = [owner for owner in owners if owner not in self._alive]
        self.outcome.abandoned_owners = dead
        if not dead or self.run_scopes is None:
            return
        scopes = list(self.run_scopes(dead).values())
        if not scopes:
            return
        for state in unfinished:
            if classify_state(state, self.now, self.limits) is not StateAction.QUEUED:
                continue
            if state.scope_key is None or state.window_start is None:
                continue
            ref = WindowRef(
                state.workspace_id, state.scope_key, state.window_start, state.processor_version
            )
            group = request_group(ref, state, self.limits.lanes)
            if not any(scope.covers(ref, group) for scope in scopes):
                continue
            with self._tx() as conn:
                requeued = self._requeue(conn, state)
            if requeued is None:
                continue  # the run (or another) claimed it meanwhile
            self._rerequested.add(state.id)
            self._request(ref, requeued, "unreached")

    def _reissue(self, unfinished: Sequence[SyncState]) -> None:
        """Requests that Dagster never turned into a run are made again, same run key.

        A sensor's state writes commit before Dagster receives the tick's run requests; a tick
        that dies in between would leave windows `pending` forever. Once per stale timeout the
        sensor asks Dagster about requests older than that, by request group (the tick and lane
        that requested them, tag `timeline/request`: a batch run carries many windows): a group
        without runs is requested again, and a window still pending once every run of its group
        has finished (its run failed before claiming it) counts as an attempt and is replaced by
        a new request, until the window is out of attempts and stays `failed` for an operator.
        """
        cursor = self.cursor
        if cursor.reissue_at is not None and cursor.reissue_at > self.now:
            return
        self.cursor = replace(cursor, reissue_at=self.now + self.limits.reissue_after)
        due: list[tuple[str, WindowRef, SyncState]] = []
        for state in unfinished:
            if state.id in self._rerequested:
                continue
            if classify_state(state, self.now, self.limits) is not StateAction.QUEUED:
                continue
            if state.next_attempt_at is None or state.next_attempt_at > self.now:
                continue
            if state.scope_key is None or state.window_start is None:
                continue
            ref = WindowRef(
                state.workspace_id, state.scope_key, state.window_start, state.processor_version
            )
            due.append((request_group(ref, state, self.limits.lanes), ref, state))
        if not due:
            return
        groups = sorted({group for group, _, _ in due})
        known = self.run_lookup(groups) if self.run_lookup is not None else {}
        for group, ref, state in due:
            if group not in known:
                self._request(ref, state, "reissue")
            elif known[group]:
                # Every run of its request ended and the window is still pending: none claimed it.
                with self._tx() as conn:
                    relaunched = window_states.relaunch_unclaimed(
                        conn,
                        state,
                        max_attempts=self.limits.max_attempts,
                        reissue_at=self.now + self.limits.reissue_after,
                        now=self.now,
                    )
                if relaunched is None:
                    continue  # a run claimed it meanwhile
                if relaunched.status == WindowStatus.PENDING:
                    self._request(ref, relaunched, "relaunch")
                else:
                    self.outcome.counts["failed_unclaimed"] += 1

    def _finish_cursor(self) -> None:
        frontiers: dict[ChatKey, datetime] = dict(self._walk_at)
        for chat, start in self._held.items():
            held = frontiers.get(chat)
            frontiers[chat] = start if held is None else min(held, start)
        self.cursor = replace(self.cursor, frontiers=frontiers)
        self.outcome.cursor = self.cursor
        self.outcome.counts["active_chats"] = len(frontiers)
