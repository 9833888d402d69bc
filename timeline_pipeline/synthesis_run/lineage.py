"""Pure pieces of a window run: evidence as the synthesizer sees it, the aggregate hash, draft
provenance, backoff and bounded diagnostics.

Kept apart from the runner so that what ends up in the database and in Dagster's metadata can
be tested without either.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from timeline_pipeline.domain.evidence import EvidenceRow
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store.entries import DraftWrite, EvidenceRef
from timeline_pipeline.synthesis.chunking import ChunkLimits
from timeline_pipeline.synthesis.models import (
    FINGERPRINT_SCOPE,
    DraftEntry,
    EvidenceItem,
    SynthesisChunk,
    SynthesisResult,
    draft_fingerprint,
    nearby_fingerprints,
)
from timeline_pipeline.windows.keys import WindowRef, decode_window_cursor

__all__ = [
    "MAX_LISTED_EVIDENCE_IDS",
    "Resume",
    "aggregate_hash",
    "backoff_seconds",
    "bounded",
    "chunk_limits",
    "draft_write",
    "evidence_item",
    "evidence_lineage",
    "late_evidence",
    "late_lineage",
    "plan_resume",
]

MAX_LISTED_EVIDENCE_IDS = 200
"""A materialization lists evidence ids up to this many; beyond it, the range and count."""

MAX_DIAGNOSTIC_CHARS = 900


def evidence_item(row: EvidenceRow) -> EvidenceItem:
    """An evidence row in the synthesizer's shape; conversation ids come from its metadata."""
    metadata = row.metadata
    _, _, message_id = row.source_key.rpartition("/message/")

    def text_or_none(key: str) -> str | None:
        value = metadata.get(key)
        return value if isinstance(value, str) and value else None

    return EvidenceItem(
        id=row.id,
        occurred_at=row.occurred_at,
        actor_id=row.actor_id,
        actor_display_name=row.actor_display_name,
        text=row.content,
        content_hash=row.content_hash,
        message_id=message_id or row.source_key,
        chat_id=row.scope_key or str(metadata.get("chat_id", "")),
        thread_id=text_or_none("thread_id"),
        root_id=text_or_none("root_id"),
        parent_id=text_or_none("parent_id"),
        message_type=text_or_none("message_type") or "text",
    )


def aggregate_hash(items: Sequence[EvidenceItem]) -> str:
    """sha256 over the ordered (evidence_id, content_hash) pairs (seed 000 section 10.2).

    Order matters and is (occurred_at, id), the order the window was read in; the hash says
    exactly which evidence, in which version, a finished window covered.
    """
    digest = hashlib.sha256()
    for item in items:
        digest.update(f"{item.id}:{item.content_hash}\n".encode())
    return digest.hexdigest()


def in_order(items: Iterable[EvidenceItem]) -> list[EvidenceItem]:
    """One version per evidence id (the last given wins), in the window's (occurred_at, id)
    order: the order the aggregate hash is taken in, whatever order chunks ran in."""
    latest = {item.id: item for item in items}
    return sorted(latest.values(), key=lambda item: (item.occurred_at, item.id))


def late_evidence(
    read: Sequence[EvidenceItem], processed: Iterable[EvidenceItem]
) -> list[EvidenceItem]:
    """Evidence of the window as read now that no committed chunk sent to the synthesizer in
    this version: rows delivered (or edited) after the chunk covering their time was read."""
    seen = {(item.id, item.content_hash) for item in processed}
    return [item for item in read if (item.id, item.content_hash) not in seen]


@dataclass(frozen=True, slots=True)
class Resume:
    """Where a run picks a window up: the evidence earlier attempts already processed, what is
    left to send, and whether the earlier work had to be discarded."""

    done: list[EvidenceItem]
    todo: list[EvidenceItem]
    restarted: bool


def plan_resume(
    items: Sequence[EvidenceItem], cursor: str | None, held: Mapping[str, Any]
) -> Resume:
    """Resume after the last committed chunk only if the evidence up to the cursor is exactly
    what those chunks processed.

    Each chunk commit records the count and aggregate hash of everything processed so far
    (`processed_count`, `processed_hash`). A message delivered late before the cursor, or an
    edit of one, changes that range; resuming after the cursor would then leave it out of the
    synthesis while counting it as covered. The run starts the window over instead (drafts of
    the earlier chunks are re-found by their fingerprint, not duplicated). A state written
    before these fields existed cannot be checked, so it starts over as well.
    """
    if cursor is None:
        return Resume([], list(items), False)
    position = decode_window_cursor(cursor)
    done = [item for item in items if (item.occurred_at, item.id) <= position]
    todo = [item for item in items if (item.occurred_at, item.id) > position]
    count, digest = held.get("processed_count"), held.get("processed_hash")
    if count == len(done) and digest == aggregate_hash(done):
        return Resume(done, todo, False)
    return Resume([], list(items), True)


