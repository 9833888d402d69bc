"""Service views to the API's response models: the one place their shapes meet."""

from __future__ import annotations

from timeline_pipeline.api.schemas import EntryOut, EvidenceItemOut, EvidenceLinkOut, SummaryOut
from timeline_pipeline.curation.links import evidence_link
from timeline_pipeline.curation.timeline import EntryView, SummaryView
from timeline_pipeline.domain.evidence import EvidenceRow


def entry_out(view: EntryView) -> EntryOut:
    return EntryOut(
        id=view.id,
        occurred_at=view.occurred_at,
        title=view.title,
        detail=view.detail,
        category=view.category,
        source=view.source,
        status=view.status,
        human_edited=view.human_edited,
        revision=view.revision,
        etag=view.etag,
        evidence_ids=view.evidence_ids,
        links=[
            EvidenceLinkOut(
                evidence_id=link.evidence_id, occurred_at=link.occurred_at, url=link.url
            )
            for link in view.evidence
        ],
        created_at=view.created_at,
        updated_at=view.updated_at,
    )


def summary_out(view: SummaryView | None) -> SummaryOut | None:
    if view is None:
        return None
    return SummaryOut.model_validate(view, from_attributes=True)


def evidence_item_out(row: EvidenceRow) -> EvidenceItemOut:
    """A deleted row keeps its place in the listing but loses its link."""
    return EvidenceItemOut(
        id=row.id,
        source=row.source,
        source_type=row.source_type,
        source_key=row.source_key,
        occurred_at=row.occurred_at,
        source_updated_at=row.source_updated_at,
        actor_id=row.actor_id,
        actor_display_name=row.actor_display_name,
        content=row.content,
        deleted=row.deleted,
        ai_eligible=row.ai_eligible,
        link=None if row.deleted else evidence_link(row.source, row.source_type, row.source_key),
    )
