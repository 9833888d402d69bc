"""The incident report (docs/report.md): `GET /api/workspaces/{id}/report` (the newest revision,
or a kept one with `?revision=N`) and `PUT|DELETE .../report/milestones/{name}` (a curator's
time for a milestone, or back to the timeline's).

Reading takes `timeline:read`; setting or clearing a time `timeline:curate`, recorded as the
request's token (`token:<id>`), with the derived time kept beside it. A time the report refuses
(after `resolved`, in the future, ...) is 422 `invalid_input` with the reason, and nothing
changes. A changed time shows in the report from its next build (the report sensor, or
`timeline-pipeline report build`); the answer is the milestones as they stand now.

Handlers are plain `def` (thread pool). No `from __future__ import annotations`: FastAPI reads
the handlers' annotations.
"""

from collections.abc import Callable
from typing import Annotated, Any, Final

from fastapi import APIRouter, Path, Query

from timeline_pipeline.api.auth import AuthorizedWorkspace, RequestActor
from timeline_pipeline.api.errors import ERROR_RESPONSES, workspace_errors
from timeline_pipeline.api.gate import GatedRoute
from timeline_pipeline.api.params import doc
from timeline_pipeline.api.presenters import milestones_out, report_out
from timeline_pipeline.api.schemas import (
    MAX_REVISION,
    MilestoneIn,
    MilestoneName,
    MilestonesOut,
    ReportOut,
)
from timeline_pipeline.domain.errors import InvalidInput
from timeline_pipeline.report.milestones import Milestones
from timeline_pipeline.report.service import ReportNotFound
from timeline_pipeline.report.views import clear_milestone, read_report, set_milestone
from timeline_pipeline.web.deps import ReportServiceDep

router = APIRouter(responses=ERROR_RESPONSES, route_class=GatedRoute)

Milestone = Annotated[
    MilestoneName, Path(description="`started`, `detected`, `mitigated` or `resolved`.")
]
RevisionQuery = Annotated[
    int | None,
    Query(ge=1, le=MAX_REVISION, description="A kept revision; default: the newest."),
]
_MILESTONE_ROUTE: Final[dict[str, Any]] = {
    "path": "/workspaces/{workspace_id}/report/milestones/{name}",
    "response_model": MilestonesOut,
    "responses": doc(404, "No such workspace."),
    "tags": ["report"],
}
"""A milestone's route, the same for setting (PUT) and clearing (DELETE) its time."""


def _changed(change: Callable[[], Milestones]) -> MilestonesOut:
    """A curator's change of a milestone, its refusals as problems; the answer is every
    milestone as it stands after it."""
    with workspace_errors(ReportNotFound, InvalidInput):
        milestones = change()
    return milestones_out(milestones)


@router.get(
    "/workspaces/{workspace_id}/report",
    response_model=ReportOut,
    responses=doc(
        404, "No such workspace, no report yet (`report_not_found`), or no such revision."
    ),
    tags=["report"],
    summary="The incident report: milestones, durations, sections and the document's link",
)
def get_report(
    workspace_id: AuthorizedWorkspace, service: ReportServiceDep, revision: RevisionQuery = None
) -> ReportOut:
    with workspace_errors(ReportNotFound, InvalidInput):
        read = read_report(service, workspace_id, revision=revision)
    return report_out(read)


@router.put(
    **_MILESTONE_ROUTE,
    summary="Set a milestone's time (the derived one is kept beside it)",
)
def put_milestone(
    workspace_id: AuthorizedWorkspace,
    name: Milestone,
    body: MilestoneIn,
    service: ReportServiceDep,
    actor: RequestActor,
) -> MilestonesOut:
    return _changed(lambda: set_milestone(service, workspace_id, name, body.at, actor=actor))


@router.delete(
    **_MILESTONE_ROUTE,
    summary="Clear a curator's time: the milestone is the timeline's again",
)
def delete_milestone(
    workspace_id: AuthorizedWorkspace,
    name: Milestone,
    service: ReportServiceDep,
    actor: RequestActor,
) -> MilestonesOut:
    return _changed(lambda: clear_milestone(service, workspace_id, name, actor=actor))
