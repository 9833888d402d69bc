"""What every answer of the timeline page is sent with (docs/timeline-page.md): the security
headers, the message page that answers a refusal with nothing of the workspace, and the htmx
headers that tell the page to announce a change.

A refusal carries English msgids of the `page` catalog (and the values of their named
placeholders); the message page shows them in the language of whoever is asking
(docs/i18n.md)."""

import json
from collections.abc import Mapping
from typing import Final

from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse

from timeline_pipeline.i18n.locales import Presentation
from timeline_pipeline.ui.language import N_, page_text
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
    """A request the page answers with a message and nothing of the workspace. `title` and
    `message` are msgids (marked with `N_` where they are written); `values` fill the
    message's named placeholders (`Not saved: {reason}.`)."""

    def __init__(self, status: int, title: str, message: str, **values: str) -> None:
        super().__init__(message)
        self.status = status
        self.title = title
        self.message = message
        self.values = values

    def shown(self, presentation: Presentation) -> tuple[str, str]:
        """(title, message) in the presentation's language."""
        text = page_text(presentation.locale)
        return text.gettext(self.title), text.gettext(self.message).format(**self.values)


ENTRY_NOT_FOUND: Final = Refusal(404, N_("Not found"), N_("This entry does not exist."))
BAD_LINK: Final = Refusal(400, N_("Bad request"), N_("This link is not valid."))


def html(body: str, status: int = 200, headers: Mapping[str, str] | None = None) -> HTMLResponse:
    return HTMLResponse(body, status_code=status, headers={**SECURITY_HEADERS, **(headers or {})})


def message_page(refusal: Refusal, presentation: Presentation) -> HTMLResponse:
    title, message = refusal.shown(presentation)
    return html(render("message.html", presentation, title=title, message=message), refusal.status)


def is_htmx(request: Request) -> bool:
    return request.headers.get("hx-request") == "true"


def announced(response: HTMLResponse, text: str) -> HTMLResponse:
    """`response`, with a header that makes the page say `text` in its live region (ui.js)."""
    response.headers.update({"HX-Trigger": json.dumps({"ui:announce": text})})
    return response


def to_page(workspace_id: str) -> RedirectResponse:
    """Where a change made without htmx (a plain form post) sends the browser back to."""
    return RedirectResponse(f"{UI_PREFIX}/workspaces/{workspace_id}", status_code=303)
