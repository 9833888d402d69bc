"""One entry of the timeline page (docs/timeline-page.md): its fragment, its evidence, its edit
form, and the curation actions.

* `GET .../entries/{entry_id}`, `.../edit` (the form), `.../evidence` (one entry's messages,
  one keyset page at a time).
* `POST .../entries/{entry_id}/{confirm,hide,restore,edit}` and `POST .../entries` (add):
  through `CurationService` with the revision the page showed, so a stale change is refused
  and says so.

Reads are plain `def` (blocking database calls run in the thread pool); a change is `async`,
since its form must be read first, and then applies in the thread pool. No
`from __future__ import annotations`: FastAPI reads the handlers' annotations.
"""

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Annotated, Any, Final
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request, Response

from timeline_pipeline.curation.errors import EntryNotFound
from timeline_pipeline.curation.rules import Action
from timeline_pipeline.curation.service import NewEntry
from timeline_pipeline.curation.timeline import EntryView
from timeline_pipeline.domain.errors import InvalidInput, Refused, StaleRevision
from timeline_pipeline.observability.logs import get_logger
from timeline_pipeline.ui.forms import form_int
from timeline_pipeline.ui.pages import PAGE_ENTRIES, EntryId, Pages, PagesDep, Viewer, WorkspaceId
from timeline_pipeline.ui.responses import (
    BAD_LINK,
    ENTRY_NOT_FOUND,
    Refusal,
    announced,
    html,
    is_htmx,
    message_page,
    to_page,
)
from timeline_pipeline.ui.templating import render
from timeline_pipeline.ui.view import entry_card, evidence_item, parse_filters, utc_from_input
from timeline_pipeline.web.cursors import InvalidCursor

__all__ = ["router"]

EVIDENCE_PAGE: Final = 20
_PAST: Final = {Action.CONFIRM: "confirmed", Action.HIDE: "hidden", Action.RESTORE: "restored"}

log = get_logger("timeline_pipeline.ui")

router = APIRouter()


# --- reads ---


def _shown(
    ui: Pages,
    request: Request,
    workspace_id: str,
    entry_id: int,
    respond: Callable[[Viewer, EntryView], Response],
) -> Response:
    """One entry, as `respond` shows it to the viewer; else the message page."""
    try:
        viewer, view = ui.viewer_and_entry(request, workspace_id, entry_id)
    except Refusal as refusal:
        return message_page(refusal)
    return respond(viewer, view)


@router.get("/workspaces/{workspace_id}/entries/{entry_id}")
def entry_fragment(
    ui: PagesDep, request: Request, workspace_id: WorkspaceId, entry_id: EntryId
) -> Response:
    return _shown(ui, request, workspace_id, entry_id, ui.entry_response)


@router.get("/workspaces/{workspace_id}/entries/{entry_id}/edit")
def edit_form(
    ui: PagesDep, request: Request, workspace_id: WorkspaceId, entry_id: EntryId
) -> Response:
    return _shown(ui, request, workspace_id, entry_id, ui.edit_form_response)


@router.get("/workspaces/{workspace_id}/entries/{entry_id}/evidence")
def evidence_fragment(
    ui: PagesDep,
    request: Request,
    workspace_id: WorkspaceId,
    entry_id: EntryId,
    after: Annotated[str | None, Query(max_length=200)] = None,
) -> Response:
    """One page of an entry's messages, in (occurred_at, id) order after a signed cursor."""
    listing_name = f"ui-evidence-{entry_id}"
    try:
        ui.require_viewer(request, workspace_id)
        position = ui.cursors.decode(listing_name, workspace_id, after) if after else None
        view = ui.service.entry(workspace_id, entry_id)
    except Refusal as refusal:
        return message_page(refusal)
    except InvalidCursor:
        return message_page(BAD_LINK)
    except EntryNotFound:
        return message_page(ENTRY_NOT_FOUND)
    links = [
        link
        for link in view.evidence
        if position is None or (link.occurred_at, link.evidence_id) > position
    ]
    chosen = links[:EVIDENCE_PAGE]
    rows = ui.evidence.rows(workspace_id, [link.evidence_id for link in chosen])
    by_id = {row.id: row for row in rows}
    items = [
        evidence_item(by_id[link.evidence_id], link.url)
        for link in chosen
        if link.evidence_id in by_id
    ]
    more = None
    if len(links) > EVIDENCE_PAGE:
        last = chosen[-1]
        more = ui.cursors.encode(listing_name, workspace_id, last.occurred_at, last.evidence_id)
    body = render(
        "_evidence.html",
        workspace_id=workspace_id,
        entry_id=entry_id,
        items=items,
        more_query=urlencode({"after": more}) if more else None,
        total=len(view.evidence),
        continuation=after is not None,
    )
    return html(body)


# --- changes ---


