"""Signing in and out of the timeline page (docs/timeline-page.md).

* `GET /ui/sign-in?token=...`: the page a one-time link from `timeline-pipeline ui link` opens,
  with one "Sign in" button; it spends nothing, so a chat's link preview fetching the link does
  not use it up.
* `POST /ui/sign-in` (the button: same origin, and the CSRF token bound to a cookie the GET
  set) redeems the link, sets the session cookie and sends the browser on to the workspace's
  page.
* `POST /ui/sign-out` ends the session.

A working link's page speaks its workspace's language (the link names the workspace, and its
page already shows the workspace's id); a refusal, before anyone is signed in, the browser's
(docs/i18n.md).

No `from __future__ import annotations`: FastAPI reads the handlers' annotations.
"""

from typing import Annotated, Final

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import RedirectResponse
from starlette.concurrency import run_in_threadpool

from timeline_pipeline.observability.logs import get_logger
from timeline_pipeline.security.credentials import csrf_token, csrf_valid, new_secret
from timeline_pipeline.ui.forms import cookie_flags, same_origin_form
from timeline_pipeline.ui.language import N_
from timeline_pipeline.ui.pages import SESSION_COOKIE, PagesDep
from timeline_pipeline.ui.responses import SECURITY_HEADERS, UI_PREFIX, Refusal, html

__all__ = ["router"]

SIGN_IN_COOKIE: Final = "tlp_ui_sign_in"
SIGN_IN_PATH: Final = f"{UI_PREFIX}/sign-in"
_LINK_REFUSED: Final = Refusal(
    403,
    N_("This sign-in link does not work"),
    N_(
        "It has expired or was already used: a link works once, within 10 minutes. "
        "Ask for a new one with `timeline-pipeline ui link --workspace <id>`."
    ),
)

log = get_logger("timeline_pipeline.ui")

router = APIRouter()


@router.get("/sign-in")
def sign_in_page(
    ui: PagesDep, request: Request, token: Annotated[str, Query(max_length=200)] = ""
) -> Response:
    """The link's page: one button that signs in. Opening it spends nothing."""
    workspace_id = ui.access.link_workspace(token)
    if workspace_id is None:
        log.info("ui.sign_in_refused", step="open")
        return ui.refused(request, _LINK_REFUSED)
    nonce = new_secret()
    response = html(
        ui.render(
            workspace_id,
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
        SIGN_IN_COOKIE, nonce, max_age=600, path=SIGN_IN_PATH, **cookie_flags(request)
    )
    return response


@router.post("/sign-in")
async def sign_in(ui: PagesDep, request: Request) -> Response:
    """The button: redeems the link once, from the link's own page only (same origin, and the
    CSRF token of the cookie that page set), so no other site can sign a browser in."""
    try:
        form = await same_origin_form(request, None)
    except Refusal as refusal:
        return ui.refused(request, refusal)
    if not csrf_valid(request.cookies.get(SIGN_IN_COOKIE, ""), form.get("csrf_token")):
        log.warning("ui.csrf_refused", reason="sign_in_token")
        return ui.refused(
            request,
            Refusal(403, N_("Refused"), N_("This sign-in page has expired: open the link again.")),
        )
    issued = await run_in_threadpool(ui.access.redeem, form.get("token", "")[:200])
    if issued is None:
        log.info("ui.sign_in_refused", step="redeem")
        return ui.refused(request, _LINK_REFUSED)
    log.info("ui.signed_in", workspace_id=issued.workspace_id, session_id=issued.id)
    # A same-origin POST, so the redirect is same-site and the Strict cookie goes with it.
    response = RedirectResponse(
        f"{UI_PREFIX}/workspaces/{issued.workspace_id}", status_code=303, headers=SECURITY_HEADERS
    )
    flags = cookie_flags(request)
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
            return await run_in_threadpool(ui.refused, request, refusal)

        await run_in_threadpool(ui.access.sign_out, found[1])
    signed_out = Refusal(
        200, N_("Signed out"), N_("You are signed out. Open a new sign-in link to return.")
    )
    response = await run_in_threadpool(ui.refused, request, signed_out)
    response.delete_cookie(SESSION_COOKIE, path=UI_PREFIX, **cookie_flags(request))
    return response
