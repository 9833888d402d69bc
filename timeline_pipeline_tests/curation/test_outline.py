"""The timeline page's listing: the same entries as `timeline`, with evidence ids only."""

from __future__ import annotations

from sqlalchemy import Engine

from timeline_pipeline.curation.service import CurationService
from timeline_pipeline_tests.curation.support import (
    IMPACT,
    ROLLBACK,
    W1,
    W2,
    incident,
    say,
    synthesize,
)


def test_the_outline_lists_the_timelines_entries_with_their_evidence_ids(engine: Engine) -> None:
    incident(engine)
    say(engine, W1, [IMPACT, ROLLBACK])
    say(engine, W2, [ROLLBACK])
    synthesize(engine, W1)
    synthesize(engine, W2)
    service = CurationService(engine)
    full = service.timeline("inc-1")
    outline = service.timeline_outline("inc-1")
    assert [e.id for e in outline.entries] == [e.id for e in full.entries]
    assert [list(e.evidence_ids) for e in outline.entries] == [e.evidence_ids for e in full.entries]
    assert all(e.evidence_ids for e in outline.entries)
    assert outline.summary == full.summary and outline.title == full.title
    first = service.timeline_outline("inc-1", limit=1)
    assert len(first.entries) == 1 and first.next_after is not None
    rest = service.timeline_outline("inc-1", after=first.next_after)
    assert [e.id for e in first.entries + rest.entries] == [e.id for e in full.entries]
