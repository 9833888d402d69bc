"""Lark's event-callback signing and encryption, reproduced exactly.

Signature: sha256(timestamp + nonce + encrypt_key + raw_body).hexdigest() in X-Lark-Signature.
Encryption: `{"encrypt": base64(iv + AES-256-CBC(PKCS7(plaintext)))}` with key sha256(encrypt_key).
Round-tripping through lark-oapi's own dispatcher (see the tests) is what proves these match.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from Crypto.Cipher import AES
from Crypto.Util.Padding import pad

HEADER_TIMESTAMP: Final = "X-Lark-Request-Timestamp"
HEADER_NONCE: Final = "X-Lark-Request-Nonce"
HEADER_SIGNATURE: Final = "X-Lark-Signature"


@dataclass(frozen=True)
class SignedRequest:
    """The exact bytes and headers to POST; the signature covers these bytes and nothing else."""

    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


def signature(timestamp: str, nonce: str, encrypt_key: str, body: bytes) -> str:
    return hashlib.sha256((timestamp + nonce + encrypt_key).encode() + body).hexdigest()


def encrypt(plaintext: bytes, encrypt_key: str, *, iv: bytes | None = None) -> str:
    key = hashlib.sha256(encrypt_key.encode()).digest()
    iv = iv or secrets.token_bytes(AES.block_size)
    cipher = AES.new(key, AES.MODE_CBC, iv)
    return base64.b64encode(iv + cipher.encrypt(pad(plaintext, AES.block_size))).decode()


def sign_payload(
    payload: Mapping[str, Any],
    *,
    encrypt_key: str | None,
    encrypt_body: bool | None = None,
    timestamp: str | None = None,
    nonce: str | None = None,
) -> SignedRequest:
    """Serialize, optionally encrypt, and sign one callback as Lark would send it.

    With an encrypt key Lark both encrypts and signs; `encrypt_body=False` keeps the body plain
    (still signed) to exercise the receiver's plaintext path.
    """
    raw = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
    if encrypt_key and (encrypt_body is None or encrypt_body):
        raw = json.dumps({"encrypt": encrypt(raw, encrypt_key)}).encode()
    timestamp = timestamp or str(int(time.time()))
    nonce = nonce or secrets.token_hex(8)
    headers = {
        "Content-Type": "application/json; charset=utf-8",
        HEADER_TIMESTAMP: timestamp,
        HEADER_NONCE: nonce,
    }
    if encrypt_key:
        headers[HEADER_SIGNATURE] = signature(timestamp, nonce, encrypt_key, raw)
    return SignedRequest(raw, headers)
