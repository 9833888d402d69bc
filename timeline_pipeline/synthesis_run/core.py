"""The synthesis of one window's evidence, shared by the window run and the rerun preview.

What a window's synthesis reads and asks is the same whether its drafts are then committed
(`synthesis_run.runner`, docs/design.md §7) or only compared with the timeline (the rerun
preview, docs/maintenance.md "Preview a rerun"): the window's eligible evidence in
(occurred_at, id) order, the read-only context before it and around its threads, the chunks
bounded by the settings' count and token limits and carrying the workspace's language, and each
chunk's synthesizer call with its bounded attempts. Keeping these here, once, is what makes a
preview's proposals the ones the rerun itself would make.

The reads take the caller's connection (the run's own, or the preview's batch transaction);
the chunk call takes its clock, sleep and randomness from the caller.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

import structlog
from sqlalchemy import Connection

from timeline_pipeline.curation.presentation import presentation_of
from timeline_pipeline.domain.evidence import EvidenceCursor, EvidenceRow
from timeline_pipeline.domain.keys import (
    SOURCE_LARK,
    SOURCE_TYPE_LARK_MESSAGE,
    message_source_key,
)
from timeline_pipeline.domain.window_keys import WindowRef
from timeline_pipeline.i18n.locales import Locale
from timeline_pipeline.retry import RetryPolicy
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import evidence
from timeline_pipeline.synthesis.chunking import plan_chunks
from timeline_pipeline.synthesis.contract import (
    EvidenceItem,
    InvalidSynthesisOutput,
    SynthesisChunk,
    SynthesisError,
    SynthesisRejected,
    SynthesisResult,
    SynthesisUnavailable,
    Synthesizer,
    validate_entries,
)
from timeline_pipeline.synthesis_run.bounds import chunk_limits
from timeline_pipeline.synthesis_run.drafts import evidence_item
from timeline_pipeline.synthesis_run.failures import ChunkFailure, bounded

__all__ = [
    "MAX_CONTEXT_ROWS",
    "READ_PAGE",
    "CallTally",
    "ModelUnavailable",
    "call_synthesizer",
    "context_candidates",
    "read_window",
    "window_chunks",
    "window_locale",
]

log = structlog.get_logger(__name__)

READ_PAGE = 1000
MAX_CONTEXT_ROWS = 500


@dataclass(frozen=True, slots=True)
class ModelUnavailable:
    """A chunk stopped because the model service is unavailable (outage, not the window's
    fault): the window is deferred with a window-level backoff instead of failing."""

    reason: str
    message: str
    retry_after: float | None


class CallTally(Protocol):
    """Where a chunk call counts its calls, retries, refused answers and time."""

    model_calls: int
    chunk_retries: int
    validation_errors: int
    model_seconds: float


def read_window(conn: Connection, ref: WindowRef, size: timedelta) -> list[EvidenceRow]:
    """The window's eligible evidence in (occurred_at, id) order, read in keyset pages.

    `size` is the window's own: the size its state recorded when it was made (docs/changing.md,
    "A 15-minute window"), so a window made before a change of `synthesisWindow` still reads
    exactly the messages it was made for."""
    rows: list[EvidenceRow] = []
    end = ref.window_end(size)
    after: EvidenceCursor | None = None
    while True:
        page = evidence.scope_range(
            conn,
            ref.workspace_id,
            ref.chat_id,
            ref.window_start,
            end,
            after=after,
            limit=READ_PAGE,
        )
        rows.extend(page)
        if len(page) < READ_PAGE:
            return rows
        after = EvidenceCursor(page[-1].occurred_at, page[-1].id)


def context_candidates(
    conn: Connection,
    ref: WindowRef,
    window_items: Sequence[EvidenceItem],
    settings: LarkTimelineSettings,
) -> list[EvidenceItem]:
    """The lookback before the window, referenced roots and parents, and the window itself.

    `select_context` picks from these per chunk, the chunk's own replies' roots and parents
    first within its context budget (docs/design.md §7); same-thread messages older than the
    lookback are reached through the root and parent they reply to. So every root and parent
    the window's replies reference is a candidate, whatever the number of threads: a cap over
    the whole window would leave the replies whose roots fell past it with none (issue 35,
    item 5). Each is one indexed read of the message's key, once per distinct id; the count is
    bounded by the window's own messages, which the window already reads.
    """
    lookback = settings.synthesis_context_lookback
    candidates: dict[int, EvidenceItem] = {item.id: item for item in window_items}
    referenced: set[str] = set()
    for item in window_items:
        referenced.update(r for r in (item.root_id, item.parent_id) if r is not None)
    referenced -= {item.message_id for item in window_items}
    if lookback:
        before = evidence.scope_nearest_before(
            conn,
            ref.workspace_id,
            ref.chat_id,
            ref.window_start - lookback,
            ref.window_start,
            limit=MAX_CONTEXT_ROWS,
        )
        candidates.update((row.id, evidence_item(row)) for row in before)
    for message_id in sorted(referenced):
        row = evidence.get_by_key(
            conn,
            ref.workspace_id,
            SOURCE_LARK,
            SOURCE_TYPE_LARK_MESSAGE,
            message_source_key(ref.chat_id, message_id),
        )
        if row is not None and row.ai_eligible and not row.deleted:
            candidates[row.id] = evidence_item(row)
    return list(candidates.values())


def window_locale(conn: Connection, ref: WindowRef, settings: LarkTimelineSettings) -> Locale:
    """The language of the window's workspace (`curation.presentation`, docs/i18n.md): a model
    synthesizer writes its titles in it, so that drafts read like the rest of the workspace."""
    return presentation_of(conn, ref.workspace_id, settings).locale


def window_chunks(
    ref: WindowRef,
    todo: Sequence[EvidenceItem],
    candidates: Sequence[EvidenceItem],
    settings: LarkTimelineSettings,
    size: timedelta,
    *,
    locale: Locale,
) -> list[SynthesisChunk]:
    """`todo` cut into chunks bounded by the settings' count and token limits, with context,
    each carrying the workspace's `locale` (`window_locale`); `size` is the window's own, as for
    `read_window`."""
    chunks = plan_chunks(
        ref.window_start,
        ref.window_end(size),
        todo,
        limits=chunk_limits(settings),
        context_candidates=candidates,
    )
    return [chunk.model_copy(update={"locale": locale}) for chunk in chunks]


def call_synthesizer(
    synthesizer: Synthesizer,
    chunk: SynthesisChunk,
    retry: RetryPolicy,
    tally: CallTally,
    *,
    sleep: Callable[[float], None],
    rng: Callable[[], float],
    timer: Callable[[], float],
    label: str,
) -> SynthesisResult | ChunkFailure | ModelUnavailable:
    """One chunk's validated drafts, within `retry.attempts` calls, or why it gave up.

    Invalid answers and transient failures are tried again with backoff; a refused request
    stops at once; an unavailable service stops at once too (the synthesizer already spent its
    own retries on the call) and the caller decides what waiting means for the window.
    """
    limit = retry.attempts
    failure = ChunkFailure("unknown", "", 0, True)
    for attempt in range(1, limit + 1):
        tally.model_calls += 1
        if attempt > 1:
            tally.chunk_retries += 1
        try:
            started = timer()
            try:
                result = synthesizer.synthesize(chunk)
            finally:
                tally.model_seconds += timer() - started
            checked = validate_entries(chunk, list(result.entries))
            return result.model_copy(update={"entries": checked})
        except SynthesisRejected as exc:
            return ChunkFailure(exc.reason, bounded(str(exc), 300), attempt, False)
        except SynthesisUnavailable as exc:
            return ModelUnavailable(exc.reason, bounded(str(exc), 300), exc.retry_after)
        except SynthesisError as exc:
            if isinstance(exc, InvalidSynthesisOutput):
                tally.validation_errors += 1
            failure = ChunkFailure(exc.reason, bounded(str(exc), 300), attempt, True)
        except Exception as exc:  # a synthesizer bug must fail the window, not its caller
            failure = ChunkFailure("unexpected_error", type(exc).__name__, attempt, True)
        log.warning(
            "window.chunk_retry",
            window=label,
            chunk=chunk.index,
            attempt=attempt,
            reason=failure.reason,
        )
        if attempt < limit:
            sleep(retry.backoff(attempt, rng))
    return failure
