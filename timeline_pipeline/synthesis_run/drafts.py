"""Evidence and drafts in the shapes the run hands on: evidence rows as the synthesizer reads
them, and validated drafts as the entries store writes them, with their AI provenance."""

from __future__ import annotations

from timeline_pipeline.domain.entries import DraftWrite, EvidenceRef
from timeline_pipeline.domain.evidence import EvidenceRow
from timeline_pipeline.domain.window_keys import WindowRef
from timeline_pipeline.synthesis.contract import (
    FINGERPRINT_SCOPE,
    DraftEntry,
    EvidenceItem,
    SynthesisChunk,
    SynthesisResult,
    draft_fingerprint,
    nearby_fingerprints,
)

__all__ = ["draft_write", "evidence_item"]


def evidence_item(row: EvidenceRow) -> EvidenceItem:
    """An evidence row in the synthesizer's shape; conversation ids come from its metadata."""
    metadata = row.metadata
    _, _, message_id = row.source_key.rpartition("/message/")
    return EvidenceItem(
        id=row.id,
        occurred_at=row.occurred_at,
        actor_id=row.actor_id,
        actor_display_name=row.actor_display_name,
        text=row.content,
        content_hash=row.content_hash,
        message_id=message_id or row.source_key,
        chat_id=row.scope_key or str(metadata.get("chat_id", "")),
        thread_id=row.metadata_text("thread_id"),
        root_id=row.metadata_text("root_id"),
        parent_id=row.metadata_text("parent_id"),
        message_type=row.metadata_text("message_type") or "text",
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
    """A validated draft with its AI metadata: processor, prompt, model and cited messages."""
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
