"""Lark schema-2.0 event callbacks built from history list items.

The receiver must cope with the shape differences between the event and the history list
(`message_type` vs `msg_type`, `content` vs `body.content`, mention `id` objects vs strings), so
the builders derive events from the very list items the simulator serves: the same message can
then reach the product by both paths, and the tests check that both produce the same evidence.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from timeline_pipeline.lark.simulator.pusher import (
    EventPusher,
    PushReport,
    event_id_of,
    message_id_of,
)
from timeline_pipeline.lark.simulator.signing import SignedRequest, sign_payload

EVENT_MESSAGE_RECEIVE: Final = "im.message.receive_v1"
EVENT_MESSAGE_RECALLED: Final = "im.message.recalled_v1"
EVENT_CARD_ACTION: Final = "card.action.trigger"
EVENT_REACTION_CREATED: Final = "im.message.reaction.created_v1"
EVENT_REACTION_DELETED: Final = "im.message.reaction.deleted_v1"

__all__ = [
    "EVENT_CARD_ACTION",
    "EVENT_MESSAGE_RECALLED",
    "EVENT_MESSAGE_RECEIVE",
    "EVENT_REACTION_CREATED",
    "EVENT_REACTION_DELETED",
    "EventIdentity",
    "EventPusher",
    "PushReport",
    "SignedRequest",
    "card_action_event",
    "event_id_of",
    "item_recalled_event",
    "message_id_of",
    "message_recalled_event",
    "message_receive_event",
    "reaction_event",
    "sign_payload",
    "url_verification_event",
    "user_ids",
]


@dataclass(frozen=True)
class EventIdentity:
    """Who the events claim to come from and for: the app and the subscription's token."""

    app_id: str = "cli_sim_app"
    tenant_key: str = "sim_tenant"
    verification_token: str = ""


def _now_ms() -> str:
    return str(int(time.time() * 1000))


def user_ids(open_id: str) -> dict[str, str]:
    """Stable union_id/user_id for an open_id, since events carry all three."""
    digest = hashlib.sha256(open_id.encode()).hexdigest()
    return {"open_id": open_id, "union_id": f"on_{digest[:32]}", "user_id": digest[:8]}


def _ms_text(value: Any) -> Any:
    """Events carry epoch milliseconds as strings; anything else (a malformed value a test
    builds on purpose) is passed through unchanged."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


def _envelope(
    event_type: str, event: dict[str, Any], identity: EventIdentity, event_id: str | None
) -> dict[str, Any]:
    return {
        "schema": "2.0",
        "header": {
            "event_id": event_id or uuid.uuid4().hex,
            "event_type": event_type,
            "create_time": _now_ms(),
            "token": identity.verification_token,
            "app_id": identity.app_id,
            "tenant_key": identity.tenant_key,
        },
        "event": event,
    }


def message_receive_event(
    item: Mapping[str, Any],
    identity: EventIdentity,
    *,
    event_id: str | None = None,
    chat_type: str = "group",
) -> dict[str, Any]:
    """`im.message.receive_v1` for a list item, in the event's own field names."""
    sender = item.get("sender") or {}
    mentions = [
        {
            "key": mention.get("key", ""),
            "id": user_ids(str(mention.get("id", ""))),
            "name": mention.get("name", ""),
            "tenant_key": identity.tenant_key,
        }
        for mention in item.get("mentions") or []
    ]
    message = {
        "message_id": item["message_id"],
        "root_id": item.get("root_id", ""),
        "parent_id": item.get("parent_id", ""),
        "create_time": _ms_text(item.get("create_time", "")),
        "update_time": _ms_text(item.get("update_time", item.get("create_time", ""))),
        "chat_id": item.get("chat_id", ""),
        "thread_id": item.get("thread_id", ""),
        "chat_type": chat_type,
        "message_type": item.get("msg_type", ""),
        "content": (item.get("body") or {}).get("content", ""),
        "mentions": mentions,
    }
    event = {
        "sender": {
            "sender_id": user_ids(str(sender.get("id", ""))),
            "sender_type": sender.get("sender_type", "user"),
            "tenant_key": sender.get("tenant_key", identity.tenant_key),
        },
        "message": message,
    }
    return _envelope(EVENT_MESSAGE_RECEIVE, event, identity, event_id)


def message_recalled_event(
    message_id: str,
    chat_id: str,
    identity: EventIdentity,
    *,
    recall_time_ms: int | None = None,
    recall_type: str = "message_owner",
    event_id: str | None = None,
) -> dict[str, Any]:
    event = {
        "message_id": message_id,
        "chat_id": chat_id,
        "recall_time": str(recall_time_ms) if recall_time_ms is not None else _now_ms(),
        "recall_type": recall_type,
    }
    return _envelope(EVENT_MESSAGE_RECALLED, event, identity, event_id)


def item_recalled_event(item: Mapping[str, Any], identity: EventIdentity) -> dict[str, Any]:
    """The recall of a recalled list item, at its last update (its creation when it has none):
    what `lark push` and the demo send for a `deleted` message (docs/cli.md)."""
    return message_recalled_event(
        item["message_id"],
        item["chat_id"],
        identity,
        recall_time_ms=int(item.get("update_time") or item["create_time"]),
    )


def card_action_event(
    identity: EventIdentity,
    *,
    operator_open_id: str,
    open_message_id: str,
    open_chat_id: str,
    action_value: Mapping[str, Any],
    tag: str = "button",
    callback_token: str | None = None,
    event_id: str | None = None,
) -> dict[str, Any]:
    """`card.action.trigger`: a click on a card button, with the callback token for updates."""
    event = {
        "operator": {**user_ids(operator_open_id), "tenant_key": identity.tenant_key},
        "token": callback_token or f"c-{uuid.uuid4().hex}",
        "action": {"value": dict(action_value), "tag": tag},
        "host": "im_message",
        "context": {"open_message_id": open_message_id, "open_chat_id": open_chat_id},
    }
    return _envelope(EVENT_CARD_ACTION, event, identity, event_id)


def reaction_event(
    identity: EventIdentity,
    *,
    message_id: str,
    emoji_type: str,
    operator_open_id: str,
    removed: bool = False,
    operator_type: str = "user",
    action_time_ms: int | None = None,
    event_id: str | None = None,
) -> dict[str, Any]:
    """`im.message.reaction.created_v1` (or `deleted_v1` with `removed`): someone added (or
    took back) an emoji reaction on a message. Lark's shape: no chat id; a reaction by an app
    names the app in `app_id` instead of a user (docs/pins.md)."""
    event: dict[str, Any] = {
        "message_id": message_id,
        "reaction_type": {"emoji_type": emoji_type},
        "operator_type": operator_type,
        "action_time": str(action_time_ms) if action_time_ms is not None else _now_ms(),
    }
    if operator_type == "app":
        event["app_id"] = operator_open_id
    else:
        event["user_id"] = user_ids(operator_open_id)
    kind = EVENT_REACTION_DELETED if removed else EVENT_REACTION_CREATED
    return _envelope(kind, event, identity, event_id)


def url_verification_event(challenge: str, verification_token: str) -> dict[str, Any]:
    return {"challenge": challenge, "token": verification_token, "type": "url_verification"}
