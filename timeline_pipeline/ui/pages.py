"""What the timeline page's routers share (docs/timeline-page.md): who is asking, the reads
behind the page and its fragments, and the answers after a change.

Every request of a workspace needs that workspace's session (401 without one, 403 for another
workspace, with nothing of the page). Every POST also needs the session's CSRF token and the
page's own origin (`guarded_form`).

No `from __future__ import annotations`: FastAPI reads the annotations of `get_pages`.
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated, Any, Final
from urllib.parse import urlencode

from fastapi import Depends, Path, Request, Response
from fastapi.responses import HTMLResponse
from starlette.concurrency import run_in_threadpool

from timeline_pipeline.curation.errors import EntryNotFound
from timeline_pipeline.curation.evidence import EvidenceService
from timeline_pipeline.curation.rules import DETAIL_MAX_CHARS, SUMMARY_MAX_CHARS, TITLE_MAX_CHARS
from timeline_pipeline.curation.service import CurationService, TimelineOutline
from timeline_pipeline.curation.timeline import EntryView
from timeline_pipeline.domain.errors import InvalidTransition, Refused, StaleRevision
from timeline_pipeline.observability.logs import get_logger
from timeline_pipeline.security.credentials import csrf_token, csrf_valid
from timeline_pipeline.settings import Settings
from timeline_pipeline.ui.access import PageAccess
from timeline_pipeline.ui.forms import same_origin_form
from timeline_pipeline.ui.responses import (
    ENTRY_NOT_FOUND,
    Refusal,
    announced,
    html,
    is_htmx,
    message_page,
    to_page,
)
from timeline_pipeline.ui.templating import render
from timeline_pipeline.ui.view import (
    Filters,
    category_options,
    entry_card,
    summary_panel,
    timeline_version,
)
from timeline_pipeline.web.cursors import CursorCodec
from timeline_pipeline.web.deps import (
    CurationServiceDep,
    CursorsDep,
    EngineDep,
    EvidenceServiceDep,
    SettingsDep,
)

__all__ = [
    "PAGE_ENTRIES",
    "SESSION_COOKIE",
    "EntryId",
    "Pages",
    "PagesDep",
    "Viewer",
    "WorkspaceId",
]

SESSION_COOKIE: Final = "tlp_ui_session"
CSRF_HEADER: Final = "X-CSRF-Token"
PAGE_ENTRIES: Final = 200
"""Entries in the first view; more come a page at a time (keyset), never all at once."""
_ACTOR_PREFIX: Final = "ui:"
EntryId = Annotated[int, Path(ge=1, le=2**63 - 1)]
WorkspaceId = Annotated[str, Path(min_length=1, max_length=128)]

log = get_logger("timeline_pipeline.ui")


@dataclass(frozen=True, slots=True)
class Viewer:
    session_id: str
    workspace_id: str
    csrf: str

    @property
    def actor(self) -> str:
        """Who a change is recorded as made by: the session, never the person."""
        return _ACTOR_PREFIX + self.session_id


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
        form = await same_origin_form(request, workspace_id)
        presented = request.headers.get(CSRF_HEADER) or form.get("csrf_token")
        secret = request.cookies.get(SESSION_COOKIE, "")
        if not csrf_valid(secret, presented):
            log.warning("ui.csrf_refused", reason="token", workspace_id=workspace_id)
            raise Refusal(403, "Refused", "This form has expired: reload the page and try again.")
        return viewer, form

    async def change(
        self,
        request: Request,
        workspace_id: str,
        apply: Callable[[Viewer, dict[str, str]], Response],
    ) -> Response:
        """A state-changing request: `apply` runs in the thread pool (blocking database calls)
        with the viewer and the form, once `guarded_form` has passed; a refusal before that is
        answered with the message page, and nothing changes."""
        try:
            viewer, form = await self.guarded_form(request, workspace_id)
        except Refusal as refusal:
            return message_page(refusal)
        return await run_in_threadpool(apply, viewer, form)

    # --- reads ---

    def viewer_and_entry(
        self, request: Request, workspace_id: str, entry_id: int
    ) -> tuple[Viewer, EntryView]:
        """The viewer and the entry it asks for (Refusal 404 when there is no such entry)."""
        viewer = self.require_viewer(request, workspace_id)
        try:
            return viewer, self.service.entry(workspace_id, entry_id)
        except EntryNotFound:
            raise ENTRY_NOT_FOUND from None

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

    # --- fragments ---

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
        return html(body, status)

    def edit_form_response(
        self,
        viewer: Viewer,
        view: EntryView,
        *,
        error: str | None = None,
        typed: dict[str, str] | None = None,
        status: int = 200,
    ) -> HTMLResponse:
        """An entry's edit form: empty, or refused with what was typed in it."""
        body = render(
            "_entry_edit.html",
            workspace_id=view.workspace_id,
            card=entry_card(view),
            csrf=viewer.csrf,
            categories=category_options(),
            limits={"title": TITLE_MAX_CHARS, "detail": DETAIL_MAX_CHARS},
            error=error,
            typed=typed or {},
        )
        return html(body, status)

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
        return html(body, status)

    # --- after a change ---

    def refused_change(
        self,
        request: Request,
        workspace_id: str,
        entry_id: int,
        viewer: Viewer,
        error: Refused,
    ) -> Response:
        if isinstance(error, EntryNotFound):
            return message_page(ENTRY_NOT_FOUND)
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
        if not is_htmx(request):
            return message_page(Refusal(code, "Not saved", alert))
        return self.entry_response(viewer, current, alert=alert, status=code)

    def after_change(
        self, request: Request, workspace_id: str, viewer: Viewer, view: EntryView, said: str
    ) -> Response:
        if not is_htmx(request):
            return to_page(workspace_id)
        return announced(self.entry_response(viewer, view), said)


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
