"""What the timeline page's routers share (docs/timeline-page.md): who is asking, the reads
behind the page and its fragments, and the answers after a change.

Every request of a workspace needs that workspace's session (401 without one, 403 for another
workspace, with nothing of the page). Every POST also needs the session's CSRF token and the
page's own origin (`guarded_form`).

Everything is shown in the workspace's language and zone (docs/i18n.md): its `Presentation` is
read once per request (`presentation`, through `PageAccess`), and only when something is
rendered, so a poll answered "no change" reads nothing more. A message page shown before a
viewer of the workspace is known follows the browser's language instead (`speaking`).

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
from timeline_pipeline.i18n.locales import Presentation
from timeline_pipeline.i18n.times import spans_days
from timeline_pipeline.observability.logs import get_logger
from timeline_pipeline.security.credentials import csrf_token, csrf_valid
from timeline_pipeline.settings import Settings
from timeline_pipeline.store.workspaces import WorkspaceNotFound
from timeline_pipeline.ui.access import PageAccess
from timeline_pipeline.ui.forms import same_origin_form
from timeline_pipeline.ui.language import N_, browser_presentation, page_text
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
    "DATED",
    "PAGE_ENTRIES",
    "SESSION_COOKIE",
    "EntryId",
    "Pages",
    "PagesDep",
    "Viewer",
    "WorkspaceId",
    "asks_dated",
]

SESSION_COOKIE: Final = "tlp_ui_session"
CSRF_HEADER: Final = "X-CSRF-Token"
PAGE_ENTRIES: Final = 200
"""Entries in the first view; more come a page at a time (keyset), never all at once."""
DATED: Final = "dated"
"""The query parameter or form field (`1`) by which the page asks for an entry's fragment with
its date, as the list it sits in shows its times (the list's entries span local days)."""
_ACTOR_PREFIX: Final = "ui:"
EntryId = Annotated[int, Path(ge=1, le=2**63 - 1)]
WorkspaceId = Annotated[str, Path(min_length=1, max_length=128)]

log = get_logger("timeline_pipeline.ui")


def asks_dated(value: str | None) -> bool:
    """Whether a request's `dated` parameter or field asks for dates (`1`)."""
    return value == "1"


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
        self._presentations: dict[str, Presentation] = {}
        self._signed_in_to: str | None = None
        """The workspace of the viewer this request was admitted for (set by `require_viewer`)."""

    # --- how it is said ---

    def presentation(self, workspace_id: str) -> Presentation:
        """The workspace's language and zone, read once per request; a workspace that is gone
        (its own routes answer that) is shown as the default."""
        found = self._presentations.get(workspace_id)
        if found is None:
            try:
                found = self.access.presentation(workspace_id)
            except WorkspaceNotFound:
                found = Presentation.default()
            self._presentations[workspace_id] = found
        return found

    def speaking(self, request: Request) -> Presentation:
        """The language of a message page: the workspace's once its viewer is admitted, else
        the browser's (nothing of a workspace is shown to someone not admitted to it)."""
        if self._signed_in_to is not None:
            return self.presentation(self._signed_in_to)
        return browser_presentation(request.headers.get("accept-language"))

    def refused(self, request: Request, refusal: Refusal) -> HTMLResponse:
        """The message page of a refusal, in `speaking`'s language."""
        return message_page(refusal, self.speaking(request))

    def render(self, workspace_id: str, template: str, /, **context: Any) -> str:
        """`template` in the workspace's language and zone (the context may name the workspace
        too: the page's URLs do)."""
        return render(template, self.presentation(workspace_id), **context)

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
                N_("Sign in to see this timeline"),
                N_(
                    "Your session has ended or was never started. Ask for a sign-in link with "
                    "`timeline-pipeline ui link --workspace <id>` and open it in this browser."
                ),
            )
        viewer, _secret = found
        if viewer.workspace_id != workspace_id:
            raise Refusal(
                403,
                N_("Not your workspace"),
                N_(
                    "This session is for another workspace. Ask for a sign-in link of the "
                    "workspace you want to see."
                ),
            )
        self._signed_in_to = workspace_id
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
            raise Refusal(
                403, N_("Refused"), N_("This form has expired: reload the page and try again.")
            )
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
            return await run_in_threadpool(self.refused, request, refusal)
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

    def region_version(self, view: TimelineOutline, filters: Filters) -> str:
        """The listing's version (what a poll compares), without reading anything more."""
        summary_revision = view.summary.revision if view.summary else None
        return timeline_version(
            [(e.id, e.revision) for e in view.entries], summary_revision, filters
        )

    def region_context(
        self,
        viewer: Viewer,
        view: TimelineOutline,
        filters: Filters,
        shown: int,
        *,
        after: datetime | None = None,
    ) -> dict[str, Any]:
        """What the entry list shows. Its times carry their dates when its entries (and for a
        further page, the entry `after` which it follows) span more than one local day."""
        presentation = self.presentation(view.workspace_id)
        moments = [e.occurred_at for e in view.entries]
        dated = spans_days([*moments, *([after] if after else [])], presentation.time_zone)
        cards = [entry_card(e, presentation, dated=dated) for e in view.entries]
        version = self.region_version(view, filters)
        query = filters.query()
        poll_query = urlencode([*query, ("version", version), ("limit", str(shown))])
        more = None
        if view.next_after is not None:
            cursor = self.cursors.encode("ui-entries", view.workspace_id, *view.next_after)
            more = urlencode([*query, ("after", cursor)])
        return {
            "workspace_id": view.workspace_id,
            "cards": cards,
            "dated": dated,
            "version": version,
            "poll_query": poll_query,
            "more_query": more,
            "csrf": viewer.csrf,
            "filters": filters,
            "poll_seconds": self.poll_seconds,
        }

    # --- fragments ---

    def entry_response(
        self,
        viewer: Viewer,
        view: EntryView,
        *,
        dated: bool,
        alert: str | None = None,
        status: int = 200,
    ) -> HTMLResponse:
        return self._entry_fragment("_entry.html", viewer, view, dated, status, alert=alert)

    def edit_form_response(
        self,
        viewer: Viewer,
        view: EntryView,
        *,
        dated: bool,
        error: str | None = None,
        typed: dict[str, str] | None = None,
        status: int = 200,
    ) -> HTMLResponse:
        """An entry's edit form: empty, or refused with what was typed in it."""
        return self._entry_fragment(
            "_entry_edit.html",
            viewer,
            view,
            dated,
            status,
            categories=category_options(self.presentation(view.workspace_id).locale),
            limits={"title": TITLE_MAX_CHARS, "detail": DETAIL_MAX_CHARS},
            error=error,
            typed=typed or {},
        )

    def _entry_fragment(
        self,
        template: str,
        viewer: Viewer,
        view: EntryView,
        dated: bool,
        status: int,
        /,
        **context: Any,
    ) -> HTMLResponse:
        """One entry's fragment (its card or its edit form), for the viewer: the card in the
        workspace's language and zone, dated when the list spans local days."""
        card = entry_card(view, self.presentation(view.workspace_id), dated=dated)
        body = self.render(
            view.workspace_id,
            template,
            workspace_id=view.workspace_id,
            card=card,
            dated=dated,
            csrf=viewer.csrf,
            **context,
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
        body = self.render(
            workspace_id,
            "_summary.html",
            workspace_id=workspace_id,
            summary=summary_panel(view, self.presentation(workspace_id)),
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
        *,
        dated: bool,
    ) -> Response:
        if isinstance(error, EntryNotFound):
            return self.refused(request, ENTRY_NOT_FOUND)
        text = page_text(self.presentation(workspace_id).locale)
        if isinstance(error, StaleRevision | InvalidTransition):
            message = N_(
                "Not saved: this entry was changed by someone else since you loaded it. "
                "It now shows the current version; review it and try again."
            )
            code = 409
        else:
            message = N_("Not saved: {reason}.")
            code = 422
        current = self.service.entry(workspace_id, entry_id)
        if not is_htmx(request):
            return self.refused(request, Refusal(code, N_("Not saved"), message, reason=str(error)))
        alert = text.gettext(message).format(reason=str(error))
        return self.entry_response(viewer, current, dated=dated, alert=alert, status=code)

    def after_change(
        self,
        request: Request,
        workspace_id: str,
        viewer: Viewer,
        view: EntryView,
        said: str,
        *,
        dated: bool,
    ) -> Response:
        """The entry as it now is, and `said` (already in the workspace's language) for the
        page's live region; a plain form post goes back to the page."""
        if not is_htmx(request):
            return to_page(workspace_id)
        return announced(self.entry_response(viewer, view, dated=dated), said)


def get_pages(
    curation: CurationServiceDep,
    evidence: EvidenceServiceDep,
    cursors: CursorsDep,
    settings: SettingsDep,
    engine: EngineDep,
) -> Pages:
    access = PageAccess(
        engine,
        session_ttl=settings.timeline.ui_session_ttl,
        clock=curation.clock,
        settings=settings.timeline,
    )
    return Pages(curation, evidence, access, cursors, settings)


PagesDep = Annotated[Pages, Depends(get_pages)]
