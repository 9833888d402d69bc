"""Timeline entry values shared by the entries store and the synthesis services (pure;
docs/design.md §7): a stored entry as read, and a machine draft to store."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

__all__ = [
    "ENTRY_STATUSES",
    "MACHINE_SOURCES",
    "VISIBLE_STATUSES",
    "DraftWrite",
    "EntryRow",
    "EntrySource",
    "EntryStatus",
    "EvidenceRef",
    "SummarySource",
]


class EntryStatus(StrEnum):
    """Where an entry stands with its curators (docs/design.md §7, docs/glossary.md): a draft
    is the machine's proposal; confirmed and hidden are a person's decisions."""

    DRAFT = "draft"
    CONFIRMED = "confirmed"
    HIDDEN = "hidden"


class EntrySource(StrEnum):
    """Who wrote an entry: the model, the rule synthesizer or a person (a pin or an edit)."""

    AI = "ai"
    HUMAN = "human"
    RULE = "rule"


class SummarySource(StrEnum):
    """Who wrote a summary; a human summary is never overwritten (docs/design.md §8)."""

    AI = "ai"
    HUMAN = "human"


ENTRY_STATUSES: tuple[EntryStatus, ...] = tuple(EntryStatus)
VISIBLE_STATUSES = (EntryStatus.DRAFT, EntryStatus.CONFIRMED)
"""What the timeline shows by default: everything but hidden entries."""
MACHINE_SOURCES = (EntrySource.AI, EntrySource.RULE)


@dataclass(frozen=True, slots=True)
class EvidenceRef:
    id: int
    content_hash: str


@dataclass(frozen=True, slots=True)
class DraftWrite:
    """A machine draft to store, with the provenance of docs/design.md §7.

    `provenance` holds processor, prompt version, model, chat/thread/root ids, batch id and
    window key; the evidence list (ids and the content hashes that were read) is kept apart
    because it is merged, not replaced, when the draft is seen again.
    """

    workspace_id: str
    fingerprint: str
    occurred_at: datetime
    title: str
    category: str
    evidence: Sequence[EvidenceRef]
    detail: str | None = None
    provenance: Mapping[str, Any] = field(default_factory=dict)
    source: EntrySource = EntrySource.AI
    nearby_fingerprints: Sequence[str] = ()
    """Other keys the same fact may be stored under when it was first proposed nearby."""
    merge_within: timedelta | None = None
    """How near an entry under `nearby_fingerprints` must have been first proposed to merge;
    None: only an entry holding `fingerprint` itself is the same fact."""


@dataclass(frozen=True, slots=True)
class EntryRow:
    id: int
    workspace_id: str
    occurred_at: datetime
    title: str
    detail: str | None
    category: str
    source: EntrySource
    status: EntryStatus
    fingerprint: str | None
    human_edited: bool
    revision: int
    window_state_id: int | None
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    evidence_ids: tuple[int, ...] = ()
    recalled_evidence: bool = False
    """One of its messages was recalled and it kept its text (docs/lifecycle.md)."""

    @property
    def curator_owned(self) -> bool:
        """Text a person decided on: never rewritten by synthesis."""
        return (
            self.source not in MACHINE_SOURCES
            or self.status != EntryStatus.DRAFT
            or self.human_edited
        )
