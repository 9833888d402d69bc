"""What the evidence processors compute from a stored row, with no I/O of their own.

The content hash and the redacted form are rebuilt exactly as ingestion builds them (the row
is turned back into its normalized message, `ingest.recall.message_from_row`), so a processor
and a live write agree on every row they both touch.
"""

from __future__ import annotations

from datetime import datetime

from timeline_pipeline.domain.evidence import EvidenceRecord, EvidenceRow, HashInput, content_hash
from timeline_pipeline.ingest.recall import message_from_row
from timeline_pipeline.ingest.records import evidence_record
from timeline_pipeline.lark.normalize import redact, semantic_document

MESSAGE_MARK = "/message/"


def message_id_of(row: EvidenceRow) -> str:
    return row.source_key.rsplit(MESSAGE_MARK, 1)[-1]


def current_hash(row: EvidenceRow | HashInput) -> str:
    """The hash this code's normalization gives the row's content: `semantic_content` of the
    message `message_from_row` rebuilds, computed from its parts (a backfill hashes every row,
    and rebuilding the validated message costs more than the hash)."""
    metadata = {key: value for key, value in row.metadata.items() if key != "sender_type"}
    message_type = row.metadata.get("message_type")
    return content_hash(
        semantic_document(
            deleted=row.deleted,
            message_type=message_type if isinstance(message_type, str) else "unknown",
            metadata=metadata,
            text=row.content,
        )
    )


def redacted_record(row: EvidenceRow, *, recalled_at: datetime) -> EvidenceRecord:
    """The row under the deletion policy; a row recalled before keeps its first recall time."""
    message = message_from_row(row, message_id=message_id_of(row))
    return evidence_record(redact(message, recalled_at=recalled_at), row.workspace_id)


def needs_redaction(row: EvidenceRow, *, now: datetime) -> bool:
    """Whether any trace of content is left: text, an eligible flag, content metadata, or
    content a legal hold set aside (docs/lifecycle.md)."""
    if not row.deleted or row.ai_eligible or row.content or row.held_content:
        return True
    record = redacted_record(row, recalled_at=now)
    return record.metadata != row.metadata or record.content_hash != row.content_hash
