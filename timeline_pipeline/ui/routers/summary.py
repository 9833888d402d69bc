"""The summary panel of the timeline page (docs/timeline-page.md): `GET .../summary` shows it
(or its form, with `edit`), `POST .../summary` writes it with the revision the page showed, so
a stale write is refused and says so.

No `from __future__ import annotations`: FastAPI reads the handlers' annotations.
"""

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from timeline_pipeline.domain.errors import InvalidInput, StaleRevision
from timeline_pipeline.observability.logs import get_logger
from timeline_pipeline.ui.forms import form_int
from timeline_pipeline.ui.language import page_text
from timeline_pipeline.ui.pages import PagesDep, Viewer, WorkspaceId
from timeline_pipeline.ui.responses import Refusal, announced, is_htmx, to_page

__all__ = ["router"]

log = get_logger("timeline_pipeline.ui")

router = APIRouter()


@router.get("/workspaces/{workspace_id}/summary")
def summary_fragment(
    ui: PagesDep,
    request: Request,
    workspace_id: WorkspaceId,
    edit: Annotated[bool, Query()] = False,
) -> Response:
    try:
        viewer = ui.require_viewer(request, workspace_id)
    except Refusal as refusal:
        return ui.refused(request, refusal)
    return ui.summary_response(viewer, workspace_id, editing=edit, alert=None)


@router.post("/workspaces/{workspace_id}/summary")
async def write_summary(ui: PagesDep, request: Request, workspace_id: WorkspaceId) -> Response:
    def apply(viewer: Viewer, form: dict[str, str]) -> Response:
        text = page_text(ui.presentation(workspace_id).locale)
        revision = form_int(form.get("revision"))
        try:
            ui.service.write_summary(
                workspace_id,
                form.get("content", ""),
                expected_revision=revision,
                check=True,
                actor=viewer.actor,
            )
        except StaleRevision:
            alert = text.gettext(
                "Not saved: the summary was changed since you loaded it. It now shows the "
                "current version; review it and try again."
            )
            return ui.summary_response(viewer, workspace_id, editing=False, alert=alert, status=409)
        except InvalidInput as error:
            return ui.summary_response(
                viewer,
                workspace_id,
                editing=True,
                alert=text.gettext("Not saved: {reason}.").format(reason=str(error)),
                status=422,
            )
        log.info("ui.summary_written", workspace_id=workspace_id, session_id=viewer.session_id)
        if not is_htmx(request):
            return to_page(workspace_id)
        response = ui.summary_response(viewer, workspace_id, editing=False, alert=None)
        return announced(response, text.gettext("Summary saved"))

    return await ui.change(request, workspace_id, apply)
