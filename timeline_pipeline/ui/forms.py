"""The forms the timeline page posts (docs/timeline-page.md): read only when they come from the
page's own origin, bounded, strictly UTF-8; and the flags every cookie of the page carries."""

from typing import Any, Final
from urllib.parse import parse_qs

from fastapi import Request

from timeline_pipeline.curation.rules import SUMMARY_MAX_CHARS
from timeline_pipeline.observability.logs import get_logger
from timeline_pipeline.security.credentials import expected_origin, same_origin, secure_request
from timeline_pipeline.ui.language import N_
from timeline_pipeline.ui.responses import Refusal
from timeline_pipeline.web.body import BodyTooLarge, read_bounded_body

__all__ = ["MAX_FORM_BYTES", "cookie_flags", "form_int", "same_origin_form"]

MAX_FORM_BYTES: Final = SUMMARY_MAX_CHARS * 9 + 16 * 1024
"""A form with the longest summary, every character percent-encoded UTF-8, plus the rest."""

log = get_logger("timeline_pipeline.ui")


async def same_origin_form(request: Request, workspace_id: str | None) -> dict[str, str]:
    """The form of a POST that came from the page's own origin (else Refusal 403)."""
    headers = request.headers
    origin = expected_origin(
        request.url.scheme, headers.get("host"), headers.get("x-forwarded-proto")
    )
    if not same_origin(headers.get("origin"), headers.get("referer"), origin):
        log.warning("ui.csrf_refused", reason="origin", workspace_id=workspace_id)
        raise Refusal(403, N_("Refused"), N_("This request did not come from the timeline page."))
    try:
        body = await read_bounded_body(request, MAX_FORM_BYTES)
    except BodyTooLarge:
        raise Refusal(413, N_("Too large"), N_("The form is larger than any valid one.")) from None
    return _parse_form(body)


def cookie_flags(request: Request) -> dict[str, Any]:
    """The flags every cookie of the page is set and deleted with (a deletion without them is
    a different cookie to some browsers, and leaves the session's cookie in place)."""
    return {
        "secure": secure_request(request.url.scheme, request.headers.get("x-forwarded-proto")),
        "httponly": True,
        "samesite": "strict",
    }


def form_int(value: str | None) -> int | None:
    """A form's whole number (a revision), or None for anything else."""
    if value is None or not value.strip().isdigit() or len(value) > 12:
        return None
    return int(value)


def _parse_form(body: bytes) -> dict[str, str]:
    """An urlencoded form, first value of each field; Refusal 400 unless it is UTF-8 text
    (a percent-encoded lone surrogate included), so no field is ever guessed at."""
    try:
        parsed = parse_qs(
            body.decode("utf-8"), keep_blank_values=True, max_num_fields=50, errors="strict"
        )
    except (UnicodeDecodeError, ValueError):
        raise Refusal(400, N_("Bad request"), N_("The form is not valid UTF-8 text.")) from None
    return {key: values[0] for key, values in parsed.items() if values}
