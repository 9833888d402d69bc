"""The timeline page's credentials and request checks, as pure functions (docs/timeline-page.md):
secret minting and hashing, the per-session CSRF token, the same-origin check, and
whether a cookie must be `Secure`.

The CSRF token is derived from the session secret with HMAC, so it needs no storage and cannot
be computed by anyone who does not hold the cookie; a state-changing request must carry it (a
header or a form field) and come from the page's own origin.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Final
from urllib.parse import urlsplit

__all__ = [
    "csrf_token",
    "csrf_valid",
    "expected_origin",
    "hash_secret",
    "new_secret",
    "same_origin",
    "secure_request",
]

_CSRF_CONTEXT: Final = b"timeline-pipeline ui csrf v1"


def new_secret() -> str:
    """256 random bits, URL-safe: a link token or a session cookie value."""
    return secrets.token_urlsafe(32)


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def csrf_token(session_secret: str) -> str:
    return hmac.new(session_secret.encode("utf-8"), _CSRF_CONTEXT, hashlib.sha256).hexdigest()


def csrf_valid(session_secret: str, presented: str | None) -> bool:
    if not presented or len(presented) > 128:
        return False
    return hmac.compare_digest(csrf_token(session_secret), presented)


def secure_request(scheme: str, forwarded_proto: str | None) -> bool:
    """Whether the browser reached us over https, directly or through a proxy that says so."""
    if forwarded_proto:
        return forwarded_proto.split(",")[0].strip().lower() == "https"
    return scheme.lower() == "https"


def expected_origin(scheme: str, host: str | None, forwarded_proto: str | None) -> str | None:
    """The origin the page was served from, as a browser writes it in `Origin`."""
    if not host:
        return None
    proto = "https" if secure_request(scheme, forwarded_proto) else "http"
    return f"{proto}://{host.strip().lower()}"


def _origin_of(url: str) -> str | None:
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        return None
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def same_origin(origin: str | None, referer: str | None, expected: str | None) -> bool:
    """True when the request names the page's own origin in `Origin` (or, when a browser left
    `Origin` out altogether, in `Referer`). A request naming neither is refused: every browser
    that runs the page sends `Origin` on a POST. `Origin: null` (a sandboxed frame, a `data:`
    document, a cross-origin redirect) is an origin that is not ours, whatever the `Referer`
    says: that header is the sender's to write."""
    if expected is None:
        return False
    if origin is not None:
        return origin.strip().lower() == expected
    if referer:
        return _origin_of(referer) == expected
    return False
