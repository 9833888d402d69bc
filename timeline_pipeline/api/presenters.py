"""Service views to the API's response models: the one place their shapes meet.

A response model names its fields after the view's attributes (docs/http.md), so each is built
from the view by name and only what the view does not hold is given here: one rule, and a field
added to both reaches the answer without a copy to update.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

from timeline_pipeline.api.schemas import EntryOut, EvidenceItemOut, EvidenceLinkOut, SummaryOut
from timeline_pipeline.curation.links import evidence_link
from timeline_pipeline.curation.timeline import EntryView, SummaryView
from timeline_pipeline.domain.evidence import EvidenceRow

M = TypeVar("M", bound=BaseModel)


def _by_name(model: type[M], source: object, **given: Any) -> M:
    """`model` from `source`'s attributes of the same names; `given` for the fields it lacks."""
    copied = {name: getattr(source, name) for name in model.model_fields if name not in given}
    return model(**copied, **given)


def entry_out(view: EntryView) -> EntryOut:
    return _by_name(
        EntryOut, view, links=[_by_name(EvidenceLinkOut, link) for link in view.evidence]
    )


def summary_out(view: SummaryView | None) -> SummaryOut | None:
    return None if view is None else _by_name(SummaryOut, view)


def evidence_item_out(row: EvidenceRow) -> EvidenceItemOut:
    """A deleted row keeps its place in the listing but loses its link."""
    link = None if row.deleted else evidence_link(row.source, row.source_type, row.source_key)
    return _by_name(EvidenceItemOut, row, link=link)