def evidence_lineage(items: Sequence[EvidenceItem]) -> dict[str, Any]:
    """Evidence ids for the materialization: all of them when few, else range and count."""
    ids = [item.id for item in items]
    lineage: dict[str, Any] = {"evidence_count": len(ids)}
    if ids:
        lineage["evidence_first_id"] = min(ids)
        lineage["evidence_last_id"] = max(ids)
    if len(ids) <= MAX_LISTED_EVIDENCE_IDS:
        lineage["evidence_ids"] = ids
    return lineage


def late_lineage(items: Sequence[EvidenceItem]) -> dict[str, Any]:
    """Evidence seen in the window that this run did not process: counted apart, never as
    covered (the aggregate hash and `evidence_ids` leave it out)."""
    ids = [item.id for item in items]
    return {"late_evidence": len(ids), "late_evidence_ids": ids[:MAX_LISTED_EVIDENCE_IDS]}


def chunk_limits(settings: LarkTimelineSettings) -> ChunkLimits:
    """Chunk bounds from the settings; the prompt budget is shared by evidence and context.

    Three quarters of `synthesisMaxPromptTokens` go to the chunk's own evidence and one quarter
    to read-only context, so the estimated prompt never exceeds the configured budget.
    """
    context_tokens = settings.synthesis_max_prompt_tokens // 4
    return ChunkLimits(
        max_count=settings.evidence_batch_limit,
        max_estimated_tokens=settings.synthesis_max_prompt_tokens - context_tokens,
        context_lookback=settings.synthesis_context_lookback,
        max_context_tokens=context_tokens,
        proximity_gap=settings.synthesis_group_gap,
    )


def draft_write(
    ref: WindowRef,
    chunk: SynthesisChunk,
    entry: DraftEntry,
    result: SynthesisResult,
    *,
    processor: str,
    batch_id: str,
) -> DraftWrite:
    """A validated draft with the AI metadata of seed 000 section 12.4."""
    by_id = {item.id: item for item in chunk.evidence}
    cited = [by_id[i] for i in entry.evidence_ids]
    return DraftWrite(
        workspace_id=ref.workspace_id,
        fingerprint=draft_fingerprint(ref.workspace_id, entry),
        nearby_fingerprints=nearby_fingerprints(ref.workspace_id, entry),
        merge_within=FINGERPRINT_SCOPE,
        occurred_at=entry.occurred_at,
        title=entry.title,
        category=entry.category.value,
        detail=entry.detail,
        evidence=[EvidenceRef(item.id, item.content_hash) for item in cited],
        provenance={
            "processor": processor,
            "prompt_version": result.prompt_version,
            "model": result.model,
            "processor_version": ref.processor_version,
            "chat_id": ref.chat_id,
            "thread_ids": sorted({i.thread_id for i in cited if i.thread_id}),
            "root_ids": sorted({i.root_id for i in cited if i.root_id}),
            "message_ids": [i.message_id for i in cited][:50],
            "batch_id": batch_id,
            "window": ref.source_key,
        },
    )


def backoff_seconds(
    attempt: int, base: timedelta, cap: timedelta, rng: Callable[[], float]
) -> float:
    """Exponential backoff with full jitter: uniform in [0, min(cap, base * 2^(attempt-1))]."""
    ceiling = min(cap.total_seconds(), base.total_seconds() * 2.0 ** max(0, attempt - 1))
    return float(rng() * ceiling)


def bounded(text: str, limit: int = MAX_DIAGNOSTIC_CHARS) -> str:
    """One line, at most `limit` characters: diagnostics must never grow a row without bound."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass(frozen=True, slots=True)
class ChunkFailure:
    """Why a chunk gave up: a stable reason code plus a short, content-free message."""

    reason: str
    message: str
    attempts: int
    retryable: bool

    def diagnostic(self, chunk: SynthesisChunk, chunk_number: int, chunk_total: int) -> str:
        ids = [item.id for item in chunk.evidence]
        span = f"evidence {min(ids)}..{max(ids)}" if ids else "no evidence"
        return bounded(
            f"chunk {chunk_number}/{chunk_total} ({span}, {len(ids)} rows) failed after "
            f"{self.attempts} attempt(s): {self.reason}: {self.message}"
        )
