"""`GET|PUT /api/workspaces/{id}/summary`: the workspace summary, with its ETag.

A written summary is the curator's (`source=human`) and automation never replaces it.
No `from __future__ import annotations`: FastAPI reads the handlers' annotations.
"""

from fastapi import APIRouter, Response

from timeline_pipeline.api.auth import AuthorizedWorkspace, RequestActor
from timeline_pipeline.api.errors import ERROR_RESPONSES, curation_errors
from timeline_pipeline.api.gate import GatedRoute
from timeline_pipeline.api.params import DOC_409, IfMatch, doc, expected_revision
from timeline_pipeline.api.presenters import summary_out
from timeline_pipeline.api.schemas import SummaryIn, SummaryOut
from timeline_pipeline.curation.rules import summary_etag_prefix
from timeline_pipeline.web.deps import CurationServiceDep

router = APIRouter(responses=ERROR_RESPONSES, route_class=GatedRoute)


@router.get(
    "/workspaces/{workspace_id}/summary",
    response_model=SummaryOut,
    responses=doc(404, "No summary yet."),
    tags=["curation"],
    summary="The workspace summary, with its ETag",
)
def get_summary(
    workspace_id: AuthorizedWorkspace, response: Response, service: CurationServiceDep
) -> SummaryOut:
    with curation_errors():
        view = service.summary(workspace_id)
    response.headers["ETag"] = view.etag
    out = summary_out(view)
    assert out is not None
    return out


@router.put(
    "/workspaces/{workspace_id}/summary",
    response_model=SummaryOut,
    responses=DOC_409,
    tags=["curation"],
    summary="Write the human summary (never overwritten automatically afterwards)",
)
def put_summary(
    workspace_id: AuthorizedWorkspace,
    body: SummaryIn,
    response: Response,
    service: CurationServiceDep,
    actor: RequestActor,
    if_match: IfMatch = None,
) -> SummaryOut:
    check, revision = expected_revision(
        body.revision, if_match, summary_etag_prefix(workspace_id), required=False
    )
    with curation_errors():
        view = service.write_summary(
            workspace_id, body.content, expected_revision=revision, check=check, actor=actor
        )
    response.headers["ETag"] = view.etag
    out = summary_out(view)
    assert out is not None
    return out
