"""Service views to the API's response models: the one place their shapes meet.

A response model names its fields after the view's attributes (docs/http.md), so each is built
from the view by name (`domain.records.record_of`) and only what the view does not hold is given
here.
"""

from __future__ import annotations

from timeline_pipeline.api.schemas import EntryOut, EvidenceItemOut, EvidenceLinkOut, SummaryOut
from timeline_pipeline.curation.links import evidence_link
from timeline_pipeline.curation.timeline import EntryView, SummaryView
from timeline_pipeline.domain.evidence import EvidenceRow
from timeline_pipeline.domain.records import record_of


def entry_out(view: EntryView) -> EntryOut:
    return record_of(
        EntryOut, view, links=[record_of(EvidenceLinkOut, link) for link in view.evidence]
    )


def summary_out(view: SummaryView | None) -> SummaryOut | None:
    return None if view is None else record_of(SummaryOut, view)


def evidence_item_out(row: EvidenceRow) -> EvidenceItemOut:
    """A deleted row keeps its place in the listing but loses its link."""
    link = None if row.deleted else evidence_link(row.source, row.source_type, row.source_key)
    return record_of(EvidenceItemOut, row, link=link)
