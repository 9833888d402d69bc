"""Opaque, tamper-evident page tokens, shaped like Lark's.

A token is a keyset cursor (the last item's create_time and message_id) bound to the query it came
from and signed, so a client that treats tokens as offsets, reuses one for another query or edits
one fails loudly here, as it would against Lark.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass


class PageTokenError(ValueError):
    """The token was not issued by this server for this query."""


@dataclass(frozen=True)
class PageCursor:
    page_number: int
    create_time_ms: int
    message_id: str


def query_fingerprint(*parts: str | None) -> str:
    joined = "\x1f".join(part or "" for part in parts)
    return hashlib.sha256(joined.encode()).hexdigest()[:16]


class PageTokenCodec:
    def __init__(self, secret: bytes | None = None) -> None:
        self._secret = secret or secrets.token_bytes(32)

    def encode(self, cursor: PageCursor, fingerprint: str) -> str:
        payload = json.dumps(
            [1, cursor.page_number, cursor.create_time_ms, cursor.message_id, fingerprint],
            separators=(",", ":"),
        ).encode()
        body = base64.urlsafe_b64encode(payload).decode().rstrip("=")
        return f"{body}.{self._mac(body)}"

    def decode(self, token: str, fingerprint: str) -> PageCursor:
        body, _, mac = token.partition(".")
        if not body or not hmac.compare_digest(mac, self._mac(body)):
            raise PageTokenError("page_token is invalid")
        try:
            payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
            version, page, created, message_id, bound_to = payload
        except (ValueError, TypeError):
            raise PageTokenError("page_token is invalid") from None
        if version != 1 or bound_to != fingerprint:
            raise PageTokenError("page_token does not belong to this query")
        return PageCursor(int(page), int(created), str(message_id))

    def _mac(self, body: str) -> str:
        return hmac.new(self._secret, body.encode(), hashlib.sha256).hexdigest()[:24]
