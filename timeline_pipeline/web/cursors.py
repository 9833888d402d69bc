"""Opaque keyset cursors: signed, bound to one workspace and one listing. Pure.

A cursor carries the (occurred_at, id) of the last row a page returned. It is signed with
HMAC-SHA256 over the listing, the workspace and that position, so a client cannot forge a
position, and a cursor minted for another workspace (or the other listing) fails the check
outright: it is a 400, never a page of someone else's keyset. Positions keep microseconds, the
precision both databases store, so a timestamp read back and reused as the bound is exact.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from datetime import UTC, datetime, timedelta

__all__ = ["CursorCodec", "InvalidCursor", "cursor_secret"]

MAX_CURSOR_CHARS = 200
_MAC_BYTES = 16
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MAX_ID = 2**63 - 1


class InvalidCursor(ValueError):
    """Malformed, forged, expired by a key change, or minted for another workspace."""


def cursor_secret(configured: str) -> bytes:
    """The signing key: TIMELINE_API_CURSOR_SECRET when set (several `serve` processes behind
    one balancer must share it), else a random key for this process, which makes cursors
    expire at restart (a client then starts the listing again)."""
    return configured.encode("utf-8") if configured else secrets.token_bytes(32)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class CursorCodec:
    def __init__(self, secret: bytes) -> None:
        if len(secret) < 16:
            raise ValueError("the cursor secret must be at least 16 bytes")
        self._secret = secret

    def _mac(self, listing: str, workspace_id: str, payload: str) -> bytes:
        message = f"{listing}\n{workspace_id}\n{payload}".encode()
        return hmac.new(self._secret, message, hashlib.sha256).digest()[:_MAC_BYTES]

    def encode(self, listing: str, workspace_id: str, occurred_at: datetime, row_id: int) -> str:
        micros = (occurred_at.astimezone(UTC) - _EPOCH) // timedelta(microseconds=1)
        payload = f"{micros}.{row_id}"
        mac = self._mac(listing, workspace_id, payload)
        return f"{_b64(payload.encode('ascii'))}.{_b64(mac)}"

    def decode(self, listing: str, workspace_id: str, cursor: str) -> tuple[datetime, int]:
        if len(cursor) > MAX_CURSOR_CHARS or cursor.count(".") != 1:
            raise InvalidCursor("malformed cursor")
        encoded, signature = cursor.split(".")
        try:
            payload = _unb64(encoded).decode("ascii")
            mac = _unb64(signature)
        except (binascii.Error, ValueError):
            raise InvalidCursor("malformed cursor") from None
        if not hmac.compare_digest(mac, self._mac(listing, workspace_id, payload)):
            raise InvalidCursor("cursor was not issued for this listing of this workspace")
        micros_text, _, id_text = payload.partition(".")
        try:
            micros, row_id = int(micros_text), int(id_text)
            occurred_at = _EPOCH + timedelta(microseconds=micros)
        except (ValueError, OverflowError):
            raise InvalidCursor("malformed cursor") from None
        if not 0 <= row_id <= _MAX_ID:
            raise InvalidCursor("malformed cursor")
        return occurred_at, row_id
