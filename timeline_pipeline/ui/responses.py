"""What every answer of the timeline page is sent with (docs/timeline-page.md): the security
headers, the message page that answers a refusal with nothing of the workspace, and the htmx
headers that tell the page to announce a change."""

import json
from collections.abc import Mapping
from typing import Final

from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse

from timeline_pipeline.ui.templating import render

__all__ = [
    "BAD_LINK",
    "ENTRY_NOT_FOUND",
    "SECURITY_HEADERS",
    "UI_PREFIX",
    "Refusal",
    "announced",
    "html",
    "is_htmx",
    "message_page",
    "to_page",
]

UI_PREFIX: Final = "/ui"
_CSP: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS: Final = {
    "Content-Security-Policy": _CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
}


class Refusal(Exception):
    """A request the page answers with a message and nothing of the workspace."""

    def __init__(self, status: int, title: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.title = title
        self.message = message


ENTRY_NOT_FOUND: Final = Refusal(404, "Not found", "This entry does not exist.")
BAD_LINK: Final = Refusal(400, "Bad request", "This link is not valid.")


def html(body: str, status: int = 200, headers: Mapping[str, str] | None = None) -> HTMLResponse:
    return HTMLResponse(body, status_code=status, headers={**SECURITY_HEADERS, **(headers or {})})


def message_page(refusal: Refusal) -> HTMLResponse:
    return html(
        render("message.html", title=refusal.title, message=refusal.message), refusal.status
    )


def is_htmx(request: Request) -> bool:
    return request.headers.get("hx-request") == "true"


def announced(response: HTMLResponse, text: str) -> HTMLResponse:
    """`response`, with a header that makes the page say `text` in its live region (ui.js)."""
    response.headers.update({"HX-Trigger": json.dumps({"ui:announce": text})})
    return response


def to_page(workspace_id: str) -> RedirectResponse:
    """Where a change made without htmx (a plain form post) sends the browser back to."""
    return RedirectResponse(f"{UI_PREFIX}/workspaces/{workspace_id}", status_code=303)
