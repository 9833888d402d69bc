"""Callbacks built the way Lark builds them, through the simulator's own builders and signer.

Times are fixed (NOW) and the receiver under test is given the same clock, so that signatures,
timestamp skew and workspace age are deterministic.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from timeline_pipeline.lark.simulator.events import (
    EventIdentity,
    card_action_event,
    message_recalled_event,
    message_receive_event,
    url_verification_event,
)
from timeline_pipeline.lark.simulator.signing import SignedRequest, sign_payload

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
WORKSPACE_CREATED = NOW - timedelta(hours=1)
TOKEN = "vt-test-token"
ENCRYPT_KEY = "ek-test-key"
APP_ID = "cli_test_app"
CHAT = "oc_incident"
ALICE = "ou_alice"
IDENTITY = EventIdentity(app_id=APP_ID, verification_token=TOKEN)


def millis(moment: datetime) -> str:
    return str(int(moment.timestamp() * 1000))


def list_item(
    message_id: str = "om_1",
    text: str = "db primary is down",
    *,
    chat_id: str = CHAT,
    at: datetime = NOW - timedelta(minutes=10),
    updated: datetime | None = None,
    sender: str = ALICE,
    sender_type: str = "user",
    msg_type: str = "text",
    content: str | None = None,
) -> dict[str, Any]:
    """A history-list item; the event builder derives the callback from it, as Lark would."""
    return {
        "message_id": message_id,
        "chat_id": chat_id,
        "msg_type": msg_type,
        "create_time": millis(at),
        "update_time": millis(updated or at),
        "sender": {"id": sender, "id_type": "open_id", "sender_type": sender_type},
        "body": {"content": content if content is not None else json.dumps({"text": text})},
        "mentions": [],
    }


def receive(
    message_id: str = "om_1",
    text: str = "db primary is down",
    *,
    event_id: str | None = None,
    chat_type: str = "group",
    **item: Any,
) -> dict[str, Any]:
    return message_receive_event(
        list_item(message_id, text, **item), IDENTITY, event_id=event_id, chat_type=chat_type
    )


def recall(
    message_id: str = "om_1",
    *,
    chat_id: str = CHAT,
    at: datetime = NOW - timedelta(minutes=1),
    event_id: str | None = None,
) -> dict[str, Any]:
    return message_recalled_event(
        message_id, chat_id, IDENTITY, recall_time_ms=int(at.timestamp() * 1000), event_id=event_id
    )


def card_click(event_id: str | None = None) -> dict[str, Any]:
    return card_action_event(
        IDENTITY,
        operator_open_id=ALICE,
        open_message_id="om_card",
        open_chat_id=CHAT,
        action_value={"action": "confirm"},
        event_id=event_id,
    )


def challenge(value: str = "challenge-123", token: str = TOKEN) -> dict[str, Any]:
    return url_verification_event(value, token)


@dataclass(frozen=True)
class Signing:
    """How to sign: the receiver's key by default, the fixed clock's time, a fixed nonce."""

    encrypt_key: str | None = ENCRYPT_KEY
    encrypt_body: bool | None = None
    timestamp: str = str(int(NOW.timestamp()))
    nonce: str = "nonce-0123456789"


DEFAULT_SIGNING = Signing()


def sign(payload: dict[str, Any], signing: Signing = DEFAULT_SIGNING) -> SignedRequest:
    return sign_payload(
        payload,
        encrypt_key=signing.encrypt_key,
        encrypt_body=signing.encrypt_body,
        timestamp=signing.timestamp,
        nonce=signing.nonce,
    )
