"""The curated timeline as readers see it: entries with their evidence and a link to each
supporting Lark message, plus the workspace summary. Shared by the HTTP API, `timeline show`
and the Markdown export, so the three can never disagree about what the timeline says."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Connection

from timeline_pipeline.curation.links import evidence_link
from timeline_pipeline.curation.rules import entry_etag, summary_etag
from timeline_pipeline.domain.entries import EntryRow
from timeline_pipeline.domain.records import record_of
from timeline_pipeline.store.entries import BoundEvidence, bound_evidence
from timeline_pipeline.store.summaries import SummaryRow

__all__ = [
    "EntryView",
    "EvidenceLink",
    "SummaryView",
    "TimelineView",
    "entry_views",
    "summary_view",
]


@dataclass(frozen=True, slots=True)
class EvidenceLink:
    evidence_id: int
    occurred_at: datetime
    url: str | None
    """The Lark applink of the message; None for a source without one, or a recalled message."""


@dataclass(frozen=True, slots=True)
class EntryView:
    id: int
    workspace_id: str
    occurred_at: datetime
    title: str
    detail: str | None
    category: str
    source: str
    status: str
    human_edited: bool
    revision: int
    etag: str
    evidence: tuple[EvidenceLink, ...]
    created_at: datetime
    updated_at: datetime
    recalled_evidence: bool = False
    """One of its messages was recalled; its text is kept or redacted (docs/lifecycle.md)."""

    @property
    def evidence_ids(self) -> list[int]:
        return [link.evidence_id for link in self.evidence]


@dataclass(frozen=True, slots=True)
class SummaryView:
    workspace_id: str
    content: str
    source: str
    revision: int
    etag: str
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class TimelineView:
    workspace_id: str
    statuses: tuple[str, ...]
    entries: list[EntryView]
    summary: SummaryView | None
    next_after: tuple[datetime, int] | None = None
    """Keyset position after the last entry when more entries follow, else None."""
    title: str | None = field(default=None)


def _link(bound: BoundEvidence) -> EvidenceLink:
    # A recalled message no longer opens in Lark; the id stays, for traceability.
    url = (
        None if bound.deleted else evidence_link(bound.source, bound.source_type, bound.source_key)
    )
    return EvidenceLink(bound.evidence_id, bound.occurred_at, url)


def entry_views(conn: Connection, rows: Sequence[EntryRow]) -> list[EntryView]:
    """Views of entries of one workspace, their evidence read in one query."""
    if not rows:
        return []
    workspace_id = rows[0].workspace_id
    assert all(row.workspace_id == workspace_id for row in rows)
    bound = bound_evidence(conn, workspace_id, [row.id for row in rows])
    return [
        record_of(
            EntryView,
            row,
            etag=entry_etag(row.id, row.revision),
            evidence=tuple(_link(b) for b in bound[row.id]),
        )
        for row in rows
    ]


def summary_view(row: SummaryRow | None) -> SummaryView | None:
    if row is None:
        return None
    return record_of(SummaryView, row, etag=summary_etag(row.workspace_id, row.revision))
