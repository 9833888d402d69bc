"""Service views to the API's response models: the one place their shapes meet.

A response model names its fields after the view's attributes (docs/http.md), so each is built
from the view by name (`domain.records.record_of`) and only what the view does not hold is given
here.
"""

from __future__ import annotations

from typing import Any

from timeline_pipeline.api.schemas import (
    EntryOut,
    EvidenceItemOut,
    EvidenceLinkOut,
    MilestoneOut,
    MilestonesOut,
    ReportOut,
    SummaryOut,
)
from timeline_pipeline.curation.links import evidence_link
from timeline_pipeline.curation.timeline import EntryView, SummaryView
from timeline_pipeline.domain.evidence import EvidenceRow
from timeline_pipeline.domain.records import record_of
from timeline_pipeline.report.milestones import Milestones
from timeline_pipeline.report.views import ReportRead


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


def report_out(read: ReportRead) -> ReportOut:
    """A kept revision as `GET .../report` and `report show --format json` give it: the stored
    content (`report.render.content_json`, times in UTC) with the revision's own fields and the
    document's link. A withdrawn revision's content is gone: only its flag and its own fields
    are given."""
    report = read.report
    own: dict[str, Any] = {
        "revision": report.revision,
        "built_at": report.created_at,
        "built_by": report.built_by,
        "withdrawn": report.withdrawn,
        "document_url": read.document_url,
    }
    if report.withdrawn:
        return ReportOut(
            **own,
            title=None,
            status=None,
            window=None,
            drafts_pending=None,
            milestones=None,
            durations=None,
            sections=[],
            counts=None,
        )
    content = report.content
    return ReportOut.model_validate(
        {
            **own,
            **{
                key: content.get(key)
                for key in (
                    "title",
                    "status",
                    "window",
                    "drafts_pending",
                    "milestones",
                    "durations",
                    "counts",
                )
            },
            "sections": content.get("sections") or [],
        }
    )


def milestones_out(milestones: Milestones) -> MilestonesOut:
    """The milestones as they stand now (a change's answer), in the shape a report gives them."""
    return MilestonesOut(
        **{milestone.name.value: record_of(MilestoneOut, milestone) for milestone in milestones}
    )
