"""The page of a workspace, its entry list and its Markdown export (docs/timeline-page.md).

* `GET /ui/workspaces/{id}`: the page; `.../entries` the entry list alone (filters, polling,
  more entries, one keyset page at a time); `.../export.md` the Markdown export.

Shown in the workspace's language and zone (docs/i18n.md): the add form's time field is filled
with the present time in that zone.

Handlers are plain `def`: blocking database calls run in the thread pool. No
`from __future__ import annotations`: FastAPI reads the handlers' annotations.
"""

import time
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import PlainTextResponse

from timeline_pipeline.curation.export import render_markdown
from timeline_pipeline.curation.rules import DETAIL_MAX_CHARS, SUMMARY_MAX_CHARS, TITLE_MAX_CHARS
from timeline_pipeline.i18n.times import zone_label
from timeline_pipeline.store.workspaces import WorkspaceNotFound
from timeline_pipeline.ui.language import N_
from timeline_pipeline.ui.pages import PAGE_ENTRIES, PagesDep, WorkspaceId
from timeline_pipeline.ui.responses import BAD_LINK, SECURITY_HEADERS, Refusal, html
from timeline_pipeline.ui.view import (
    category_options,
    input_value,
    parse_filters,
    status_options,
    summary_panel,
    workspace_status_label,
    zone_name,
)
from timeline_pipeline.web.cursors import InvalidCursor

__all__ = ["router"]

StatusFilter = Annotated[list[str], Query(max_length=3)]
CategoryFilter = Annotated[str | None, Query(max_length=64)]

router = APIRouter()


@router.get("/workspaces/{workspace_id}")
def page(
    ui: PagesDep,
    request: Request,
    workspace_id: WorkspaceId,
    status: StatusFilter = [],  # noqa: B006 - FastAPI's idiom
    category: CategoryFilter = None,
) -> Response:
    started = time.perf_counter()
    try:
        viewer = ui.require_viewer(request, workspace_id)
        filters = parse_filters(status, category)
        view = ui.listing(workspace_id, filters, None, PAGE_ENTRIES)
        workspace = ui.access.workspace(workspace_id)
    except Refusal as refusal:
        return ui.refused(request, refusal)
    except WorkspaceNotFound:
        return ui.refused(
            request, Refusal(404, N_("No such workspace"), N_("This workspace is gone."))
        )
    presentation = ui.presentation(workspace_id)
    locale, zone, now = presentation.locale, presentation.time_zone, ui.clock()
    body = ui.render(
        workspace_id,
        "page.html",
        workspace=workspace,
        workspace_status=workspace_status_label(workspace.status, locale),
        zone_name=zone_name(zone, now),
        now_zone=zone_label(now, zone),
        summary=summary_panel(view.summary, presentation),
        editing=False,
        alert=None,
        max_chars=SUMMARY_MAX_CHARS,
        categories=category_options(locale),
        statuses=status_options(locale),
        now_input=input_value(now, zone),
        limits={"title": TITLE_MAX_CHARS, "detail": DETAIL_MAX_CHARS},
        **ui.region_context(viewer, view, filters, PAGE_ENTRIES),
    )
    elapsed_ms = (time.perf_counter() - started) * 1000
    return html(body, headers={"Server-Timing": f"app;dur={elapsed_ms:.1f}"})


@router.get("/workspaces/{workspace_id}/entries")
def entries_fragment(
    ui: PagesDep,
    request: Request,
    workspace_id: WorkspaceId,
    status: StatusFilter = [],  # noqa: B006 - FastAPI's idiom
    category: CategoryFilter = None,
    version: Annotated[str | None, Query(max_length=32)] = None,
    after: Annotated[str | None, Query(max_length=200)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = PAGE_ENTRIES,
) -> Response:
    """The entry list: the whole region (filters, polling: 204 while `version` holds), or
    with `after` the next page of entries alone."""
    try:
        viewer = ui.require_viewer(request, workspace_id)
        filters = parse_filters(status, category)
        position = ui.cursors.decode("ui-entries", workspace_id, after) if after else None
        shown = max(limit, PAGE_ENTRIES)
        view = ui.listing(workspace_id, filters, position, PAGE_ENTRIES if after else shown)
    except Refusal as refusal:
        return ui.refused(request, refusal)
    except InvalidCursor:
        return ui.refused(request, BAD_LINK)
    if after is None and version is not None and version == ui.region_version(view, filters):
        return Response(status_code=204, headers=SECURITY_HEADERS)
    context = ui.region_context(
        viewer, view, filters, shown, after=position[0] if position else None
    )
    if after is not None:
        return html(ui.render(workspace_id, "_more_entries.html", **context))
    return html(ui.render(workspace_id, "_entries.html", **context))


@router.get("/workspaces/{workspace_id}/export.md")
def export(ui: PagesDep, request: Request, workspace_id: WorkspaceId) -> Response:
    try:
        ui.require_viewer(request, workspace_id)
    except Refusal as refusal:
        return ui.refused(request, refusal)
    view = ui.service.full_timeline(workspace_id)
    text = render_markdown(
        view, generated_at=ui.clock(), presentation=ui.presentation(workspace_id)
    )
    return PlainTextResponse(
        text,
        media_type="text/markdown; charset=utf-8",
        headers={
            **SECURITY_HEADERS,
            "Content-Disposition": f'attachment; filename="timeline-{workspace_id}.md"',
        },
    )
