"""Callback tokens: random, shown only to Lark inside a card's button values, stored hashed.

A database reader never learns a usable token; a callback's token is hashed once and looked up.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Final

TOKEN_BYTES: Final = 24
MAX_TOKEN_CHARS: Final = 64


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def card_uuid(window_state_id: int, processor_version: str) -> str:
    """Lark's idempotency key for a card: one per window and processor version, at most 50
    characters, so a retried send or a rerun of the same run posts once."""
    digest = hashlib.sha256(f"review:{window_state_id}:{processor_version}".encode()).hexdigest()
    return f"rc-{digest[:40]}"
