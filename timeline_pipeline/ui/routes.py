"""The timeline page, served by `serve` under `/ui` (docs/timeline-page.md).

* `GET  /ui/sign-in?token=...`: the page a one-time link from `timeline-pipeline ui link` opens,
  with one "Sign in" button; it spends nothing, so a chat's link preview fetching the link does
  not use it up. `POST /ui/sign-in` (the button: same origin, and the CSRF token bound to a
  cookie the GET set) redeems the link, sets the session cookie and sends the browser on to the
  workspace's page.
* `GET  /ui/workspaces/{id}`: the page; `.../entries` the entry list alone (filters, polling,
  more entries), `.../entries/{entry_id}/evidence` one entry's messages, one keyset page at a
  time; `.../export.md` the Markdown export.
* `POST .../entries/{entry_id}/{confirm,hide,restore,edit}`, `POST .../entries`,
  `POST .../summary`: curation, through `CurationService` with the revision the page showed, so
  a stale change is refused and says so. `POST /ui/sign-out` ends the session.

Every request of a workspace needs that workspace's session (401 without one, 403 for another
workspace, with nothing of the page). Every POST also needs the session's CSRF token and the
page's own origin. Handlers are plain `def` (blocking database calls run in the thread pool)
except where the body must be read first.

No `from __future__ import annotations`: FastAPI reads the handlers' annotations.
"""

import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Final
from urllib.parse import parse_qs, urlencode

from fastapi import APIRouter, Depends, Path, Query, Request, Response
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool

from timeline_pipeline.curation.errors import EntryNotFound
from timeline_pipeline.curation.evidence import EvidenceService
from timeline_pipeline.curation.export import render_markdown
from timeline_pipeline.curation.rules import (
    DETAIL_MAX_CHARS,
    SUMMARY_MAX_CHARS,
    TITLE_MAX_CHARS,
    Action,
)
from timeline_pipeline.curation.service import CurationService, NewEntry, TimelineOutline
from timeline_pipeline.curation.timeline import EntryView
from timeline_pipeline.domain.errors import InvalidInput, InvalidTransition, Refused, StaleRevision
from timeline_pipeline.observability.logs import get_logger
from timeline_pipeline.security.credentials import (
    csrf_token,
    csrf_valid,
    expected_origin,
    new_secret,
    same_origin,
    secure_request,
)
from timeline_pipeline.settings import Settings
from timeline_pipeline.store.workspaces import WorkspaceNotFound
from timeline_pipeline.ui.access import PageAccess
from timeline_pipeline.ui.templating import render, static_file
from timeline_pipeline.ui.view import (
    EntryCard,
    Filters,
    category_options,
    entry_card,
    evidence_item,
    parse_filters,
    summary_panel,
    timeline_version,
    utc_from_input,
)
from timeline_pipeline.web.body import BodyTooLarge, read_bounded_body
from timeline_pipeline.web.cursors import CursorCodec, InvalidCursor
from timeline_pipeline.web.deps import (
    CurationServiceDep,
    CursorsDep,
    EngineDep,
    EvidenceServiceDep,
    SettingsDep,
)

__all__ = ["SESSION_COOKIE", "UI_PREFIX", "router"]

UI_PREFIX: Final = "/ui"
SESSION_COOKIE: Final = "tlp_ui_session"
SIGN_IN_COOKIE: Final = "tlp_ui_sign_in"
SIGN_IN_PATH: Final = f"{UI_PREFIX}/sign-in"
CSRF_HEADER: Final = "X-CSRF-Token"
PAGE_ENTRIES: Final = 200
"""Entries in the first view; more come a page at a time (keyset), never all at once."""
EVIDENCE_PAGE: Final = 20
MAX_FORM_BYTES: Final = SUMMARY_MAX_CHARS * 9 + 16 * 1024
"""A form with the longest summary, every character percent-encoded UTF-8, plus the rest."""
_ACTOR_PREFIX: Final = "ui:"
_ENTRY_ID = Annotated[int, Path(ge=1, le=2**63 - 1)]
_WORKSPACE_ID = Annotated[str, Path(min_length=1, max_length=128)]
_CSP: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
_SECURITY_HEADERS: Final = {
    "Content-Security-Policy": _CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
}

log = get_logger("timeline_pipeline.ui")


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class Viewer:
    session_id: str
    workspace_id: str
    csrf: str


