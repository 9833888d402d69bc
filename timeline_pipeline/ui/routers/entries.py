"""One entry of the timeline page (docs/timeline-page.md): its fragment, its evidence, its edit
form, and the curation actions.

* `GET .../entries/{entry_id}`, `.../edit` (the form), `.../evidence` (one entry's messages,
  one keyset page at a time).
* `POST .../entries/{entry_id}/{confirm,hide,restore,edit}` and `POST .../entries` (add):
  through `CurationService` with the revision the page showed, so a stale change is refused
  and says so.

Shown in the workspace's language and zone (docs/i18n.md): a fragment carries its date when the
page asks with `dated=1` (its list spans local days), and the form's time is read in the zone.

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
from timeline_pipeline.i18n.locales import Presentation
from timeline_pipeline.i18n.times import spans_days
from timeline_pipeline.observability.logs import get_logger
from timeline_pipeline.ui.forms import form_int
from timeline_pipeline.ui.language import N_, page_text
from timeline_pipeline.ui.pages import (
    DATED,
    PAGE_ENTRIES,
    EntryId,
    Pages,
    PagesDep,
    Viewer,
    WorkspaceId,
    asks_dated,
)
from timeline_pipeline.ui.responses import (
    BAD_LINK,
    ENTRY_NOT_FOUND,
    Refusal,
    announced,
    html,
    is_htmx,
    to_page,
)
from timeline_pipeline.ui.view import (
    TimeNotAccepted,
    entry_card,
    evidence_item,
    moment_from_input,
    parse_filters,
)
from timeline_pipeline.web.cursors import InvalidCursor

__all__ = ["router"]

EVIDENCE_PAGE: Final = 20
_DONE: Final = {
    Action.CONFIRM: N_("Entry confirmed: {title}"),
    Action.HIDE: N_("Entry hidden: {title}"),
    Action.RESTORE: N_("Entry restored: {title}"),
}
"""What the live region says after each action (one sentence each, never assembled)."""
Dated = Annotated[str | None, Query(max_length=16)]

log = get_logger("timeline_pipeline.ui")

router = APIRouter()


# --- reads ---


def _add_entry_read(
    path: str, name: str, respond: Callable[[Pages, Viewer, EntryView, bool], Response]
) -> None:
    """A GET route showing one entry as `respond` does (dated when the page asks), else the
    message page; the fragment and the edit form share the handler (FastAPI needs real
    signatures)."""

    def read(
        ui: PagesDep,
        request: Request,
        workspace_id: WorkspaceId,
        entry_id: EntryId,
        dated: Dated = None,
    ) -> Response:
        try:
            viewer, view = ui.viewer_and_entry(request, workspace_id, entry_id)
        except Refusal as refusal:
            return ui.refused(request, refusal)
        return respond(ui, viewer, view, asks_dated(dated))

    router.add_api_route(path, read, methods=["GET"], name=name)


_add_entry_read(
    "/workspaces/{workspace_id}/entries/{entry_id}",
    "entry_fragment",
    lambda ui, viewer, view, dated: ui.entry_response(viewer, view, dated=dated),
)
_add_entry_read(
    "/workspaces/{workspace_id}/entries/{entry_id}/edit",
    "edit_form",
    lambda ui, viewer, view, dated: ui.edit_form_response(viewer, view, dated=dated),
)


@router.get("/workspaces/{workspace_id}/entries/{entry_id}/evidence")
def evidence_fragment(
    ui: PagesDep,
    request: Request,
    workspace_id: WorkspaceId,
    entry_id: EntryId,
    after: Annotated[str | None, Query(max_length=200)] = None,
    dated: Dated = None,
) -> Response:
    """One page of an entry's messages, in (occurred_at, id) order after a signed cursor;
    dated as the entry's list is, or when the messages themselves span local days."""
    listing_name = f"ui-evidence-{entry_id}"
    try:
        ui.require_viewer(request, workspace_id)
        position = ui.cursors.decode(listing_name, workspace_id, after) if after else None
        view = ui.service.entry(workspace_id, entry_id)
    except Refusal as refusal:
        return ui.refused(request, refusal)
    except InvalidCursor:
        return ui.refused(request, BAD_LINK)
    except EntryNotFound:
        return ui.refused(request, ENTRY_NOT_FOUND)
    links = [
        link
        for link in view.evidence
        if position is None or (link.occurred_at, link.evidence_id) > position
    ]
    chosen = links[:EVIDENCE_PAGE]
    rows = ui.evidence.rows(workspace_id, [link.evidence_id for link in chosen])
    by_id = {row.id: row for row in rows}
    presentation = ui.presentation(workspace_id)
    with_date = asks_dated(dated) or spans_days(
        [link.occurred_at for link in view.evidence], presentation.time_zone
    )
    items = [
        evidence_item(by_id[link.evidence_id], link.url, presentation, dated=with_date)
        for link in chosen
        if link.evidence_id in by_id
    ]
    more = None
    if len(links) > EVIDENCE_PAGE:
        last = chosen[-1]
        more = ui.cursors.encode(listing_name, workspace_id, last.occurred_at, last.evidence_id)
    more_query = {"after": more, **({DATED: "1"} if with_date else {})} if more else None
    body = ui.render(
        workspace_id,
        "_evidence.html",
        workspace_id=workspace_id,
        entry_id=entry_id,
        items=items,
        more_query=urlencode(more_query) if more_query else None,
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
        presentation = ui.presentation(workspace_id)
        text = page_text(presentation.locale)
        dated = asks_dated(form.get(DATED))
        revision = form_int(form.get("revision"))
        try:
            current = ui.service.entry(workspace_id, entry_id)
            if revision != current.revision:
                raise StaleRevision("stale", current.revision)
            changes = _edit_changes(current, form, presentation)
            if not changes:
                said = text.gettext("Nothing changed")
                return ui.after_change(request, workspace_id, viewer, current, said, dated=dated)
            view = ui.service.edit(
                workspace_id, entry_id, changes, expected_revision=revision, actor=viewer.actor
            )
        except Refused as error:
            if isinstance(error, InvalidInput) and is_htmx(request):
                return ui.edit_form_response(
                    viewer,
                    ui.service.entry(workspace_id, entry_id),
                    dated=dated,
                    error=text.gettext("Not saved: {reason}.").format(reason=str(error)),
                    typed=form,
                    status=422,
                )
            return ui.refused_change(request, workspace_id, entry_id, viewer, error, dated=dated)
        log.info(
            "ui.entry_edited",
            workspace_id=workspace_id,
            entry_id=entry_id,
            session_id=viewer.session_id,
        )
        said = text.gettext("Entry saved: {title}").format(title=view.title)
        return ui.after_change(request, workspace_id, viewer, view, said, dated=dated)

    return await ui.change(request, workspace_id, apply)


@router.post("/workspaces/{workspace_id}/entries")
async def add(ui: PagesDep, request: Request, workspace_id: WorkspaceId) -> Response:
    def apply(viewer: Viewer, form: dict[str, str]) -> Response:
        presentation = ui.presentation(workspace_id)
        text = page_text(presentation.locale)
        try:
            view = ui.service.add(
                workspace_id,
                NewEntry(
                    occurred_at=_occurred_at(form.get("occurred_at", ""), presentation),
                    title=form.get("title", ""),
                    category=form.get("category", ""),
                    detail=form.get("detail") or None,
                ),
                actor=viewer.actor,
            )
        except Refused as error:
            if not is_htmx(request):
                refusal = Refusal(
                    422, N_("Not added"), N_("Not added: {reason}."), reason=str(error)
                )
                return ui.refused(request, refusal)
            message = text.gettext("Not added: {reason}.").format(reason=str(error))
            return html(
                ui.render(workspace_id, "_form_error.html", message=message),
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
        context = ui.region_context(viewer, listed, filters, PAGE_ENTRIES)
        response = html(ui.render(workspace_id, "_entries.html", **context))
        return announced(response, text.gettext("Entry added: {title}").format(title=view.title))

    return await ui.change(request, workspace_id, apply)


async def _transition(
    ui: Pages, request: Request, workspace_id: str, entry_id: int, action: Action
) -> Response:
    def apply(viewer: Viewer, form: dict[str, str]) -> Response:
        dated = asks_dated(form.get(DATED))
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
            return ui.refused_change(request, workspace_id, entry_id, viewer, error, dated=dated)
        log.info(
            "ui.entry_changed",
            workspace_id=workspace_id,
            entry_id=entry_id,
            action=action.value,
            session_id=viewer.session_id,
        )
        text = page_text(ui.presentation(workspace_id).locale)
        said = text.gettext(_DONE[action]).format(title=view.title)
        return ui.after_change(request, workspace_id, viewer, view, said, dated=dated)

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


def _occurred_at(typed: str, presentation: Presentation) -> datetime:
    """The form's time, typed in the workspace's zone, as UTC (InvalidInput, with the reason
    the page shows in the workspace's language, else)."""
    try:
        return moment_from_input(typed, presentation.time_zone)
    except TimeNotAccepted as refused:
        reason = page_text(presentation.locale).gettext(refused.reason)
        raise InvalidInput(reason) from None


def _edit_changes(
    current: EntryView, form: Mapping[str, str], presentation: Presentation
) -> dict[str, Any]:
    """What the form changes against the entry it was filled from (a field left as it was is no
    edit, so an untouched entry does not become human-edited)."""
    card = entry_card(current, presentation, dated=False)
    changes: dict[str, Any] = {}
    if "title" in form and form["title"].strip() != current.title:
        changes["title"] = form["title"]
    if "detail" in form and (form["detail"].strip() or None) != current.detail:
        changes["detail"] = form["detail"]
    if "category" in form and form["category"] != current.category:
        changes["category"] = form["category"]
    if "occurred_at" in form and form["occurred_at"].strip() != card.occurred_input:
        changes["occurred_at"] = _occurred_at(form["occurred_at"], presentation)
    return changes
