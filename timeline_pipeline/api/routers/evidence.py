"""`GET /api/workspaces/{id}/evidence`: evidence in (occurred_at, id) order; keyset pages
through an opaque signed `after` cursor; `limit` capped; body `{"items", "next_cursor"}`.

No `from __future__ import annotations`: FastAPI reads the handlers' annotations.
"""

from fastapi import APIRouter

from timeline_pipeline.api.auth import AuthorizedWorkspace
from timeline_pipeline.api.errors import ERROR_RESPONSES, database_errors
from timeline_pipeline.api.gate import GatedRoute
from timeline_pipeline.api.params import DEFAULT_LIMIT, DOC_400, MAX_LIMIT, After, Limit
from timeline_pipeline.api.params import decode_cursor as decode
from timeline_pipeline.api.presenters import evidence_item_out
from timeline_pipeline.api.schemas import EvidencePage
from timeline_pipeline.web.deps import CursorsDep, EvidenceServiceDep

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
    cursors: CursorsDep,
    after: After = None,
    limit: Limit = DEFAULT_LIMIT,
) -> EvidencePage:
    position = decode(cursors, "evidence", workspace_id, after)
    with database_errors():
        page = service.page(workspace_id, after=position, limit=min(limit, MAX_LIMIT))
    next_cursor = (
        cursors.encode("evidence", workspace_id, *page.next_after) if page.next_after else None
    )
    return EvidencePage(items=[evidence_item_out(r) for r in page.rows], next_cursor=next_cursor)
