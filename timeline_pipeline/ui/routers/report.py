"""The report view of the timeline page (docs/report.md, docs/timeline-page.md).

* `GET /ui/workspaces/{id}/report`: the newest revision of the incident report, in the
  workspace's language and zone: its title, a banner when drafts awaited review, the milestones
  with their durations (each with a form to set or clear its time), the sections, the timeline
  with links to the Lark messages, the follow-ups and the Lark document's link. Without a report
  yet, a page that says how one is built.
* `POST /ui/workspaces/{id}/report/milestones/{name}`: set (`action=set`, `at` read in the
  workspace's zone) or clear (`action=clear`) a milestone's time, as `ui:<session>`, behind the
  page's session, origin and CSRF checks; a time the report refuses is shown with its reason
  (422) and nothing changes. A plain form post: the browser is sent back to the view.

Reads are plain `def` (blocking database calls run in the thread pool). No
`from __future__ import annotations`: FastAPI reads the handlers' annotations.
"""

from typing import Annotated, Final

from fastapi import APIRouter, Path, Request, Response
from fastapi.responses import RedirectResponse

from timeline_pipeline.domain.errors import InvalidInput
from timeline_pipeline.i18n.times import zone_label
from timeline_pipeline.observability.logs import get_logger
from timeline_pipeline.report.milestones import MilestoneName
from timeline_pipeline.report.service import ReportNotFound, ReportService
from timeline_pipeline.report.views import (
    ReportRead,
    clear_milestone,
    read_report,
    set_milestone,
)
from timeline_pipeline.store.workspaces import WorkspaceNotFound
from timeline_pipeline.ui.language import N_, page_text
from timeline_pipeline.ui.pages import Pages, PagesDep, Viewer, WorkspaceId
from timeline_pipeline.ui.report_view import milestone_rows, report_page, timeline_links
from timeline_pipeline.ui.responses import UI_PREFIX, Refusal, html
from timeline_pipeline.ui.view import TimeNotAccepted, moment_from_input
from timeline_pipeline.web.deps import ReportServiceDep

__all__ = ["router"]

log = get_logger("timeline_pipeline.ui")

router = APIRouter()

MilestonePath = Annotated[str, Path(min_length=1, max_length=32)]
_GONE: Final = Refusal(404, N_("No such workspace"), N_("This workspace is gone."))
_NO_MILESTONE: Final = Refusal(404, N_("Not found"), N_("This milestone does not exist."))


def _report_url(workspace_id: str) -> str:
    return f"{UI_PREFIX}/workspaces/{workspace_id}/report"


def _view(
    ui: Pages,
    service: ReportService,
    viewer: Viewer,
    workspace_id: str,
    *,
    alert: tuple[str, str] | None = None,
    typed: str | None = None,
    status: int = 200,
) -> Response:
    """The report view; `alert` is (milestone, message) after a refused change, shown beside
    that milestone's form with what was typed in it."""
    workspace = ui.access.workspace(workspace_id)
    presentation = ui.presentation(workspace_id)
    now = ui.clock()
    try:
        read: ReportRead | None = read_report(service, workspace_id)
    except ReportNotFound:
        read = None
    milestones = service.milestones(workspace_id)
    body = ui.render(
        workspace_id,
        "report.html",
        workspace_id=workspace_id,
        workspace=workspace,
        report=report_page(read, milestones, presentation) if read is not None else None,
        milestones=milestone_rows(
            milestones, presentation, timeline_links(read) if read is not None else None
        ),
        now_zone=zone_label(now, presentation.time_zone),
        build_command=f"timeline-pipeline report build --workspace {workspace_id}",
        csrf=viewer.csrf,
        alert=alert,
        typed=typed,
    )
    return html(body, status)


@router.get("/workspaces/{workspace_id}/report")
def report_view(
    ui: PagesDep, service: ReportServiceDep, request: Request, workspace_id: WorkspaceId
) -> Response:
    try:
        viewer = ui.require_viewer(request, workspace_id)
        return _view(ui, service, viewer, workspace_id)
    except Refusal as refusal:
        return ui.refused(request, refusal)
    except WorkspaceNotFound:
        return ui.refused(request, _GONE)


@router.post("/workspaces/{workspace_id}/report/milestones/{name}")
async def change_milestone(
    ui: PagesDep,
    service: ReportServiceDep,
    request: Request,
    workspace_id: WorkspaceId,
    name: MilestonePath,
) -> Response:
    def apply(viewer: Viewer, form: dict[str, str]) -> Response:
        if name not in {milestone.value for milestone in MilestoneName}:
            return ui.refused(request, _NO_MILESTONE)
        presentation = ui.presentation(workspace_id)
        text = page_text(presentation.locale)
        clearing = form.get("action") == "clear"
        typed = form.get("at", "")
        try:
            if clearing:
                clear_milestone(service, workspace_id, name, actor=viewer.actor)
            else:
                at = moment_from_input(typed, presentation.time_zone)
                set_milestone(service, workspace_id, name, at, actor=viewer.actor)
        except WorkspaceNotFound:
            return ui.refused(request, _GONE)
        except TimeNotAccepted as error:
            reason = text.gettext(error.reason)
            return _refused(viewer, reason, typed)
        except InvalidInput as error:
            return _refused(viewer, str(error), typed)
        log.info(
            "ui.report_milestone_cleared" if clearing else "ui.report_milestone_set",
            workspace_id=workspace_id,
            milestone=name,
            session_id=viewer.session_id,
        )
        return RedirectResponse(_report_url(workspace_id), status_code=303)

    def _refused(viewer: Viewer, reason: str, typed: str) -> Response:
        message = page_text(ui.presentation(workspace_id).locale).gettext("Not saved: {reason}.")
        return _view(
            ui,
            service,
            viewer,
            workspace_id,
            alert=(name, message.format(reason=reason)),
            typed=typed,
            status=422,
        )

    return await ui.change(request, workspace_id, apply)
