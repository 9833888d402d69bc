"""Evidence values exchanged between ingestion paths and the evidence store (pure)."""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


class UpsertOutcome(enum.StrEnum):
    INSERTED = "inserted"
    UPDATED = "updated"
    DUPLICATE = "duplicate"


def content_hash(semantic_content: str) -> str:
    """sha256 of the normalized semantic content, which includes the deletion state."""
    return hashlib.sha256(semantic_content.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class EvidenceRecord:
    """One fact to store for one workspace; identity is (workspace, source, type, key)."""

    workspace_id: str
    source: str
    source_type: str
    source_key: str
    occurred_at: datetime
    source_updated_at: datetime
    content: str
    content_hash: str
    actor_id: str | None = None
    actor_display_name: str | None = None
    scope_key: str | None = None
    ai_eligible: bool = False
    deleted: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class EvidenceRow:
    id: int
    workspace_id: str
    source: str
    source_type: str
    source_key: str
    occurred_at: datetime
    source_updated_at: datetime
    observed_at: datetime
    actor_id: str | None
    actor_display_name: str | None
    content: str
    content_hash: str
    metadata: dict[str, Any]
    scope_key: str | None
    ai_eligible: bool
    deleted: bool
    revision: int
    held_content: bool = False
    """A recall under a legal hold set this row's content aside (docs/lifecycle.md); it goes
    when the hold is released."""

    def metadata_text(self, key: str) -> str | None:
        """A text value of the row's metadata (a conversation id, the message type); None when
        it is absent, empty or not text."""
        value = self.metadata.get(key)
        return value if isinstance(value, str) and value else None


@dataclass(frozen=True, slots=True)
class EvidenceCursor:
    """Keyset position: strictly after (occurred_at, id)."""

    occurred_at: datetime
    id: int


@dataclass(frozen=True, slots=True)
class UpsertSummary:
    inserted: int = 0
    updated: int = 0
    duplicate: int = 0

    def __add__(self, other: UpsertSummary) -> UpsertSummary:
        return UpsertSummary(
            self.inserted + other.inserted,
            self.updated + other.updated,
            self.duplicate + other.duplicate,
        )


@dataclass(frozen=True, slots=True)
class HashInput:
    """What a row's content hash is computed from, and the hash it holds."""

    id: int
    content: str
    content_hash: str
    metadata: dict[str, Any]
    deleted: bool
