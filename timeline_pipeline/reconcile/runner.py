"""Reconcile Lark chat history into evidence, one (workspace, chat) checkpoint at a time.

The I/O half of reconciliation (planning is in `planning`). For each target it reads the chat
checkpoint, lists the planned range page by page, then lists the replies of the threads it
knows within the ingestion lookback (Lark lists thread roots only, so a lost reply to an old
thread is found no other way), oldest-served first under `reconcileMaxThreads` (`threads`),
and commits each page through the receiver's own write path (`ingest.writer.ingest`) in one
transaction together with the in-progress marker. The high-water mark moves only after the
last page (docs/design.md §3); any failure leaves it where it was, records the failure on the
checkpoint and is reported as a counted failure, and the next run resumes from the marker.

A thread whose root was posted before the ingestion floor (the alert that opened the incident,
posted just before the workspace was created) is known from the chat's messages in the
`PRE_FLOOR_ROOT_MARGIN` before the floor, read back from the floor page by page (newest first,
for thread ids only) up to `reconcilePreFloorScanLimit` messages, so an alert storm between the
root and the floor does not hide it (issue 35, item 6); a thread whose replies are stored is
known from their thread id anyway (`thread_first_seen`). The root stays out of evidence (it is
out of scope, docs/design.md §1), but its replies inside the floor are listed like any other
thread's, and coverage stops where such a thread was not listed. A scan that reaches its limit
gives up, and the chat's report and checkpoint say so (`pre_floor_roots_given_up`): the margin
before a fixed floor never changes, so holding coverage for it would hold it for good.

Completed synthesis windows are never touched here: an edit or recall refreshes evidence only
(docs/design.md §3, §11).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, TypeVar

import structlog
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from timeline_pipeline.db.engine import DatabaseUnavailable, transaction
from timeline_pipeline.domain.sync_states import (
    CHECKPOINT_MARKER_KEY,
    CHECKPOINT_METADATA_VERSION,
    SyncState,
)
from timeline_pipeline.ingest.eligibility import Scope
from timeline_pipeline.ingest.writer import ingest
from timeline_pipeline.lark.client import (
    LarkApiError,
    LarkClient,
    LarkPermissionError,
    LarkTokenError,
)
from timeline_pipeline.lark.display_names import DisplayNameCache, fill_missing_display_names
from timeline_pipeline.lark.message_policy import is_self_message
from timeline_pipeline.lark.normalize import NormalizedLarkMessage
from timeline_pipeline.lifecycle import hold_gate
from timeline_pipeline.reconcile.metrics import ReconcileMetrics
from timeline_pipeline.reconcile.pages import NormalizedPage, normalize_page
from timeline_pipeline.reconcile.planning import (
    CheckpointView,
    MessageKey,
    Mode,
    Progress,
    RangeBounds,
    RangeKind,
    ReconcileRange,
    newest_within,
    next_high_water,
    plan_range,
)
from timeline_pipeline.reconcile.report import (
    THREAD_BUDGET_EXHAUSTED,
    ChatReport,
    FailureKind,
    RunReport,
)
from timeline_pipeline.reconcile.targets import Target
from timeline_pipeline.reconcile.threads import ThreadPlan, known_threads, plan_threads
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store.checkpoints import (
    advance_checkpoint,
    ensure_checkpoint,
    record_checkpoint_failure,
    record_progress,
)
from timeline_pipeline.store.evidence import thread_first_seen
from timeline_pipeline.store.reconcile_threads import (
    mark_thread_listed,
    prune_thread_listings,
    threads_last_listed,
)

log = structlog.get_logger(__name__)

PRE_FLOOR_ROOT_MARGIN = timedelta(hours=1)
"""How far before the ingestion floor the chat is read for the roots of threads that reach
into it (thread ids only; nothing before the floor is stored)."""
PRE_FLOOR_ROOT_PAGE = 50
"""Messages one request reads in that margin, newest first (Lark's largest page)."""

T = TypeVar("T")


class CheckpointConflict(Exception):
    """Another run changed this chat's checkpoint first; this run stops and lets it finish."""


class Reconciler:
    """Runs reconciliation for a list of targets with one client, engine and settings."""

    def __init__(
        self,
        engine: Engine,
        client: LarkClient,
        settings: LarkTimelineSettings,
        *,
        app_id: str | None = None,
        metrics: ReconcileMetrics | None = None,
        fill_names: bool = True,
        timer: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.engine = engine
        self.client = client
        self.settings = settings
        self.app_id = app_id
        self.metrics = metrics or ReconcileMetrics()
        self.fill_names = fill_names
        self.name_cache = DisplayNameCache.from_settings(settings)
        self.timer = timer

    def run(
        self,
        targets: Sequence[Target],
        *,
        mode: Mode,
        scope: Scope,
        now: datetime | None = None,
        workspaces_skipped: Counter[str] | None = None,
    ) -> RunReport:
        """Reconcile every target; one chat's failure is counted and the others still run."""
        moment = now or datetime.now(UTC)
        started = self.timer()
        report = RunReport(mode.value, moment, workspaces_skipped=workspaces_skipped or Counter())
        for target in targets:
            report.chats.append(self.run_chat(target, mode=mode, scope=scope, now=moment))
        if self.fill_names:
            self._fill_display_names(report)
        report.duration_seconds = self.timer() - started
        return report

    def _fill_display_names(self, report: RunReport) -> None:
        """Name the senders of what was just collected (batched contact lookups, cached).

        Best effort: a failed lookup is counted, the collected evidence stands without names.
        """
        for workspace_id in dict.fromkeys(chat.workspace_id for chat in report.chats if chat.ok):
            try:
                filled = fill_missing_display_names(
                    self.engine,
                    workspace_id,
                    self.client.batch_user_names,
                    cache=self.name_cache,
                    batch_size=self.settings.display_name_batch_size,
                )
            except (LarkApiError, DatabaseUnavailable, SQLAlchemyError) as exc:
                report.name_lookup_failures += 1
                log.warning(
                    "reconcile.display_names.fill_failed",
                    workspace_id=workspace_id,
                    error_type=type(exc).__name__,
                )
            else:
                report.names_filled += filled.rows_updated

    def run_chat(self, target: Target, *, mode: Mode, scope: Scope, now: datetime) -> ChatReport:
        report = ChatReport(target.workspace.id, target.chat_id, mode.value)
        started = self.timer()
        try:
            _ChatRun(self, target, mode, scope, now, report).run()
        finally:
            report.duration_seconds = self.timer() - started
            self.metrics.observe(report)
            log.info(
                "reconcile.chat.finished",
                workspace_id=report.workspace_id,
                chat_id=report.chat_id,
                kind=report.kind,
                pages=report.pages,
                messages=report.messages,
                failure=report.failure,
            )
        return report


class _ChatRun:
    """One (workspace, chat) range: the state that lives for the duration of one run."""

    def __init__(
        self,
        owner: Reconciler,
        target: Target,
        mode: Mode,
        scope: Scope,
        now: datetime,
        report: ChatReport,
    ) -> None:
        self.engine = owner.engine
        self.client = owner.client
        self.settings = owner.settings
        self.app_id = owner.app_id
        self.timer = owner.timer
        self.workspace = target.workspace
        self.chat_id = target.chat_id
        self.mode = mode
        self.scope = scope
        self.now = now
        self.report = report
        self.state: SyncState | None = None
        self.threads = ThreadPlan((), ())
        self.committed: dict[str, datetime] = {}
        """Message id -> updated_at of what this run committed, so each is written once."""
        self.newest: MessageKey | None = None

    def run(self) -> None:
        try:
            self._run()
        except LarkTokenError as exc:
            self._fail(FailureKind.TOKEN_REJECTED, str(exc))
        except LarkPermissionError as exc:
            self._fail(FailureKind.PERMISSION_DENIED, str(exc))
        except LarkApiError as exc:
            self._fail(FailureKind.LARK_API_ERROR, str(exc))
        except CheckpointConflict as exc:
            self._fail(FailureKind.CONCURRENT_RUN, str(exc))
        except (DatabaseUnavailable, SQLAlchemyError) as exc:
            # A driver error can quote the statement's parameters (message text): name it only.
            self._fail(FailureKind.DATABASE_ERROR, f"database error {type(exc).__name__}")

    def _run(self) -> None:
        with transaction(self.engine) as conn:
            self.state = ensure_checkpoint(conn, self.workspace.id, self.chat_id)
        view = CheckpointView.from_row(
            self.state.last_seen_cursor, self.state.last_seen_updated_at, self.state.metadata
        )
        plan = plan_range(
            mode=self.mode,
            workspace_created_at=self.workspace.created_at,
            checkpoint=view,
            bounds=RangeBounds.from_settings(self.settings),
            now=self.now,
        )
        if plan is None:
            return
        self.report.kind = plan.kind.value
        self.report.range_start, self.report.range_end = plan.start, plan.end
        self.report.resumed_from = plan.resumed_from.encode() if plan.resumed_from else None
        self._collect(plan)
        self._advance(plan, view.high_water)

    def _collect(self, plan: ReconcileRange) -> None:
        marker = Progress(plan.kind, plan.committed_from, plan.end, plan.resumed_from, 0, self.now)
        listed_roots: dict[str, datetime] = {}
        for page in self._timed(self.client.iter_chat_messages(self.chat_id, plan.start, plan.end)):
            self.report.chat_pages += 1
            self.report.items += len(page.items)
            normalized = self._normalize(page.items)
            # The marker may only claim chat-listed keys: a thread reply can be hours newer than
            # its root, and resuming after it would skip the top-level messages in between.
            marker = marker.advanced(max(normalized.keys, default=None))
            for message in normalized.messages:
                if message.thread_id:
                    seen = listed_roots.get(message.thread_id, message.created_at)
                    listed_roots[message.thread_id] = min(seen, message.created_at)
            self._commit(normalized, marker, plan.end)
        for thread_id in self._threads_rooted_before(plan):
            # Known from the floor on: the root itself is out of scope.
            listed_roots.setdefault(thread_id, plan.floor)
        self.threads = self._plan_threads(plan, listed_roots)
        for thread in self.threads.serve:
            since = thread.fetch_from(
                range_start=plan.start, floor=plan.floor, overlap=self.settings.reconcile_overlap
            )
            self._commit(self._thread(thread.thread_id, since), marker, plan.end, thread.thread_id)

    def _threads_rooted_before(self, plan: ReconcileRange) -> list[str]:
        """Threads whose root lies in the margin before the floor: their replies may fall
        inside it, and no stored evidence or in-range listing names them.

        Read back from the floor a page at a time, each page ending at the oldest message the
        last one read (the client's bound is in whole seconds, so that second is read again and
        its messages told apart by id), until the margin is read or the scan limit is reached.
        """
        if self.settings.reconcile_max_threads <= 0:
            return []
        limit = self.settings.reconcile_pre_floor_scan_limit
        not_before = plan.floor - PRE_FLOOR_ROOT_MARGIN
        before = plan.floor
        read: set[str] = set()
        found: set[str] = set()
        while True:
            size = min(PRE_FLOOR_ROOT_PAGE, limit - len(read))
            if size <= 0:
                self.report.pre_floor_roots_given_up = True
                break
            page = self.client.newest_chat_messages_before(
                self.chat_id, before, not_before, limit=size
            )
            normalized = self._normalize(page.items)
            fresh = [m for m in normalized.messages if m.message_id not in read]
            read.update(m.message_id for m in fresh)
            found.update(m.thread_id for m in fresh if m.thread_id and m.created_at < plan.floor)
            if len(page.items) < size:
                break  # the margin is read to its start
            if not fresh:  # a full page of one second already read: no way further back
                self.report.pre_floor_roots_given_up = True
                break
            before = min(m.created_at for m in fresh)
        self.report.pre_floor_messages_read = len(read)
        if self.report.pre_floor_roots_given_up:
            log.warning(
                "reconcile.threads.pre_floor_scan_given_up",
                workspace_id=self.workspace.id,
                chat_id=self.chat_id,
                messages_read=len(read),
            )
        if found:
            log.info(
                "reconcile.threads.rooted_before_floor",
                workspace_id=self.workspace.id,
                chat_id=self.chat_id,
                threads=len(found),
            )
        return sorted(found)

    def _plan_threads(self, plan: ReconcileRange, listed_roots: dict[str, datetime]) -> ThreadPlan:
        """Every thread known within the lookback competes for the budget, oldest-served first."""
        with transaction(self.engine) as conn:
            # A delegated purge: through the legal-hold gate (docs/lifecycle.md).
            hold_gate.unless_held(
                conn,
                hold_gate.THREAD_LISTINGS,
                self.workspace.id,
                partial(prune_thread_listings, conn, self.workspace.id, self.chat_id, plan.floor),
                what="thread listing prune",
            )
            from_evidence = thread_first_seen(conn, self.workspace.id, self.chat_id, plan.floor)
            last_listed = threads_last_listed(conn, self.workspace.id, self.chat_id)
        known = known_threads(from_evidence, listed_roots, last_listed)
        threads = plan_threads(known, self.settings.reconcile_max_threads)
        self.report.threads_skipped = len(threads.skipped)
        if threads.skipped:
            self.report.skipped[THREAD_BUDGET_EXHAUSTED] += len(threads.skipped)
        return threads

    def _thread(self, thread_id: str, not_before: datetime) -> NormalizedPage:
        """The thread's replies back to `not_before` (newest first, then cut), minus what this
        run already committed (a root is listed by both its chat and its thread)."""
        collected = NormalizedPage()
        self.report.threads_fetched += 1
        pages = self.client.iter_thread_messages(thread_id, not_before=not_before)
        for page in self._timed(pages):
            self.report.thread_pages += 1
            self.report.items += len(page.items)
            collected.extend(self._normalize(page.items))
        collected.messages = [
            message
            for message in collected.messages
            if (seen := self.committed.get(message.message_id)) is None or message.updated_at > seen
        ]
        return collected

    def _normalize(self, items: Sequence[Mapping[str, Any]]) -> NormalizedPage:
        started = self.timer()
        page = normalize_page(
            items, max_text_chars=self.settings.max_message_chars, app_id=self.app_id
        )
        self.report.normalize_seconds += self.timer() - started
        return page

    def _commit(
        self,
        page: NormalizedPage,
        marker: Progress,
        end: datetime,
        listed_thread: str | None = None,
    ) -> None:
        """One transaction: the page's evidence, the marker that says it is committed and, for a
        thread's replies, the thread's last listing."""
        assert self.state is not None
        started = self.timer()
        with transaction(self.engine) as conn:
            result = ingest(
                conn,
                page.messages,
                [self.workspace],
                self.settings,
                self.now,
                self.scope,
                app_id=self.app_id,
            )
            if listed_thread is not None:
                mark_thread_listed(
                    conn, self.workspace.id, self.chat_id, listed_thread, at=self.now
                )
            moved = record_progress(conn, self.state, marker.to_json(), now=self.now)
            if moved is None:
                raise CheckpointConflict(
                    f"checkpoint of chat {self.chat_id} changed under this run (another run?)"
                )
        self.state = moved
        self.report.write_seconds += self.timer() - started
        self.report.messages += len(page.messages)
        self.report.upserts = self.report.upserts + result.upserts
        self.report.skipped.update(result.skipped)
        self.report.rejected.update(page.rejected)
        self.report.excluded.update(self._exclusions(page.messages))
        self.newest = next_high_water(self.newest, newest_within(page.keys, end))
        for message in page.messages:
            self.committed[message.message_id] = message.updated_at

    def _exclusions(self, messages: Sequence[NormalizedLarkMessage]) -> Counter[str]:
        """Senders that never reach synthesis, counted like the receiver counts them."""
        found: Counter[str] = Counter()
        for message in messages:
            if is_self_message(
                sender_type=message.sender_type, sender_id=message.sender_id, app_id=self.app_id
            ):
                found["self" if message.sender_id == self.app_id else "bot"] += 1
        return found

    def _advance(self, plan: ReconcileRange, previous: MessageKey | None) -> None:
        """Every page is committed: move the high-water mark and clear the marker."""
        assert self.state is not None
        mark = next_high_water(previous, self.newest)
        last_run = {
            "kind": plan.kind.value,
            "range_start": plan.start.isoformat(),
            "range_end": plan.end.isoformat(),
            "pages": self.report.pages,
            "messages": self.report.messages,
            "threads_skipped": self.report.threads_skipped,
            "pre_floor_roots_given_up": self.report.pre_floor_roots_given_up,
        }
        metadata: dict[str, object] = {
            "version": CHECKPOINT_METADATA_VERSION,
            CHECKPOINT_MARKER_KEY: None,
            "last_run": last_run,
        }
        if plan.kind is not RangeKind.INCREMENTAL and plan.resumed_from is None:
            metadata["last_full_scan_at"] = plan.end.isoformat()
        # A thread left out of this run's budget may hide a reply from when it was last listed:
        # coverage, which window discovery waits for, stops there (the cursor still moves, the
        # next chat range is unaffected: threads are chosen over the whole lookback).
        covered_until = self.threads.coverage(plan.end)
        with transaction(self.engine) as conn:
            advanced = advance_checkpoint(
                conn,
                self.state,
                cursor=mark.encode() if mark else None,
                covered_until=covered_until,
                metadata=metadata,
            )
        if not advanced:
            raise CheckpointConflict(
                f"checkpoint of chat {self.chat_id} changed before it could advance"
            )
        self.report.checkpoint_advanced = True
        self.report.covered_until = covered_until
        if mark is not None:
            self.report.newest_message_at = mark.created_at
            self.report.lag_seconds = max(0.0, (self.now - mark.created_at).total_seconds())

    def _fail(self, kind: FailureKind, detail: str) -> None:
        """Count the failure and keep the old high-water mark; the marker stays for resuming."""
        message = f"{kind.value}: {detail}"
        self.report.fail(kind, message)
        log.warning(
            "reconcile.chat.failed",
            workspace_id=self.workspace.id,
            chat_id=self.chat_id,
            kind=kind.value,
        )
        if self.state is None or kind is FailureKind.CONCURRENT_RUN:
            return
        try:
            with transaction(self.engine) as conn:
                record_checkpoint_failure(conn, self.state, message)
        except (DatabaseUnavailable, SQLAlchemyError):
            log.warning(
                "reconcile.checkpoint.failure_not_recorded",
                workspace_id=self.workspace.id,
                chat_id=self.chat_id,
            )

    def _timed(self, pages: Iterable[T]) -> Iterator[T]:
        """Yield from a page iterator, adding the time spent waiting on Lark to fetch_seconds."""
        iterator = iter(pages)
        while True:
            started = self.timer()
            try:
                item = next(iterator)
            except StopIteration:
                return
            finally:
                self.report.fetch_seconds += self.timer() - started
            yield item
