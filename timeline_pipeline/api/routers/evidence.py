"""`GET /api/workspaces/{id}/evidence`: evidence in (occurred_at, id) order; keyset pages
through an opaque signed `after` cursor; `limit` capped; body `{"items", "next_cursor"}`.

No `from __future__ import annotations`: FastAPI reads the handlers' annotations.
"""

from fastapi import APIRouter

from timeline_pipeline.api.auth import AuthorizedWorkspace
from timeline_pipeline.api.errors import ERROR_RESPONSES, database_errors
from timeline_pipeline.api.gate import GatedRoute
from timeline_pipeline.api.params import DOC_400, PageQuery
from timeline_pipeline.api.presenters import evidence_item_out
from timeline_pipeline.api.schemas import EvidencePage
from timeline_pipeline.web.deps import EvidenceServiceDep

router = APIRouter(responses=ERROR_RESPONSES, route_class=GatedRoute)


@router.get(
    "/workspaces/{workspace_id}/evidence",
    response_model=EvidencePage,
    responses=DOC_400,
    tags=["evidence"],
    summary="Evidence rows in (occurred_at, id) order, by keyset pages",
)
def get_evidence(
    workspace_id: AuthorizedWorkspace,
    service: EvidenceServiceDep,
    asked: PageQuery,
) -> EvidencePage:
    position = asked.position("evidence", workspace_id)
    with database_errors():
        page = service.page(workspace_id, after=position, limit=asked.limit)
    return EvidencePage(
        items=[evidence_item_out(r) for r in page.rows],
        next_cursor=asked.next_cursor("evidence", workspace_id, page.next_after),
    )
