"""`GET /api/workspaces/{id}/timeline`: entries (status filter, keyset pages) with their
evidence ids and Lark links, and the summary.

Handlers are plain `def`: they run in the thread pool, where blocking database calls belong.
No `from __future__ import annotations`: FastAPI reads the handlers' annotations.
"""

from typing import Annotated

from fastapi import APIRouter, Query

from timeline_pipeline.api.auth import AuthorizedWorkspace
from timeline_pipeline.api.errors import ERROR_RESPONSES, curation_errors
from timeline_pipeline.api.gate import GatedRoute
from timeline_pipeline.api.params import DOC_400, PageQuery
from timeline_pipeline.api.presenters import entry_out, summary_out
from timeline_pipeline.api.schemas import EntryStatus, TimelineOut
from timeline_pipeline.domain.entries import VISIBLE_STATUSES
from timeline_pipeline.web.deps import CurationServiceDep

router = APIRouter(responses=ERROR_RESPONSES, route_class=GatedRoute)


@router.get(
    "/workspaces/{workspace_id}/timeline",
    response_model=TimelineOut,
    responses=DOC_400,
    tags=["timeline"],
    summary="The curated timeline: entries with evidence links, and the summary",
)
def get_timeline(
    workspace_id: AuthorizedWorkspace,
    service: CurationServiceDep,
    asked: PageQuery,
    status_: Annotated[
        list[EntryStatus] | None,
        Query(alias="status", description="Statuses to include; default draft, confirmed."),
    ] = None,
) -> TimelineOut:
    statuses = tuple(dict.fromkeys(status_ or VISIBLE_STATUSES))
    listing = "timeline:" + ",".join(sorted(statuses))
    position = asked.position(listing, workspace_id)
    with curation_errors():
        view = service.timeline(workspace_id, statuses=statuses, after=position, limit=asked.limit)
    return TimelineOut(
        workspace_id=workspace_id,
        statuses=list(view.statuses),
        entries=[entry_out(e) for e in view.entries],
        summary=summary_out(view.summary),
        next_cursor=asked.next_cursor(listing, workspace_id, view.next_after),
    )
