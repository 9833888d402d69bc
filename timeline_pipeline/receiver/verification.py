"""Is this callback from Lark, fresh, and readable? Each "no" gets its own reason code.

lark-oapi's dispatcher performs the same checks but answers every failure with a 500, which
Lark treats as "try again" and which tells an operator nothing. So the checks run here, with
lark-oapi's `AESCipher` for decryption and its header names; the tests hold this module to the
dispatcher's verdicts (what it accepts we accept, what it refuses we refuse with a 4xx).

Order matters for safety. When an encrypt key is set, Lark signs every callback:
sha256(timestamp + nonce + encrypt_key + raw_body). The signature and the timestamp (a stale
one is a replay) are checked on the raw bytes *before* decrypting, so an attacker never learns
whether a forged ciphertext had valid padding. An unsigned request may only be the
url_verification handshake (the SDK does not require a signature for it), and every failure on
that path is reported uniformly as `missing_signature` for the same reason.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from lark_oapi.core.const import LARK_REQUEST_NONCE, LARK_REQUEST_SIGNATURE, LARK_REQUEST_TIMESTAMP
from lark_oapi.core.utils import AESCipher

from timeline_pipeline.receiver.event_types import URL_VERIFICATION
from timeline_pipeline.receiver.outcomes import Reason, Rejected

SCHEMA_V2: Final = "2.0"
_MAX_TIMESTAMP_DIGITS: Final = 12


@dataclass(frozen=True)
class Credentials:
    """The subscription's secrets. The verification token is required: without it any host
    that can reach the port could post events."""

    verification_token: str
    encrypt_key: str = ""

    def __post_init__(self) -> None:
        if not self.verification_token:
            raise ValueError("LARK_VERIFICATION_TOKEN must be set for the event receiver")


@dataclass(frozen=True)
class LarkHeaders:
    """The three signing headers, read case-insensitively (ASGI lower-cases header names)."""

    timestamp: str | None = None
    nonce: str | None = None
    signature: str | None = None

    @classmethod
    def from_mapping(cls, headers: Mapping[str, str]) -> LarkHeaders:
        lowered = {key.lower(): value for key, value in headers.items()}
        return cls(
            lowered.get(LARK_REQUEST_TIMESTAMP.lower()),
            lowered.get(LARK_REQUEST_NONCE.lower()),
            lowered.get(LARK_REQUEST_SIGNATURE.lower()),
        )

    @property
    def signed(self) -> bool:
        return None not in (self.timestamp, self.nonce, self.signature)

    def canonical(self) -> dict[str, str]:
        """Exact-case names, as lark-oapi looks them up."""
        pairs = (
            (LARK_REQUEST_TIMESTAMP, self.timestamp),
            (LARK_REQUEST_NONCE, self.nonce),
            (LARK_REQUEST_SIGNATURE, self.signature),
        )
        return {name: value for name, value in pairs if value is not None}


@dataclass(frozen=True)
class VerifiedCallback:
    """An authentic callback, decrypted and parsed."""

    payload: dict[str, Any]
    event_type: str
    event_id: str | None
    """None only for url_verification, which has no header."""
    challenge: str | None = None

    @property
    def is_url_verification(self) -> bool:
        return self.event_type == URL_VERIFICATION


def lark_signature(timestamp: str, nonce: str, encrypt_key: str, body: bytes) -> str:
    return hashlib.sha256((timestamp + nonce + encrypt_key).encode() + body).hexdigest()


def _same(expected: str, given: object) -> bool:
    if not isinstance(given, str) or not given:
        return False
    return hmac.compare_digest(expected.encode(), given.encode())


class CallbackVerifier:
    def __init__(
        self,
        credentials: Credentials,
        *,
        max_skew: timedelta,
        clock: Callable[[], datetime],
    ) -> None:
        self._credentials = credentials
        self._cipher = AESCipher(credentials.encrypt_key) if credentials.encrypt_key else None
        self._max_skew = max_skew.total_seconds()
        self._clock = clock

    def verify(self, body: bytes, headers: LarkHeaders) -> VerifiedCallback:
        """Return the verified callback or raise Rejected with a 4xx status and reason."""
        if self._cipher is None:
            return self._verify_plain(body, headers)
        if headers.signed:
            self._check_timestamp(headers.timestamp)
            self._check_signature(body, headers)
            return self._open(body)
        try:
            verified = self._open(body)
        except Rejected:
            raise Rejected(401, Reason.MISSING_SIGNATURE) from None
        if not verified.is_url_verification:
            raise Rejected(401, Reason.MISSING_SIGNATURE)
        return verified

    def _verify_plain(self, body: bytes, headers: LarkHeaders) -> VerifiedCallback:
        # Without an encrypt key nothing is signed; a present timestamp still filters naive replays.
        if headers.timestamp is not None:
            self._check_timestamp(headers.timestamp)
        return self._open(body)

    def _check_timestamp(self, raw: str | None) -> None:
        digits = raw is not None and raw.isascii() and raw.isdigit()
        if raw is None or not digits or len(raw) > _MAX_TIMESTAMP_DIGITS:
            raise Rejected(401, Reason.BAD_TIMESTAMP)
        if abs(self._clock().timestamp() - int(raw)) > self._max_skew:
            raise Rejected(401, Reason.STALE_TIMESTAMP)

    def _check_signature(self, body: bytes, headers: LarkHeaders) -> None:
        expected = lark_signature(
            headers.timestamp or "", headers.nonce or "", self._credentials.encrypt_key, body
        )
        if not _same(expected, headers.signature):
            raise Rejected(401, Reason.BAD_SIGNATURE)

    def _open(self, body: bytes) -> VerifiedCallback:
        outer = _parse_object(body)
        payload = _parse_object(self._decrypt(outer["encrypt"])) if "encrypt" in outer else outer
        if payload.get("type") == URL_VERIFICATION:
            return self._url_verification(payload)
        return self._event(payload)

    def _decrypt(self, encrypted: object) -> str:
        """The plaintext as the cipher decoded it (UTF-8): parsed as it is, not re-encoded."""
        if self._cipher is None or not isinstance(encrypted, str) or not encrypted:
            raise Rejected(400, Reason.UNDECRYPTABLE)
        try:
            text: str = self._cipher.decrypt_str(encrypted)
        except (ValueError, TypeError):  # base64, length, padding, UTF-8
            raise Rejected(400, Reason.UNDECRYPTABLE) from None
        # `json.loads` of the UTF-8 bytes would skip one leading byte-order mark; so does this.
        return text.removeprefix("\ufeff")

    def _url_verification(self, payload: dict[str, Any]) -> VerifiedCallback:
        if not _same(self._credentials.verification_token, payload.get("token")):
            raise Rejected(401, Reason.BAD_TOKEN)
        challenge = payload.get("challenge")
        if not isinstance(challenge, str):
            raise Rejected(400, Reason.BAD_CHALLENGE)
        return VerifiedCallback(payload, URL_VERIFICATION, None, challenge)

    def _event(self, payload: dict[str, Any]) -> VerifiedCallback:
        header = payload.get("header")
        if payload.get("schema") != SCHEMA_V2 or not isinstance(header, dict):
            raise Rejected(400, Reason.UNSUPPORTED_SCHEMA)
        if not _same(self._credentials.verification_token, header.get("token")):
            raise Rejected(401, Reason.BAD_TOKEN)
        event_id = header.get("event_id")
        if not isinstance(event_id, str) or not event_id:
            raise Rejected(400, Reason.MISSING_EVENT_ID)
        event_type = header.get("event_type")
        if not isinstance(event_type, str) or not event_type:
            raise Rejected(400, Reason.MISSING_EVENT_TYPE)
        if not isinstance(payload.get("event"), dict):
            raise Rejected(400, Reason.MISSING_EVENT)
        return VerifiedCallback(payload, event_type, event_id)


def _parse_object(raw: bytes | str) -> dict[str, Any]:
    try:
        parsed = json.loads(raw)
    except (ValueError, RecursionError):  # includes UnicodeDecodeError
        raise Rejected(400, Reason.MALFORMED_JSON) from None
    if not isinstance(parsed, dict):
        raise Rejected(400, Reason.MALFORMED_JSON)
    return parsed
