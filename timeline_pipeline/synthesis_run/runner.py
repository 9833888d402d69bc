"""Synthesize one window (docs/design.md §7): claim, read, chunk, call, commit, finish.

The run owns a window only after a compare-and-set moves its state to `processing`; a second
run for the same window finds nothing to claim and reports `skipped`. The window's eligible
evidence is read in (occurred_at, id) order, cut into chunks bounded by count and estimated
tokens, and each chunk's drafts are committed in the same transaction that advances the
window cursor, so a crash loses at most the chunk in progress and a retry resumes after the
last committed chunk (the window is still retried as a whole unit of scheduling: no
per-message state is ever written). A failing chunk is retried with bounded attempts and
backoff; past the limit the window is marked `failed` with bounded diagnostics and the
discovery sensor decides on a later whole-window attempt. An operator's replay resets the
state first, and the window runs again from its first chunk.

A synthesizer that calls a model holds one of the database's `maxConcurrentSynthesis` synthesis
slots (`db.synthesis_slots`, shared with rerun previews) from the window's first chunk call to
its end; when none comes free within a bounded wait the window is deferred with backoff, its
attempt given back, as in an outage of the model service.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

import structlog
from sqlalchemy import Connection, Engine

from timeline_pipeline.db.synthesis_slots import HeldSlot, take_synthesis_slot
from timeline_pipeline.domain.evidence import EvidenceRow
from timeline_pipeline.domain.states import TERMINAL_WINDOW_STATUSES, WindowStatus
from timeline_pipeline.domain.sync_states import SyncState
from timeline_pipeline.domain.window_keys import WindowRef, encode_window_cursor
from timeline_pipeline.retry import RetryPolicy
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import sync_states, window_states
from timeline_pipeline.synthesis.contract import (
    EvidenceItem,
    SynthesisChunk,
    SynthesisResult,
    Synthesizer,
)
from timeline_pipeline.synthesis.rules import RuleSynthesizer
from timeline_pipeline.synthesis_run import draft_writes
from timeline_pipeline.synthesis_run.core import (
    ModelUnavailable,
    call_synthesizer,
    context_candidates,
    read_window,
    window_chunks,
    window_locale,
)
from timeline_pipeline.synthesis_run.draft_matching import DraftOutcome
from timeline_pipeline.synthesis_run.drafts import draft_write, evidence_item
from timeline_pipeline.synthesis_run.failures import ChunkFailure, bounded, error_kind
from timeline_pipeline.synthesis_run.lineage import (
    aggregate_hash,
    evidence_lineage,
    in_order,
    late_evidence,
    late_lineage,
    plan_resume,
)
from timeline_pipeline.windows.planning import outage_backoff

__all__ = ["ModelUnavailable", "RunStatus", "WindowRunReport", "WindowRunner"]

log = structlog.get_logger(__name__)

MAX_LATE_PASSES = 1
"""Extra passes over evidence that arrived while the run worked; what arrives after the last
one is reported as `late_evidence` (bounded, so a flood into a closed window cannot hold a
run forever)."""
RESET_TRIES = 5


class RunStatus(StrEnum):
    COMPLETED = "completed"  # the window yielded timeline entries (new, updated or re-found)
    IGNORED = "ignored"  # nothing timeline-worthy; the evidence stays traceable
    SKIPPED = "skipped"  # not ours to run: finished, exhausted, or claimed by another run
    EMPTY = "empty"  # no eligible evidence, so no state row exists (nothing to do)
    FAILED = "failed"  # a chunk exhausted its attempts; the state records why
    DEFERRED = "deferred"  # model unavailable or no synthesis slot: pending, attempt not counted


class LeaseLost(Exception):
    """The state moved under us (a replay or a stale-timeout takeover); stop writing."""


@dataclass
class WindowRunReport:
    """What one run did; becomes the materialization's metadata (lineage to evidence)."""

    ref: WindowRef
    status: RunStatus
    state_id: int | None = None
    attempt: int = 0
    evidence: list[EvidenceItem] = field(default_factory=list)
    aggregate_hash: str | None = None
    chunks_run: int = 0
    chunks_total: int = 0
    model_calls: int = 0
    entries_created: int = 0
    entries_updated: int = 0
    entries_supported: int = 0
    entries_unchanged: int = 0
    bindings: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    chunk_evidence: list[int] = field(default_factory=list)
    """Evidence rows of each chunk this run committed, in order."""
    chunk_retries: int = 0
    """Synthesizer calls repeated after a failed one, inside this run."""
    validation_errors: int = 0
    """Answers refused as invalid (schema, cited ids), each one a failed call."""
    model_seconds: float = 0.0
    """Wall time inside the synthesizer's calls (its own retries included, this run's backoff
    between chunk attempts not)."""
    context_truncated: int = 0
    """Context messages (a reply's root or parent) of the chunks this run committed that were
    shortened, because one reply's root and parent alone outgrew the context budget."""
    processor: str = ""
    prompt_version: str = ""
    model: str = ""
    resumed_after: str | None = None
    restarted: bool = False
    """A retry found evidence delivered late before the cursor and ran the window again."""
    late: list[EvidenceItem] = field(default_factory=list)
    """Evidence of the window this run saw but did not process (see `late_lineage`)."""
    replayed: bool = False
    reason: str | None = None

    def fail(self, reason: str) -> None:
        """The run ends `failed`, for `reason`."""
        self.status = RunStatus.FAILED
        self.reason = reason

    def metadata(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "status": self.status.value,
            "window": self.ref.source_key,
            "workspace_id": self.ref.workspace_id,
            "chat_id": self.ref.chat_id,
            "window_start": self.ref.window_start.isoformat(),
            "processor_version": self.ref.processor_version or "default",
            "attempt": self.attempt,
            "aggregate_hash": self.aggregate_hash or "",
            "chunks": self.chunks_total,
            "chunks_this_run": self.chunks_run,
            "model_calls": self.model_calls,
            "entries_created": self.entries_created,
            "entries_updated": self.entries_updated,
            "entries_supported": self.entries_supported,
            "entries_unchanged": self.entries_unchanged,
            "evidence_bindings": self.bindings,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "evidence_per_chunk": list(self.chunk_evidence),
            "chunk_retries": self.chunk_retries,
            "validation_errors": self.validation_errors,
            "model_seconds": round(self.model_seconds, 3),
            "context_truncated": self.context_truncated,
            "processor": self.processor,
            "prompt_version": self.prompt_version,
            "model": self.model,
            "replayed": self.replayed,
        }
        data.update(evidence_lineage(self.evidence))
        data.update(late_lineage(self.late))
        if self.restarted:
            data["restarted_for_late_evidence"] = True
        if self.resumed_after:
            data["resumed_after"] = self.resumed_after
        if self.reason:
            data["reason"] = self.reason
        return data


