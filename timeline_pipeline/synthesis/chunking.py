"""Cut one window's evidence into model-call-sized chunks (docs/design.md §7, §9).

A busy window can hold hundreds of messages; one model call per window would blow the prompt
budget and one call per message would multiply cost. Chunks are bounded by count and by estimated
tokens at once, cut in chat order so that the window cursor can advance chunk by chunk.

A chunk's context is budgeted for its replies first: the thread roots and replied-to parents its
replies name must fit the context budget together, or the chunk is cut before the reply that
would overflow it (fewer replies per chunk, never a root dropped). A reply whose root and parent
alone outgrow the budget gets a chunk of its own with them shortened visibly, and the chunk names
them (`context_truncated_ids`).
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
    "MIN_CONTEXT_TOKENS",
    "ChunkLimits",
    "ChunkingError",
    "EvidenceSlice",
    "plan_chunks",
    "split_evidence",
]

TRUNCATION_MARKER = " [truncated {count} characters]"
MIN_CHUNK_TOKENS = MESSAGE_OVERHEAD_TOKENS + 32
"""Below this a truncated message could not even carry its truncation marker."""
MIN_CONTEXT_TOKENS = 2 * MIN_CHUNK_TOKENS
"""The least context budget (other than none) that holds one reply's root and parent, both
truncated if need be."""


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
        if self.max_context_tokens != 0 and self.max_context_tokens < MIN_CONTEXT_TOKENS:
            raise ChunkingError(
                f"max_context_tokens must be 0 (no context) or at least {MIN_CONTEXT_TOKENS}"
            )


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


class _ReplyAnchors:
    """The context a growing chunk's replies answer: the candidates their root and parent ids
    name, other than the chunk's own messages and nothing at or after the window's end (what
    `select_context` keeps first), and what they cost. Kept incrementally, so that cutting a
    chunk of hundreds of messages stays linear."""

    def __init__(self, candidates: Iterable[EvidenceItem], window_end: datetime) -> None:
        self._by_message: dict[str, dict[int, EvidenceItem]] = {}
        for candidate in candidates:
            if candidate.occurred_at < window_end:
                self._by_message.setdefault(candidate.message_id, {})[candidate.id] = candidate
        self.reset()

    def reset(self) -> None:
        self._own: set[int] = set()
        self._refs: set[str] = set()
        self._anchors: dict[int, EvidenceItem] = {}
        self.cost = 0

    def _new(self, item: EvidenceItem) -> list[EvidenceItem]:
        found: list[EvidenceItem] = []
        for ref in {r for r in (item.root_id, item.parent_id) if r is not None} - self._refs:
            found.extend(
                candidate
                for candidate in self._by_message.get(ref, {}).values()
                if candidate.id not in self._own
                and candidate.id != item.id
                and candidate.id not in self._anchors
            )
        return found

    def cost_with(self, item: EvidenceItem) -> int:
        """The cost were `item` added to the chunk (it may itself be an anchor, then no
        longer context)."""
        cost = self.cost + sum(estimate_evidence_tokens(c) for c in self._new(item))
        if item.id in self._anchors:
            cost -= estimate_evidence_tokens(self._anchors[item.id])
        return cost

    def add(self, item: EvidenceItem) -> None:
        for candidate in self._new(item):
            self._anchors[candidate.id] = candidate
            self.cost += estimate_evidence_tokens(candidate)
        dropped = self._anchors.pop(item.id, None)
        if dropped is not None:
            self.cost -= estimate_evidence_tokens(dropped)
        self._own.add(item.id)
        self._refs.update(r for r in (item.root_id, item.parent_id) if r is not None)

    def anchors(self) -> list[EvidenceItem]:
        return list(self._anchors.values())


def split_evidence(
    evidence: Sequence[EvidenceItem], *, max_count: int, max_estimated_tokens: int
) -> list[EvidenceSlice]:
    """Greedy, order-preserving split under both bounds.

    A message that alone exceeds the token budget gets a chunk of its own with its text
    truncated (and its id reported), rather than being dropped or stalling the window.
    """
    return _split(evidence, max_count, max_estimated_tokens, None, 0)


def _split(
    evidence: Sequence[EvidenceItem],
    max_count: int,
    max_estimated_tokens: int,
    anchors: _ReplyAnchors | None,
    max_context_tokens: int,
) -> list[EvidenceSlice]:
    """`split_evidence`, and with `anchors` a third bound: the roots and parents a chunk's
    replies name fit `max_context_tokens` together, or the chunk is cut before the reply that
    would overflow them (a reply that overflows them alone is a chunk of its own)."""
    if max_count < 1 or max_estimated_tokens < MIN_CHUNK_TOKENS:
        raise ChunkingError(
            f"limits too small: max_count >= 1 and max_estimated_tokens >= {MIN_CHUNK_TOKENS}"
        )
    slices: list[EvidenceSlice] = []
    current: list[EvidenceItem] = []
    spent = 0

    def cut() -> None:
        nonlocal current, spent
        if current:
            slices.append(EvidenceSlice(current, []))
        current, spent = [], 0
        if anchors is not None:
            anchors.reset()

    for item in evidence:
        cost = estimate_evidence_tokens(item)
        if cost > max_estimated_tokens:
            cut()
            slices.append(EvidenceSlice([_truncate(item, max_estimated_tokens)], [item.id]))
            continue
        overflows_context = anchors is not None and anchors.cost_with(item) > max_context_tokens
        if current and (
            len(current) >= max_count or spent + cost > max_estimated_tokens or overflows_context
        ):
            cut()
        current.append(item)
        spent += cost
        if anchors is not None:
            anchors.add(item)
    cut()
    return slices


def _fit_anchors(anchors: Sequence[EvidenceItem], budget_tokens: int) -> dict[int, EvidenceItem]:
    """One reply's root and parent shortened to share `budget_tokens`, by id: the cheaper one
    keeps its text when it fits its half, the other gets what is left."""
    shortened: dict[int, EvidenceItem] = {}
    remaining = budget_tokens
    ordered = sorted(anchors, key=lambda item: (estimate_evidence_tokens(item), item.id))
    for index, item in enumerate(ordered):
        share = remaining // (len(ordered) - index)
        cost = estimate_evidence_tokens(item)
        if cost > share:
            item = _truncate(item, share)
            shortened[item.id] = item
            cost = estimate_evidence_tokens(item)
        remaining -= cost
    return shortened


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

    Every reply in a chunk has the root and the parent it names (those among the candidates)
    in the chunk's context: they are budgeted first, and a chunk takes no more replies than
    their roots and parents fit the context budget (a `max_context_tokens` of 0 turns context
    off). A reply whose root and parent alone exceed it is a chunk of its own, with them
    truncated and named in `context_truncated_ids`.

    Deterministic: the same evidence and limits always give the same chunks, so a retried window
    re-creates the chunk it failed on. Evidence outside the window, duplicated or out of order is
    refused rather than quietly re-sorted, since the caller's cursor depends on that order.
    """
    limits = limits or ChunkLimits()
    _check_window_evidence(window_start, window_end, evidence)
    candidates = list(context_candidates)
    budget = limits.max_context_tokens
    anchors = _ReplyAnchors(candidates, window_end) if budget else None
    chunks: list[SynthesisChunk] = []
    pieces = _split(evidence, limits.max_count, limits.max_estimated_tokens, anchors, budget)
    for index, piece in enumerate(pieces):
        shortened: dict[int, EvidenceItem] = {}
        if anchors is not None:
            anchors.reset()
            for item in piece.evidence:
                anchors.add(item)
            if anchors.cost > budget:  # one reply alone: `_split` cut around it
                shortened = _fit_anchors(anchors.anchors(), budget)
        context = select_context(
            piece.evidence,
            [shortened.get(c.id, c) for c in candidates] if shortened else candidates,
            limits.context_lookback,
            window_start=window_start,
            window_end=window_end,
            max_estimated_tokens=budget,
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
                context_truncated_ids=sorted(shortened),
            )
        )
    return chunks