@router.post("/workspaces/{workspace_id}/entries/{entry_id}/edit")
async def edit(
    ui: PagesDep, request: Request, workspace_id: WorkspaceId, entry_id: EntryId
) -> Response:
    def apply(viewer: Viewer, form: dict[str, str]) -> Response:
        revision = form_int(form.get("revision"))
        try:
            current = ui.service.entry(workspace_id, entry_id)
            if revision != current.revision:
                raise StaleRevision("stale", current.revision)
            changes = _edit_changes(current, form)
            if not changes:
                return ui.after_change(request, workspace_id, viewer, current, "Nothing changed")
            view = ui.service.edit(
                workspace_id, entry_id, changes, expected_revision=revision, actor=viewer.actor
            )
        except Refused as error:
            if isinstance(error, InvalidInput) and is_htmx(request):
                return ui.edit_form_response(
                    viewer,
                    ui.service.entry(workspace_id, entry_id),
                    error=f"Not saved: {error}.",
                    typed=form,
                    status=422,
                )
            return ui.refused_change(request, workspace_id, entry_id, viewer, error)
        log.info(
            "ui.entry_edited",
            workspace_id=workspace_id,
            entry_id=entry_id,
            session_id=viewer.session_id,
        )
        return ui.after_change(request, workspace_id, viewer, view, f"Entry saved: {view.title}")

    return await ui.change(request, workspace_id, apply)


@router.post("/workspaces/{workspace_id}/entries")
async def add(ui: PagesDep, request: Request, workspace_id: WorkspaceId) -> Response:
    def apply(viewer: Viewer, form: dict[str, str]) -> Response:
        try:
            view = ui.service.add(
                workspace_id,
                NewEntry(
                    occurred_at=_occurred_at(form.get("occurred_at", "")),
                    title=form.get("title", ""),
                    category=form.get("category", ""),
                    detail=form.get("detail") or None,
                ),
                actor=viewer.actor,
            )
        except Refused as error:
            message = f"Not added: {error}."
            if not is_htmx(request):
                return message_page(Refusal(422, "Not added", message))
            return html(
                render("_form_error.html", message=message),
                422,
                headers={"HX-Retarget": "#add-entry-error", "HX-Reswap": "innerHTML"},
            )
        log.info(
            "ui.entry_added",
            workspace_id=workspace_id,
            entry_id=view.id,
            session_id=viewer.session_id,
        )
        if not is_htmx(request):
            return to_page(workspace_id)
        filters = parse_filters(form.get("status", "").split(","), form.get("category_filter"))
        listed = ui.listing(workspace_id, filters, None, PAGE_ENTRIES)
        response = html(
            render("_entries.html", **ui.region_context(viewer, listed, filters, PAGE_ENTRIES))
        )
        return announced(response, f"Entry added: {view.title}")

    return await ui.change(request, workspace_id, apply)


async def _transition(
    ui: Pages, request: Request, workspace_id: str, entry_id: int, action: Action
) -> Response:
    def apply(viewer: Viewer, form: dict[str, str]) -> Response:
        revision = form_int(form.get("revision"))
        try:
            view = ui.service.transition(
                workspace_id,
                entry_id,
                action,
                expected_revision=revision if revision is not None else -1,
                actor=viewer.actor,
            )
        except Refused as error:
            return ui.refused_change(request, workspace_id, entry_id, viewer, error)
        log.info(
            "ui.entry_changed",
            workspace_id=workspace_id,
            entry_id=entry_id,
            action=action.value,
            session_id=viewer.session_id,
        )
        said = f"Entry {_PAST[action]}: {view.title}"
        return ui.after_change(request, workspace_id, viewer, view, said)

    return await ui.change(request, workspace_id, apply)


def _add_transition_route(action: Action) -> None:
    async def route(
        ui: PagesDep, request: Request, workspace_id: WorkspaceId, entry_id: EntryId
    ) -> Response:
        return await _transition(ui, request, workspace_id, entry_id, action)

    router.add_api_route(
        f"/workspaces/{{workspace_id}}/entries/{{entry_id}}/{action.value}",
        route,
        methods=["POST"],
        name=f"ui_{action.value}_entry",
    )


for _action in Action:
    _add_transition_route(_action)


def _occurred_at(typed: str) -> datetime:
    """The form's time as UTC (InvalidInput, with the reason the page shows, else)."""
    try:
        return utc_from_input(typed)
    except ValueError:
        raise InvalidInput("the time is not a date and time") from None


def _edit_changes(current: EntryView, form: Mapping[str, str]) -> dict[str, Any]:
    """What the form changes against the entry it was filled from (a field left as it was is no
    edit, so an untouched entry does not become human-edited)."""
    card = entry_card(current)
    changes: dict[str, Any] = {}
    if "title" in form and form["title"].strip() != current.title:
        changes["title"] = form["title"]
    if "detail" in form and (form["detail"].strip() or None) != current.detail:
        changes["detail"] = form["detail"]
    if "category" in form and form["category"] != current.category:
        changes["category"] = form["category"]
    if "occurred_at" in form and form["occurred_at"].strip() != card.occurred_input:
        changes["occurred_at"] = _occurred_at(form["occurred_at"])
    return changes