class WindowRunner:
    """Runs windows with one synthesizer; clock, sleep and randomness are injectable.

    A chunk's attempts inside a run and the wait before a failed window may run again follow
    `retry`, by default the model-call policy of the settings (`RetryPolicy.for_model_calls`).

    A window whose synthesizer calls a model (any but the rules) holds a synthesis slot from
    its first chunk call to its end, waiting for one at most `slot_wait` (by default the
    run's own bound on one model call, `modelTimeout`, and never more than a quarter of
    `synthesisStaleTimeout`, so that the claimed window cannot go stale meanwhile). Once a wait
    ran out, the later windows of the same runner (a batch) try once without waiting, so that
    a batch defers its windows at once rather than waiting for each.
    """

    def __init__(
        self,
        engine: Engine,
        settings: LarkTimelineSettings,
        synthesizer: Synthesizer,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        sleep: Callable[[float], None] = time.sleep,
        rng: Callable[[], float] = random.random,
        timer: Callable[[], float] = time.monotonic,
        retry: RetryPolicy | None = None,
        slot_wait: timedelta | None = None,
    ) -> None:
        self.engine = engine
        self.settings = settings
        self.retry = retry if retry is not None else RetryPolicy.for_model_calls(settings)
        self.synthesizer = synthesizer
        self.clock = clock
        self.sleep = sleep
        self.rng = rng
        self.timer = timer
        self.slot_wait = (
            slot_wait
            if slot_wait is not None
            else min(settings.model_timeout, settings.synthesis_stale_timeout / 4)
        )
        self.takes_slots = synthesizer.name != RuleSynthesizer.name
        self._slot: HeldSlot | None = None
        self._slots_busy = False

    # --- entry point -------------------------------------------------------------------------

    def run(self, ref: WindowRef, *, owner: str, replay: bool = False) -> WindowRunReport:
        report = WindowRunReport(
            ref=ref,
            status=RunStatus.SKIPPED,
            processor=self.synthesizer.name,
            prompt_version=self.synthesizer.prompt_version,
            replayed=replay,
        )
        state = self._ensure_state(ref)
        if state is None:
            report.status = RunStatus.EMPTY
            report.reason = "no eligible evidence in the window: no state, nothing to synthesize"
            return report
        report.state_id = state.id
        if replay:
            state = self._reset(state)
        claimed = self._claim(state, owner)
        if claimed is None:
            report.reason = self._why_not_claimed(state.id)
            report.attempt = state.attempt_count
            log.info("window.skipped", window=ref.partition_key, reason=report.reason)
            return report
        report.attempt = claimed.attempt_count
        try:
            return self._process(ref, claimed, report)
        except LeaseLost as exc:
            report.fail(str(exc))
            log.warning("window.lease_lost", window=ref.partition_key, state_id=claimed.id)
            return report
        except Exception as exc:  # any error ends this window, never the batch
            return self._end_on_error(claimed, owner, report, exc)
        finally:
            self._release_slot()

    # --- synthesis slots (db.synthesis_slots) ----------------------------------------------------

    def _hold_slot(self) -> bool:
        """Whether this window may call the synthesizer now: it holds a synthesis slot, or its
        synthesizer needs none. Waits at most `slot_wait`, and not at all once a wait of this
        runner ran out and no slot has come free since."""
        if not self.takes_slots or self._slot is not None:
            return True
        wait = 0.0 if self._slots_busy else self.slot_wait.total_seconds()
        self._slot = take_synthesis_slot(
            self.engine,
            self.settings.max_concurrent_synthesis,
            wait_seconds=wait,
            sleep=self.sleep,
            timer=self.timer,
        )
        self._slots_busy = self._slot is None
        return self._slot is not None

    def _release_slot(self) -> None:
        slot, self._slot = self._slot, None
        if slot is not None:
            slot.release()

    # --- state transitions -------------------------------------------------------------------

    def _ensure_state(self, ref: WindowRef) -> SyncState | None:
        """The sensor made the row; a manual run of a partition makes it if evidence exists."""
        with self.engine.begin() as conn:
            return window_states.create_window_if_evidence(
                conn,
                workspace_id=ref.workspace_id,
                chat_id=ref.chat_id,
                window_start=ref.window_start,
                window_end=ref.window_end(self.settings.synthesis_window),
                processor_version=ref.processor_version,
                now=self.clock(),
            )

    def _reset(self, state: SyncState) -> SyncState:
        """Reset for a replay, re-reading the state when its revision moved under us.

        Other writers bump a finished window's revision (the summary sensor flags it), so a
        reset against the revision read a moment ago can lose for a reason that has nothing to
        do with the replay; it is tried again on the current row. A window another run is
        processing is left alone: the claim then reports that run as the reason.
        """
        current: SyncState | None = state
        for _ in range(RESET_TRIES):
            assert current is not None
            with self.engine.begin() as conn:
                if current.status != WindowStatus.PROCESSING and window_states.reset_window(
                    conn, current, now=self.clock()
                ):
                    reset = sync_states.get(conn, current.id)
                    assert reset is not None
                    return reset
                current = sync_states.get(conn, state.id)
            if current is None or current.status == WindowStatus.PROCESSING:
                break
        return current or state

    def _claim(self, state: SyncState, owner: str) -> SyncState | None:
        with self.engine.begin() as conn:
            return window_states.claim_window(
                conn,
                state,
                owner=owner,
                max_attempts=self.settings.synthesis_window_max_attempts,
                stale_timeout=self.settings.synthesis_stale_timeout,
                now=self.clock(),
            )

    def _why_not_claimed(self, state_id: int) -> str:
        with self.engine.connect() as conn:
            current = sync_states.get(conn, state_id)
        if current is None:
            return "the window state disappeared"
        if current.status in TERMINAL_WINDOW_STATUSES:
            return f"the window is already {current.status}"
        if current.status == WindowStatus.PROCESSING:
            return f"another run ({current.lease_owner}) is processing the window"
        if current.is_exhausted(self.settings.synthesis_window_max_attempts):
            return "the window failed and has no attempts left (replay it to run again)"
        return "the window changed while this run started; a later run will take it"

    # --- the work ------------------------------------------------------------------------------

    def _size(self, state: SyncState) -> timedelta:
        """The window's own size, recorded when its state was made; the setting only for a row
        that records none (docs/changing.md, "A 15-minute window")."""
        return state.recorded_window or self.settings.synthesis_window

    def _read_window(
        self, ref: WindowRef, size: timedelta, conn: Connection | None = None
    ) -> list[EvidenceRow]:
        if conn is None:
            with self.engine.connect() as own:
                return read_window(own, ref, size)
        return read_window(conn, ref, size)

    def _context_candidates(
        self, ref: WindowRef, window_items: Sequence[EvidenceItem]
    ) -> list[EvidenceItem]:
        """The window's context candidates (`core.context_candidates`) on a connection of
        its own."""
        with self.engine.connect() as conn:
            return context_candidates(conn, ref, window_items, self.settings)

    def _process(
        self, ref: WindowRef, state: SyncState, report: WindowRunReport
    ) -> WindowRunReport:
        """Synthesize what is left of the window, then check nothing arrived unprocessed.

        The lineage (aggregate hash, evidence ids and count) is the evidence committed chunks
        sent to the synthesizer, never merely what the window holds: evidence delivered late
        into the part already done makes a retry start the window over (`plan_resume`), and
        evidence that arrived while this run worked gets one more pass; whatever arrives after
        that is reported as `late_evidence`, not counted as covered.
        """
        size = self._size(state)
        items = [evidence_item(row) for row in self._read_window(ref, size)]
        resume = plan_resume(items, state.last_seen_cursor, state.metadata)
        held: dict[str, Any] = {}
        if state.last_seen_cursor is not None:
            held = state.metadata
            if resume.restarted:
                report.restarted = True
                log.info("window.restart_late_evidence", window=ref.partition_key)
            else:
                report.resumed_after = state.last_seen_cursor
        report.evidence = in_order(resume.done)
        report.aggregate_hash = aggregate_hash(report.evidence)
        done_before = 0 if resume.restarted else int(held.get("chunk_count", 0) or 0)
        totals = {
            key: int(held.get(key, 0) or 0)
            for key in (
                "entries_proposed",
                "entries_created",
                "entries_updated",
                "entries_supported",
                "input_tokens",
                "output_tokens",
                "context_truncated",
            )
        }
        current = state
        todo = resume.todo
        passes = 0
        with self.engine.connect() as conn:
            locale = window_locale(conn, ref, self.settings)  # once per run, late passes too
        while True:
            candidates = self._context_candidates(ref, items)
            chunks = window_chunks(ref, todo, candidates, self.settings, size, locale=locale)
            if done_before:
                # Planned from the cursor on: number them as parts of the whole window (the
                # prompt and the logs say "part N"), not from zero again.
                chunks = [
                    c.model_copy(update={"index": done_before + i}) for i, c in enumerate(chunks)
                ]
            report.chunks_total = done_before + len(chunks)
            for position, chunk in enumerate(chunks):
                number = done_before + position + 1
                if not self._hold_slot():
                    busy = (
                        f"no synthesis slot free: all {self.settings.max_concurrent_synthesis} "
                        "(maxConcurrentSynthesis) held by other window runs or rerun previews"
                    )
                    return self._defer(
                        current, report, number, reason="synthesis_slots_busy", cause=busy
                    )
                outcome = self._synthesize_chunk(chunk, report)
                if isinstance(outcome, ModelUnavailable):
                    cause = f"model unavailable: {outcome.reason}: {outcome.message}"
                    return self._defer(
                        current,
                        report,
                        number,
                        reason=outcome.reason,
                        cause=cause,
                        retry_after=outcome.retry_after,
                    )
                if isinstance(outcome, ChunkFailure):
                    diagnostic = outcome.diagnostic(chunk, number, report.chunks_total)
                    return self._fail(current, report, diagnostic, outcome)
                following = chunks[position + 1].evidence[0] if position + 1 < len(chunks) else None
                current = self._commit_chunk(
                    ref, current, chunk, outcome, number, report, totals, following
                )
                report.chunks_run += 1
                report.chunk_evidence.append(len(chunk.evidence))
            done_before = report.chunks_total
            with self.engine.begin() as conn:
                items = [evidence_item(row) for row in self._read_window(ref, size, conn)]
                late = late_evidence(items, report.evidence)
                if late and passes < MAX_LATE_PASSES:
                    todo = late
                    passes += 1
                    log.info("window.late_evidence_pass", window=ref.partition_key, rows=len(late))
                    continue
                report.late = late
                # Completed when the window yields a material entry: one created, updated, or
                # given new supporting evidence. Ignored when it yields none, including when
                # every proposal was already stored unchanged (a replay that finds nothing new):
                # docs/metrics.md ("timeline drafts created, updated, ignored, bound").
                material = totals["entries_created"] + totals["entries_updated"]
                status = (
                    WindowStatus.COMPLETED
                    if material + totals["entries_supported"]
                    else WindowStatus.IGNORED
                )
                finished = window_states.finish_window(
                    conn,
                    current,
                    status=status,
                    aggregate_hash=report.aggregate_hash,
                    metadata={
                        **self._state_metadata(report, totals, status=status, chunk_start=None),
                        **late_lineage(late),
                    },
                    now=self.clock(),
                    # Only flagged here: the card worker plans the drafts' review card after
                    # this commit, in its own transaction (docs/review-cards.md, "How a card is
                    # planned"); off unless enabled.
                    review_card=(
                        status is WindowStatus.COMPLETED and self.settings.review_cards_enabled
                    ),
                )
            break
        if finished is None:
            raise LeaseLost("lease lost: another run took over the window before it finished")
        report.status = RunStatus(status)
        log.info(
            "window.finished",
            window=ref.partition_key,
            status=status,
            evidence=len(report.evidence),
            late_evidence=len(report.late),
            chunks=report.chunks_total,
            created=report.entries_created,
            updated=report.entries_updated,
        )
        return report

    def _synthesize_chunk(
        self, chunk: SynthesisChunk, report: WindowRunReport
    ) -> SynthesisResult | ChunkFailure | ModelUnavailable:
        return call_synthesizer(
            self.synthesizer,
            chunk,
            self.retry,
            report,
            sleep=self.sleep,
            rng=self.rng,
            timer=self.timer,
            label=report.ref.partition_key,
        )

    def _commit_chunk(
        self,
        ref: WindowRef,
        state: SyncState,
        chunk: SynthesisChunk,
        result: SynthesisResult,
        number: int,
        report: WindowRunReport,
        totals: dict[str, int],
        following: EvidenceItem | None,
    ) -> SyncState:
        """The chunk's drafts, their bindings and the window cursor: one transaction."""
        batch_id = f"w{state.id}.a{state.attempt_count}.c{number}"
        writes = [
            draft_write(
                ref, chunk, entry, result, processor=self.synthesizer.name, batch_id=batch_id
            )
            for entry in result.entries
        ]
        processed = in_order([*report.evidence, *chunk.evidence])
        # The furthest evidence processed, not this chunk's last: a pass over late evidence
        # runs behind the cursor and must not move it back.
        last = processed[-1]
        created = updated = supported = unchanged = bound = 0
        with self.engine.begin() as conn:
            for written in draft_writes.upsert_drafts(
                conn, writes, window_state_id=state.id, now=self.clock()
            ):
                created += written.outcome is DraftOutcome.CREATED
                updated += written.outcome is DraftOutcome.UPDATED
                supported += written.outcome is DraftOutcome.SUPPORTED
                unchanged += written.outcome is DraftOutcome.UNCHANGED
                bound += written.bound
            totals["entries_proposed"] += len(writes)
            totals["entries_created"] += created
            totals["entries_updated"] += updated
            totals["entries_supported"] += supported
            totals["input_tokens"] += result.usage.input_tokens
            totals["output_tokens"] += result.usage.output_tokens
            totals["context_truncated"] += len(chunk.context_truncated_ids)
            report.model = result.model
            report.prompt_version = result.prompt_version
            advanced = window_states.advance_window_cursor(
                conn,
                state,
                cursor=encode_window_cursor(last.occurred_at, last.id),
                metadata=self._state_metadata(
                    report,
                    totals,
                    status="processing",
                    chunk_start=(
                        encode_window_cursor(following.occurred_at, following.id)
                        if following is not None
                        else None
                    ),
                    chunk_count=number,
                    processed=processed,
                ),
                now=self.clock(),
            )
            if advanced is None:
                # Rolls back this chunk's drafts with the transaction.
                raise LeaseLost("lease lost: another run took over the window mid-way")
        report.evidence = processed
        report.aggregate_hash = aggregate_hash(processed)
        report.entries_created += created
        report.entries_updated += updated
        report.entries_supported += supported
        report.entries_unchanged += unchanged
        report.bindings += bound
        report.input_tokens += result.usage.input_tokens
        report.output_tokens += result.usage.output_tokens
        report.context_truncated += len(chunk.context_truncated_ids)
        if chunk.context_truncated_ids:
            log.warning(
                "window.context_truncated",
                window=ref.partition_key,
                chunk=number,
                context_ids=chunk.context_truncated_ids,
            )
        return advanced

    def _defer(
        self,
        state: SyncState,
        report: WindowRunReport,
        chunk_number: int,
        *,
        reason: str,
        cause: str,
        retry_after: float | None = None,
    ) -> WindowRunReport:
        """An unavailable model, or no synthesis slot free, is not the window's fault: no
        attempt is used, the window waits out the window-level backoff."""
        now = self.clock()
        delay = outage_backoff(
            state.deferral_count + 1,
            self.settings.synthesis_outage_backoff_base,
            self.settings.synthesis_outage_backoff_cap,
            self.rng,
            retry_after,
        )
        diagnostic = bounded(f"deferred at chunk {chunk_number}/{report.chunks_total}: {cause}")
        with self.engine.begin() as conn:
            deferred = window_states.defer_window(
                conn, state, error=diagnostic, retry_at=now + delay, now=now
            )
        if deferred is None:
            raise LeaseLost("lease lost: another run took over the window before it deferred")
        report.status = RunStatus.DEFERRED
        report.attempt = deferred.attempt_count
        report.reason = f"{diagnostic}; next attempt at {deferred.next_attempt_at}"
        log.warning(
            "window.deferred",
            window=report.ref.partition_key,
            reason=reason,
            deferrals=deferred.deferral_count,
            delay_seconds=round(delay.total_seconds(), 3),
        )
        return report

    def _fail(
        self, state: SyncState, report: WindowRunReport, diagnostic: str, failure: ChunkFailure
    ) -> WindowRunReport:
        now = self.clock()
        with self.engine.begin() as conn:
            failed = self._fail_window(conn, state, diagnostic, state.attempt_count, now)
        if failed is None:
            raise LeaseLost("lease lost: another run took over the window before it failed")
        report.fail(diagnostic)
        log.warning(
            "window.failed",
            window=report.ref.partition_key,
            attempt=state.attempt_count,
            reason=failure.reason,
            retryable=failure.retryable,
        )
        return report

    def _end_on_error(
        self, claimed: SyncState, owner: str, report: WindowRunReport, exc: Exception
    ) -> WindowRunReport:
        """Any other error (a database error at commit, a bug) ends this window's attempt and
        releases it, so a batch goes on and the window is never left `processing` under a
        run that still works (docs/design.md §11, "error inside a window").

        The window is marked `failed` by the same bounded-attempt rule as a chunk out of
        attempts (`fail_window`, retried after the policy's backoff while attempts are left),
        from the row as it is now: the failed transaction rolled back, and only a row this
        claim still holds (same owner and attempt, still `processing`) is moved. The diagnostic
        names the error's type only: a database error's text may carry statement parameters,
        that is message-derived text.
        """
        diagnostic = bounded(
            f"attempt {claimed.attempt_count} ended by an error after "
            f"{report.chunks_run} committed chunk(s) of {report.chunks_total}: {error_kind(exc)}"
        )
        report.fail(diagnostic)
        log.error(
            "window.error",
            window=report.ref.partition_key,
            state_id=claimed.id,
            error=error_kind(exc),
            chunks_committed=report.chunks_run,
        )
        now = self.clock()
        try:
            with self.engine.begin() as conn:
                current = sync_states.get(conn, claimed.id)
                held = (
                    current is not None
                    and current.status == WindowStatus.PROCESSING
                    and current.lease_owner == owner
                    and current.attempt_count == claimed.attempt_count
                )
                failed = (
                    self._fail_window(conn, current, diagnostic, claimed.attempt_count, now)
                    if held and current is not None
                    else None
                )
        except Exception as release_error:  # the stale timeout is the backstop
            log.error(
                "window.release_failed",
                window=report.ref.partition_key,
                state_id=claimed.id,
                error=error_kind(release_error),
            )
            report.reason = bounded(f"{diagnostic}; the window could not be released")
            return report
        if failed is None:
            report.reason = bounded(f"{diagnostic}; the window was no longer held by this run")
        return report

    def _fail_window(
        self, conn: Connection, state: SyncState, diagnostic: str, attempt: int, now: datetime
    ) -> SyncState | None:
        """`fail_window` by the bounded-attempt rule, due again after the policy's backoff for
        `attempt`; None when the row is no longer this run's to fail."""
        retry_at = now + timedelta(seconds=self.retry.ceiling(attempt))
        return window_states.fail_window(conn, state, error=diagnostic, retry_at=retry_at, now=now)

    def _state_metadata(
        self,
        report: WindowRunReport,
        totals: dict[str, int],
        *,
        status: str,
        chunk_start: str | None,
        chunk_count: int | None = None,
        processed: Sequence[EvidenceItem] | None = None,
    ) -> dict[str, Any]:
        done = report.evidence if processed is None else processed
        return {
            "status": status,
            "evidence_count": len(done),
            # What `plan_resume` checks before a retry trusts the cursor.
            "processed_count": len(done),
            "processed_hash": aggregate_hash(done),
            "chunk_count": report.chunks_total if chunk_count is None else chunk_count,
            "prompt_version": report.prompt_version,
            "processor": report.processor,
            "model": report.model,
            "attempt_count": report.attempt,
            "current_chunk_start": chunk_start,
            **totals,
        }