class Refusal(Exception):
    """A request the page answers with a message and nothing of the workspace."""

    def __init__(self, status: int, title: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.title = title
        self.message = message


def _html(body: str, status: int = 200, headers: Mapping[str, str] | None = None) -> HTMLResponse:
    return HTMLResponse(body, status_code=status, headers={**_SECURITY_HEADERS, **(headers or {})})


def _message_page(refusal: Refusal) -> HTMLResponse:
    return _html(
        render("message.html", title=refusal.title, message=refusal.message), refusal.status
    )


def _is_htmx(request: Request) -> bool:
    return request.headers.get("hx-request") == "true"


def _announce(text: str) -> dict[str, str]:
    """A header that makes the page say `text` in its live region (ui.js)."""
    import json

    return {"HX-Trigger": json.dumps({"ui:announce": text})}


router = APIRouter(prefix=UI_PREFIX, include_in_schema=False)


class Pages:
    """What the page's routes share: the services, the cursor codec, the bounds, the clock."""

    def __init__(
        self,
        curation: CurationService,
        evidence: EvidenceService,
        access: PageAccess,
        cursors: CursorCodec,
        settings: Settings,
    ) -> None:
        self.service = curation
        self.evidence = evidence
        self.access = access
        self.cursors = cursors
        self.clock = curation.clock
        self.session_ttl: timedelta = settings.timeline.ui_session_ttl
        self.poll_seconds = max(1, int(settings.timeline.ui_poll_interval.total_seconds()))

    # --- who is asking ---

    def viewer_of(self, request: Request) -> tuple[Viewer, str] | None:
        secret = request.cookies.get(SESSION_COOKIE)
        if not secret:
            return None
        info = self.access.session(secret)
        if info is None:
            return None
        return Viewer(info.id, info.workspace_id, csrf_token(secret)), secret

    def require_viewer(self, request: Request, workspace_id: str) -> Viewer:
        found = self.viewer_of(request)
        if found is None:
            raise Refusal(
                401,
                "Sign in to see this timeline",
                "Your session has ended or was never started. Ask for a sign-in link with "
                "`timeline-pipeline ui link --workspace <id>` and open it in this browser.",
            )
        viewer, _secret = found
        if viewer.workspace_id != workspace_id:
            raise Refusal(
                403,
                "Not your workspace",
                "This session is for another workspace. Ask for a sign-in link of the workspace "
                "you want to see.",
            )
        return viewer

    async def guarded_form(
        self, request: Request, workspace_id: str
    ) -> tuple[Viewer, dict[str, str]]:
        """The viewer and the form of a state-changing request, once session, origin and CSRF
        token have passed (in that order, before anything changes)."""
        viewer = await run_in_threadpool(self.require_viewer, request, workspace_id)
        form = await _same_origin_form(request, workspace_id)
        presented = request.headers.get(CSRF_HEADER) or form.get("csrf_token")
        secret = request.cookies.get(SESSION_COOKIE, "")
        if not csrf_valid(secret, presented):
            log.warning("ui.csrf_refused", reason="token", workspace_id=workspace_id)
            raise Refusal(403, "Refused", "This form has expired: reload the page and try again.")
        return viewer, form

    # --- reads ---

    def listing(
        self, workspace_id: str, filters: Filters, after: tuple[datetime, int] | None, limit: int
    ) -> TimelineOutline:
        """One page of entries matching the filters, in time order (keyset)."""
        page = self.service.timeline_outline(
            workspace_id, statuses=filters.statuses, after=after, limit=limit
        )
        if filters.category is None:
            return page
        matched = [e for e in page.entries if e.category == filters.category]
        reads = 1
        while len(matched) < limit and page.next_after is not None and reads < 20:
            page = self.service.timeline_outline(
                workspace_id, statuses=filters.statuses, after=page.next_after, limit=limit
            )
            matched.extend(e for e in page.entries if e.category == filters.category)
            reads += 1
        next_after = page.next_after
        if len(matched) > limit:
            matched = matched[:limit]
            next_after = (matched[-1].occurred_at, matched[-1].id)
        return TimelineOutline(
            workspace_id, page.statuses, matched, page.summary, next_after, page.title
        )

    def region_context(
        self, viewer: Viewer, view: TimelineOutline, filters: Filters, shown: int
    ) -> dict[str, Any]:
        cards = [entry_card(e) for e in view.entries]
        summary_revision = view.summary.revision if view.summary else None
        version = timeline_version([(c.id, c.revision) for c in cards], summary_revision, filters)
        query = filters.query()
        poll_query = urlencode([*query, ("version", version), ("limit", str(shown))])
        more = None
        if view.next_after is not None:
            cursor = self.cursors.encode("ui-entries", view.workspace_id, *view.next_after)
            more = urlencode([*query, ("after", cursor)])
        return {
            "workspace_id": view.workspace_id,
            "cards": cards,
            "version": version,
            "poll_query": poll_query,
            "more_query": more,
            "csrf": viewer.csrf,
            "filters": filters,
            "poll_seconds": self.poll_seconds,
        }

    def entry_response(
        self, viewer: Viewer, view: EntryView, *, alert: str | None = None, status: int = 200
    ) -> HTMLResponse:
        body = render(
            "_entry.html",
            workspace_id=view.workspace_id,
            card=entry_card(view),
            csrf=viewer.csrf,
            alert=alert,
        )
        return _html(body, status)

    def refused_change(
        self,
        request: Request,
        workspace_id: str,
        entry_id: int,
        viewer: Viewer,
        error: Refused,
    ) -> Response:
        if isinstance(error, EntryNotFound):
            return _message_page(Refusal(404, "Not found", "This entry does not exist."))
        if isinstance(error, StaleRevision | InvalidTransition):
            alert = (
                "Not saved: this entry was changed by someone else since you loaded it. "
                "It now shows the current version; review it and try again."
            )
            code = 409
        else:
            alert = f"Not saved: {error}."
            code = 422
        current = self.service.entry(workspace_id, entry_id)
        if not _is_htmx(request):
            return _message_page(Refusal(code, "Not saved", alert))
        return self.entry_response(viewer, current, alert=alert, status=code)

    def after_change(
        self, request: Request, workspace_id: str, viewer: Viewer, view: EntryView, said: str
    ) -> Response:
        if not _is_htmx(request):
            return RedirectResponse(f"{UI_PREFIX}/workspaces/{workspace_id}", status_code=303)
        response = self.entry_response(viewer, view)
        response.headers.update(_announce(said))
        return response

    def edit_form_with_error(
        self, viewer: Viewer, workspace_id: str, entry_id: int, form: dict[str, str], error: str
    ) -> Response:
        card = entry_card(self.service.entry(workspace_id, entry_id))
        body = render(
            "_entry_edit.html",
            workspace_id=workspace_id,
            card=card,
            csrf=viewer.csrf,
            categories=category_options(),
            limits={"title": TITLE_MAX_CHARS, "detail": DETAIL_MAX_CHARS},
            error=f"Not saved: {error}.",
            typed=form,
        )
        return _html(body, 422)

    def summary_response(
        self,
        viewer: Viewer,
        workspace_id: str,
        *,
        editing: bool,
        alert: str | None,
        status: int = 200,
    ) -> HTMLResponse:
        view = self.service.timeline_outline(workspace_id, limit=1).summary
        body = render(
            "_summary.html",
            workspace_id=workspace_id,
            summary=summary_panel(view),
            csrf=viewer.csrf,
            editing=editing,
            alert=alert,
            max_chars=SUMMARY_MAX_CHARS,
        )
        return _html(body, status)

    async def transition(
        self, request: Request, workspace_id: str, entry_id: int, action: Action
    ) -> Response:
        try:
            viewer, form = await self.guarded_form(request, workspace_id)
        except Refusal as refusal:
            return _message_page(refusal)
        revision = _int(form.get("revision"))

        def apply() -> Response:
            try:
                view = self.service.transition(
                    workspace_id,
                    entry_id,
                    action,
                    expected_revision=revision if revision is not None else -1,
                    actor=_ACTOR_PREFIX + viewer.session_id,
                )
            except Refused as error:
                return self.refused_change(request, workspace_id, entry_id, viewer, error)
            log.info(
                "ui.entry_changed",
                workspace_id=workspace_id,
                entry_id=entry_id,
                action=action.value,
                session_id=viewer.session_id,
            )
            past = {"confirm": "confirmed", "hide": "hidden", "restore": "restored"}[action.value]
            return self.after_change(
                request, workspace_id, viewer, view, f"Entry {past}: {view.title}"
            )

        return await run_in_threadpool(apply)


async def _same_origin_form(request: Request, workspace_id: str | None) -> dict[str, str]:
    """The form of a POST that came from the page's own origin (else Refusal 403)."""
    headers = request.headers
    origin = expected_origin(
        request.url.scheme, headers.get("host"), headers.get("x-forwarded-proto")
    )
    if not same_origin(headers.get("origin"), headers.get("referer"), origin):
        log.warning("ui.csrf_refused", reason="origin", workspace_id=workspace_id)
        raise Refusal(403, "Refused", "This request did not come from the timeline page.")
    try:
        body = await read_bounded_body(request, MAX_FORM_BYTES)
    except BodyTooLarge:
        raise Refusal(413, "Too large", "The form is larger than any valid one.") from None
    return _parse_form(body)


def _cookie_flags(request: Request) -> dict[str, Any]:
    """The flags every cookie of the page is set and deleted with (a deletion without them is
    a different cookie to some browsers, and leaves the session's cookie in place)."""
    return {
        "secure": secure_request(request.url.scheme, request.headers.get("x-forwarded-proto")),
        "httponly": True,
        "samesite": "strict",
    }


def get_pages(
    curation: CurationServiceDep,
    evidence: EvidenceServiceDep,
    cursors: CursorsDep,
    settings: SettingsDep,
    engine: EngineDep,
) -> Pages:
    access = PageAccess(engine, session_ttl=settings.timeline.ui_session_ttl, clock=curation.clock)
    return Pages(curation, evidence, access, cursors, settings)


PagesDep = Annotated[Pages, Depends(get_pages)]


@router.get("/workspaces/{workspace_id}")
def page(
    ui: PagesDep,
    request: Request,
    workspace_id: _WORKSPACE_ID,
    status: Annotated[list[str], Query(max_length=3)] = [],  # noqa: B006 - FastAPI's idiom
    category: Annotated[str | None, Query(max_length=64)] = None,
) -> Response:
    started = time.perf_counter()
    try:
        viewer = ui.require_viewer(request, workspace_id)
        filters = parse_filters(status, category)
        view = ui.listing(workspace_id, filters, None, PAGE_ENTRIES)
        workspace = ui.access.workspace(workspace_id)
    except Refusal as refusal:
        return _message_page(refusal)
    except WorkspaceNotFound:
        return _message_page(Refusal(404, "No such workspace", "This workspace is gone."))
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
    return _html(body, headers={"Server-Timing": f"app;dur={elapsed_ms:.1f}"})


@router.get("/workspaces/{workspace_id}/entries")
def entries_fragment(
    ui: PagesDep,
    request: Request,
    workspace_id: _WORKSPACE_ID,
    status: Annotated[list[str], Query(max_length=3)] = [],  # noqa: B006 - FastAPI's idiom
    category: Annotated[str | None, Query(max_length=64)] = None,
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
        return _message_page(refusal)
    except InvalidCursor:
        return _message_page(Refusal(400, "Bad request", "This link is not valid."))
    context = ui.region_context(viewer, view, filters, shown)
    if after is not None:
        return _html(render("_more_entries.html", **context))
    if version is not None and version == context["version"]:
        return Response(status_code=204, headers=_SECURITY_HEADERS)
    return _html(render("_entries.html", **context))


@router.get("/workspaces/{workspace_id}/entries/{entry_id}")
def entry_fragment(
    ui: PagesDep, request: Request, workspace_id: _WORKSPACE_ID, entry_id: _ENTRY_ID
) -> Response:
    try:
        viewer = ui.require_viewer(request, workspace_id)
        return ui.entry_response(viewer, ui.service.entry(workspace_id, entry_id))
    except Refusal as refusal:
        return _message_page(refusal)
    except EntryNotFound:
        return _message_page(Refusal(404, "Not found", "This entry does not exist."))


@router.get("/workspaces/{workspace_id}/entries/{entry_id}/edit")
def edit_form(
    ui: PagesDep, request: Request, workspace_id: _WORKSPACE_ID, entry_id: _ENTRY_ID
) -> Response:
    try:
        viewer = ui.require_viewer(request, workspace_id)
        view = ui.service.entry(workspace_id, entry_id)
    except Refusal as refusal:
        return _message_page(refusal)
    except EntryNotFound:
        return _message_page(Refusal(404, "Not found", "This entry does not exist."))
    body = render(
        "_entry_edit.html",
        workspace_id=workspace_id,
        card=entry_card(view),
        csrf=viewer.csrf,
        categories=category_options(),
        limits={"title": TITLE_MAX_CHARS, "detail": DETAIL_MAX_CHARS},
        error=None,
    )
    return _html(body)


@router.get("/workspaces/{workspace_id}/entries/{entry_id}/evidence")
def evidence_fragment(
    ui: PagesDep,
    request: Request,
    workspace_id: _WORKSPACE_ID,
    entry_id: _ENTRY_ID,
    after: Annotated[str | None, Query(max_length=200)] = None,
) -> Response:
    """One page of an entry's messages, in (occurred_at, id) order after a signed cursor."""
    listing_name = f"ui-evidence-{entry_id}"
    try:
        ui.require_viewer(request, workspace_id)
        position = ui.cursors.decode(listing_name, workspace_id, after) if after else None
        view = ui.service.entry(workspace_id, entry_id)
    except Refusal as refusal:
        return _message_page(refusal)
    except InvalidCursor:
        return _message_page(Refusal(400, "Bad request", "This link is not valid."))
    except EntryNotFound:
        return _message_page(Refusal(404, "Not found", "This entry does not exist."))
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
    return _html(body)


@router.get("/workspaces/{workspace_id}/export.md")
def export(ui: PagesDep, request: Request, workspace_id: _WORKSPACE_ID) -> Response:
    try:
        ui.require_viewer(request, workspace_id)
    except Refusal as refusal:
        return _message_page(refusal)
    view = ui.service.full_timeline(workspace_id)
    text = render_markdown(view, generated_at=ui.clock())
    return PlainTextResponse(
        text,
        media_type="text/markdown; charset=utf-8",
        headers={
            **_SECURITY_HEADERS,
            "Content-Disposition": f'attachment; filename="timeline-{workspace_id}.md"',
        },
    )


# --- changes ---


@router.post("/workspaces/{workspace_id}/entries/{entry_id}/edit")
async def edit(
    ui: PagesDep, request: Request, workspace_id: _WORKSPACE_ID, entry_id: _ENTRY_ID
) -> Response:
    try:
        viewer, form = await ui.guarded_form(request, workspace_id)
    except Refusal as refusal:
        return _message_page(refusal)
    revision = _int(form.get("revision"))

    def apply() -> Response:
        try:
            current = ui.service.entry(workspace_id, entry_id)
            if revision != current.revision:
                raise StaleRevision("stale", current.revision)
            changes = _edit_changes(current, form)
            if not changes:
                return ui.after_change(request, workspace_id, viewer, current, "Nothing changed")
            view = ui.service.edit(
                workspace_id,
                entry_id,
                changes,
                expected_revision=revision,
                actor=_ACTOR_PREFIX + viewer.session_id,
            )
        except Refused as error:
            if isinstance(error, InvalidInput) and _is_htmx(request):
                return ui.edit_form_with_error(viewer, workspace_id, entry_id, form, str(error))
            return ui.refused_change(request, workspace_id, entry_id, viewer, error)
        log.info(
            "ui.entry_edited",
            workspace_id=workspace_id,
            entry_id=entry_id,
            session_id=viewer.session_id,
        )
        return ui.after_change(request, workspace_id, viewer, view, f"Entry saved: {view.title}")

    return await run_in_threadpool(apply)


@router.post("/workspaces/{workspace_id}/entries")
async def add(ui: PagesDep, request: Request, workspace_id: _WORKSPACE_ID) -> Response:
    try:
        viewer, form = await ui.guarded_form(request, workspace_id)
    except Refusal as refusal:
        return _message_page(refusal)

    def apply() -> Response:
        try:
            try:
                occurred_at = utc_from_input(form.get("occurred_at", ""))
            except ValueError:
                raise InvalidInput("the time is not a date and time") from None
            view = ui.service.add(
                workspace_id,
                NewEntry(
                    occurred_at=occurred_at,
                    title=form.get("title", ""),
                    category=form.get("category", ""),
                    detail=form.get("detail") or None,
                ),
                actor=_ACTOR_PREFIX + viewer.session_id,
            )
        except Refused as error:
            message = f"Not added: {error}."
            if not _is_htmx(request):
                return _message_page(Refusal(422, "Not added", message))
            return _html(
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
        if not _is_htmx(request):
            return RedirectResponse(f"{UI_PREFIX}/workspaces/{workspace_id}", status_code=303)
        filters = parse_filters(form.get("status", "").split(","), form.get("category_filter"))
        listed = ui.listing(workspace_id, filters, None, PAGE_ENTRIES)
        response = _html(
            render("_entries.html", **ui.region_context(viewer, listed, filters, PAGE_ENTRIES))
        )
        response.headers.update(_announce(f"Entry added: {view.title}"))
        return response

    return await run_in_threadpool(apply)


@router.get("/workspaces/{workspace_id}/summary")
def summary_fragment(
    ui: PagesDep,
    request: Request,
    workspace_id: _WORKSPACE_ID,
    edit: Annotated[bool, Query()] = False,
) -> Response:
    try:
        viewer = ui.require_viewer(request, workspace_id)
    except Refusal as refusal:
        return _message_page(refusal)
    return ui.summary_response(viewer, workspace_id, editing=edit, alert=None)


@router.post("/workspaces/{workspace_id}/summary")
async def write_summary(ui: PagesDep, request: Request, workspace_id: _WORKSPACE_ID) -> Response:
    try:
        viewer, form = await ui.guarded_form(request, workspace_id)
    except Refusal as refusal:
        return _message_page(refusal)
    revision = _int(form.get("revision"))

    def apply() -> Response:
        try:
            ui.service.write_summary(
                workspace_id,
                form.get("content", ""),
                expected_revision=revision,
                check=True,
                actor=_ACTOR_PREFIX + viewer.session_id,
            )
        except StaleRevision:
            alert = (
                "Not saved: the summary was changed since you loaded it. It now shows the "
                "current version; review it and try again."
            )
            return ui.summary_response(viewer, workspace_id, editing=False, alert=alert, status=409)
        except InvalidInput as error:
            return ui.summary_response(
                viewer, workspace_id, editing=True, alert=f"Not saved: {error}.", status=422
            )
        log.info("ui.summary_written", workspace_id=workspace_id, session_id=viewer.session_id)
        if not _is_htmx(request):
            return RedirectResponse(f"{UI_PREFIX}/workspaces/{workspace_id}", status_code=303)
        response = ui.summary_response(viewer, workspace_id, editing=False, alert=None)
        response.headers.update(_announce("Summary saved"))
        return response

    return await run_in_threadpool(apply)


# --- sign-in ---


_LINK_REFUSED: Final = Refusal(
    403,
    "This sign-in link does not work",
    "It has expired or was already used: a link works once, within 10 minutes. "
    "Ask for a new one with `timeline-pipeline ui link --workspace <id>`.",
)


@router.get("/sign-in")
def sign_in_page(
    ui: PagesDep, request: Request, token: Annotated[str, Query(max_length=200)] = ""
) -> Response:
    """The link's page: one button that signs in. Opening it spends nothing."""
    workspace_id = ui.access.link_workspace(token)
    if workspace_id is None:
        log.info("ui.sign_in_refused", step="open")
        return _message_page(_LINK_REFUSED)
    nonce = new_secret()
    response = _html(
        render(
            "sign_in.html",
            workspace_id=workspace_id,
            action=SIGN_IN_PATH,
            token=token,
            csrf=csrf_token(nonce),
        ),
        # `no-referrer` would make the button's POST say `Origin: null` (refused below).
        headers={"Referrer-Policy": "same-origin"},
    )
    response.set_cookie(
        SIGN_IN_COOKIE, nonce, max_age=600, path=SIGN_IN_PATH, **_cookie_flags(request)
    )
    return response


@router.post("/sign-in")
async def sign_in(ui: PagesDep, request: Request) -> Response:
    """The button: redeems the link once, from the link's own page only (same origin, and the
    CSRF token of the cookie that page set), so no other site can sign a browser in."""
    try:
        form = await _same_origin_form(request, None)
    except Refusal as refusal:
        return _message_page(refusal)
    if not csrf_valid(request.cookies.get(SIGN_IN_COOKIE, ""), form.get("csrf_token")):
        log.warning("ui.csrf_refused", reason="sign_in_token")
        return _message_page(
            Refusal(403, "Refused", "This sign-in page has expired: open the link again.")
        )
    issued = await run_in_threadpool(ui.access.redeem, form.get("token", "")[:200])
    if issued is None:
        log.info("ui.sign_in_refused", step="redeem")
        return _message_page(_LINK_REFUSED)
    log.info("ui.signed_in", workspace_id=issued.workspace_id, session_id=issued.id)
    # A same-origin POST, so the redirect is same-site and the Strict cookie goes with it.
    response = RedirectResponse(
        f"{UI_PREFIX}/workspaces/{issued.workspace_id}", status_code=303, headers=_SECURITY_HEADERS
    )
    flags = _cookie_flags(request)
    response.set_cookie(
        SESSION_COOKIE,
        issued.secret,
        max_age=int(ui.session_ttl.total_seconds()),
        path=UI_PREFIX,
        **flags,
    )
    response.delete_cookie(SIGN_IN_COOKIE, path=SIGN_IN_PATH, **flags)
    return response


@router.post("/sign-out")
async def sign_out(ui: PagesDep, request: Request) -> Response:
    found = await run_in_threadpool(ui.viewer_of, request)
    if found is not None:
        try:
            await ui.guarded_form(request, found[0].workspace_id)
        except Refusal as refusal:
            return _message_page(refusal)

        await run_in_threadpool(ui.access.sign_out, found[1])
    response = _message_page(
        Refusal(200, "Signed out", "You are signed out. Open a new sign-in link to return.")
    )
    response.delete_cookie(SESSION_COOKIE, path=UI_PREFIX, **_cookie_flags(request))
    return response


# --- static ---


@router.get("/static/{name}")
def static(name: Annotated[str, Path(max_length=64)], request: Request) -> Response:
    found = static_file(name)
    if found is None:
        return PlainTextResponse("not found", status_code=404)
    headers = {
        "ETag": found.etag,
        "Cache-Control": "public, max-age=31536000, immutable",
        "X-Content-Type-Options": "nosniff",
    }
    if request.headers.get("if-none-match") == found.etag:
        return Response(status_code=304, headers=headers)
    return Response(found.body, media_type=found.media_type, headers=headers)


def _add_transition_route(action: Action) -> None:
    async def route(
        ui: PagesDep, request: Request, workspace_id: _WORKSPACE_ID, entry_id: _ENTRY_ID
    ) -> Response:
        return await ui.transition(request, workspace_id, entry_id, action)

    router.add_api_route(
        f"/workspaces/{{workspace_id}}/entries/{{entry_id}}/{action.value}",
        route,
        methods=["POST"],
        name=f"ui_{action.value}_entry",
    )


for _action in Action:
    _add_transition_route(_action)


def _parse_form(body: bytes) -> dict[str, str]:
    """An urlencoded form, first value of each field; Refusal 400 unless it is UTF-8 text
    (a percent-encoded lone surrogate included), so no field is ever guessed at."""
    try:
        parsed = parse_qs(
            body.decode("utf-8"), keep_blank_values=True, max_num_fields=50, errors="strict"
        )
    except (UnicodeDecodeError, ValueError):
        raise Refusal(400, "Bad request", "The form is not valid UTF-8 text.") from None
    return {key: values[0] for key, values in parsed.items() if values}


def _int(value: str | None) -> int | None:
    if value is None or not value.strip().isdigit() or len(value) > 12:
        return None
    return int(value)


def _edit_changes(current: EntryView, form: Mapping[str, str]) -> dict[str, Any]:
    """What the form changes against the entry it was filled from (a field left as it was is no
    edit, so an untouched entry does not become human-edited)."""
    card: EntryCard = entry_card(current)
    changes: dict[str, Any] = {}
    if "title" in form and form["title"].strip() != current.title:
        changes["title"] = form["title"]
    if "detail" in form and (form["detail"].strip() or None) != current.detail:
        changes["detail"] = form["detail"]
    if "category" in form and form["category"] != current.category:
        changes["category"] = form["category"]
    if "occurred_at" in form and form["occurred_at"].strip() != card.occurred_input:
        try:
            changes["occurred_at"] = utc_from_input(form["occurred_at"])
        except ValueError:
            raise InvalidInput("the time is not a date and time") from None
    return changes
