"""From a normalized Lark message to the evidence row of docs/design.md §4. Pure."""

from __future__ import annotations

from timeline_pipeline.domain.evidence import EvidenceRecord, content_hash
from timeline_pipeline.domain.keys import (
    SOURCE_LARK,
    SOURCE_TYPE_LARK_MESSAGE,
    message_source_key,
)
from timeline_pipeline.lark.normalize import NormalizedLarkMessage, semantic_content


def evidence_record(message: NormalizedLarkMessage, workspace_id: str) -> EvidenceRecord:
    metadata = dict(message.metadata)
    metadata["sender_type"] = message.sender_type
    if message.deleted:
        metadata["deleted"] = True
    return EvidenceRecord(
        workspace_id=workspace_id,
        source=SOURCE_LARK,
        source_type=SOURCE_TYPE_LARK_MESSAGE,
        source_key=message_source_key(message.chat_id, message.message_id),
        occurred_at=message.created_at,
        source_updated_at=message.updated_at,
        content=message.text,
        content_hash=content_hash(semantic_content(message)),
        actor_id=message.sender_id,
        scope_key=message.chat_id,
        ai_eligible=message.ai_eligible and not message.deleted,
        deleted=message.deleted,
        metadata=metadata,
    )
