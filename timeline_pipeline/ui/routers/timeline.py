"""The page of a workspace, its entry list and its Markdown export (docs/timeline-page.md).

* `GET /ui/workspaces/{id}`: the page; `.../entries` the entry list alone (filters, polling,
  more entries, one keyset page at a time); `.../export.md` the Markdown export.

Handlers are plain `def`: blocking database calls run in the thread pool. No
`from __future__ import annotations`: FastAPI reads the handlers' annotations.
"""

import time
from datetime import UTC
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import PlainTextResponse

from timeline_pipeline.curation.export import render_markdown
from timeline_pipeline.curation.rules import DETAIL_MAX_CHARS, SUMMARY_MAX_CHARS, TITLE_MAX_CHARS
from timeline_pipeline.store.workspaces import WorkspaceNotFound
from timeline_pipeline.ui.pages import PAGE_ENTRIES, PagesDep, WorkspaceId
from timeline_pipeline.ui.responses import (
    BAD_LINK,
    SECURITY_HEADERS,
    Refusal,
    html,
    message_page,
)
from timeline_pipeline.ui.templating import render
from timeline_pipeline.ui.view import category_options, parse_filters, summary_panel
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
        return message_page(refusal)
    except WorkspaceNotFound:
        return message_page(Refusal(404, "No such workspace", "This workspace is gone."))
    body = render(
        "page.html",
        workspace=workspace,
        summary=summary_panel(view.summary),
        editing=False,
        alert=None,
        max_chars=SUMMARY_MAX_CHARS,
        categories=category_options(),
        now_input=ui.clock().astimezone(UTC).strftime("%Y-%m-%dT%H:%M"),
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
        return message_page(refusal)
    except InvalidCursor:
        return message_page(BAD_LINK)
    context = ui.region_context(viewer, view, filters, shown)
    if after is not None:
        return html(render("_more_entries.html", **context))
    if version is not None and version == context["version"]:
        return Response(status_code=204, headers=SECURITY_HEADERS)
    return html(render("_entries.html", **context))


@router.get("/workspaces/{workspace_id}/export.md")
def export(ui: PagesDep, request: Request, workspace_id: WorkspaceId) -> Response:
    try:
        ui.require_viewer(request, workspace_id)
    except Refusal as refusal:
        return message_page(refusal)
    view = ui.service.full_timeline(workspace_id)
    text = render_markdown(view, generated_at=ui.clock())
    return PlainTextResponse(
        text,
        media_type="text/markdown; charset=utf-8",
        headers={
            **SECURITY_HEADERS,
            "Content-Disposition": f'attachment; filename="timeline-{workspace_id}.md"',
        },
    )
