"""Cut one window's evidence into model-call-sized chunks (docs/design.md §7, §9).

A busy window can hold hundreds of messages; one model call per window would blow the prompt
budget and one call per message would multiply cost. Chunks are bounded by count and by estimated
tokens at once, cut in chat order so that the window cursor can advance chunk by chunk.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from timeline_pipeline.synthesis.contract import EvidenceItem, SynthesisChunk
from timeline_pipeline.synthesis.grouping import (
    DEFAULT_PROXIMITY_GAP,
    group_evidence,
    select_context,
)
from timeline_pipeline.synthesis.token_estimate import (
    MESSAGE_OVERHEAD_TOKENS,
    estimate_evidence_tokens,
    estimate_text_tokens,
    max_text_chars_for,
)

__all__ = [
    "MIN_CHUNK_TOKENS",
    "ChunkLimits",
    "ChunkingError",
    "EvidenceSlice",
    "plan_chunks",
    "split_evidence",
]

TRUNCATION_MARKER = " [truncated {count} characters]"
MIN_CHUNK_TOKENS = MESSAGE_OVERHEAD_TOKENS + 32
"""Below this a truncated message could not even carry its truncation marker."""


class ChunkingError(ValueError):
    """The evidence handed to the planner breaks its preconditions (order, window, limits)."""


@dataclass(frozen=True)
class ChunkLimits:
    """The chunk bounds of docs/design.md §9, each a setting with its default."""

    max_count: int = 40
    max_estimated_tokens: int = 6000
    context_lookback: timedelta = timedelta(minutes=5)
    max_context_tokens: int = 1500
    proximity_gap: timedelta = DEFAULT_PROXIMITY_GAP

    def __post_init__(self) -> None:
        if self.max_count < 1:
            raise ChunkingError("max_count must be at least 1")
        if self.max_estimated_tokens < MIN_CHUNK_TOKENS:
            raise ChunkingError(f"max_estimated_tokens must be at least {MIN_CHUNK_TOKENS}")
        if self.max_context_tokens < 0:
            raise ChunkingError("max_context_tokens must not be negative")


@dataclass(frozen=True)
class EvidenceSlice:
    """One chunk's evidence before grouping, and which of it had to be shortened."""

    evidence: list[EvidenceItem]
    truncated_ids: list[int]


def _truncate(item: EvidenceItem, budget_tokens: int) -> EvidenceItem:
    """Shorten an oversized message so it fits alone, saying so inside the text itself."""
    # The marker is charged at its own estimate (its digits and brackets cost more than the
    # characters they replace); it starts with a space, so the prefix's estimate and its add up.
    marker_tokens = estimate_text_tokens(TRUNCATION_MARKER.format(count=len(item.text)))
    keep = max_text_chars_for(item, budget_tokens - marker_tokens)
    text = item.text[:keep] + TRUNCATION_MARKER.format(count=len(item.text) - keep)
    return item.model_copy(update={"text": text})


def split_evidence(
    evidence: Sequence[EvidenceItem], *, max_count: int, max_estimated_tokens: int
) -> list[EvidenceSlice]:
    """Greedy, order-preserving split under both bounds.

    A message that alone exceeds the token budget gets a chunk of its own with its text
    truncated (and its id reported), rather than being dropped or stalling the window.
    """
    if max_count < 1 or max_estimated_tokens < MIN_CHUNK_TOKENS:
        raise ChunkingError(
            f"limits too small: max_count >= 1 and max_estimated_tokens >= {MIN_CHUNK_TOKENS}"
        )
    slices: list[EvidenceSlice] = []
    current: list[EvidenceItem] = []
    spent = 0
    for item in evidence:
        cost = estimate_evidence_tokens(item)
        if cost > max_estimated_tokens:
            if current:
                slices.append(EvidenceSlice(current, []))
                current, spent = [], 0
            slices.append(EvidenceSlice([_truncate(item, max_estimated_tokens)], [item.id]))
            continue
        if current and (len(current) >= max_count or spent + cost > max_estimated_tokens):
            slices.append(EvidenceSlice(current, []))
            current, spent = [], 0
        current.append(item)
        spent += cost
    if current:
        slices.append(EvidenceSlice(current, []))
    return slices


def _check_window_evidence(
    window_start: datetime, window_end: datetime, evidence: Sequence[EvidenceItem]
) -> None:
    if window_end <= window_start:
        raise ChunkingError("window_end must be after window_start")
    seen: set[int] = set()
    previous: tuple[datetime, int] | None = None
    for item in evidence:
        if not window_start <= item.occurred_at < window_end:
            raise ChunkingError(f"evidence {item.id} lies outside the window")
        if item.id in seen:
            raise ChunkingError(f"evidence {item.id} appears twice")
        seen.add(item.id)
        position = (item.occurred_at, item.id)
        if previous is not None and position < previous:
            raise ChunkingError(f"evidence {item.id} is out of (occurred_at, id) order")
        previous = position


def plan_chunks(
    window_start: datetime,
    window_end: datetime,
    evidence: Sequence[EvidenceItem],
    *,
    limits: ChunkLimits | None = None,
    context_candidates: Iterable[EvidenceItem] = (),
) -> list[SynthesisChunk]:
    """Turn a window's ordered evidence into grouped chunks with read-only context.

    Deterministic: the same evidence and limits always give the same chunks, so a retried window
    re-creates the chunk it failed on. Evidence outside the window, duplicated or out of order is
    refused rather than quietly re-sorted, since the caller's cursor depends on that order.
    """
    limits = limits or ChunkLimits()
    _check_window_evidence(window_start, window_end, evidence)
    candidates = list(context_candidates)
    chunks: list[SynthesisChunk] = []
    for index, piece in enumerate(
        split_evidence(
            evidence,
            max_count=limits.max_count,
            max_estimated_tokens=limits.max_estimated_tokens,
        )
    ):
        context = select_context(
            piece.evidence,
            candidates,
            limits.context_lookback,
            window_start=window_start,
            window_end=window_end,
            max_estimated_tokens=limits.max_context_tokens,
        )
        chunks.append(
            SynthesisChunk(
                window_start=window_start,
                window_end=window_end,
                index=index,
                evidence=piece.evidence,
                groups=group_evidence(piece.evidence, proximity_gap=limits.proximity_gap),
                context=context,
                truncated_ids=piece.truncated_ids,
            )
        )
    return chunks
