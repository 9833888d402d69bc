"""A Lark reaction event, read and checked. Pure.

`im.message.reaction.created_v1` and `im.message.reaction.deleted_v1` carry the same body (lark-oapi
`P2ImMessageReactionCreatedV1Data`): `message_id`, `reaction_type.emoji_type`, `operator_type`
(`user` or `app`), `user_id{open_id, union_id, user_id}` for a person, `app_id` for an app, and
`action_time` in epoch milliseconds as a string. There is no chat id: the message's chat comes from
the stored evidence or from Lark (docs/pins.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Final

from timeline_pipeline.lark.normalize import read_identifier, read_time

_EMOJI: Final = re.compile(r"[\x21-\x7e]{1,64}")


class Refusal(StrEnum):
    """Why a reaction pinned or unpinned nothing: a metric label and a log field."""

    PINS_DISABLED = "pins_disabled"
    OTHER_EMOJI = "other_emoji"
    NOT_A_PERSON = "not_a_person"
    NOT_CURATOR = "not_curator"
    OWN_MESSAGE = "own_message"
    CARD = "card"
    MESSAGE_UNAVAILABLE = "message_unavailable"
    UNBOUND_CHAT = "unbound_chat"
    NOT_ELIGIBLE = "not_eligible"
    NOT_PINNED = "not_pinned"
    SUPERSEDED = "superseded"
    """A creation older than a removal of the same reaction that arrived before it."""


class MalformedReaction(ValueError):
    """The event is not a reaction we can read; `reason` is the 400's reason code."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Reaction:
    """One reaction added (`removed` False) or taken back."""

    message_id: str
    emoji_type: str
    operator_type: str
    operator: str
    """The person's open_id, or the app id when an app reacted."""
    action_at: datetime
    removed: bool


def _identifier(value: object, key: str) -> str:
    return read_identifier(value, key, MalformedReaction)


def _action_time(value: object, now: datetime) -> datetime:
    """Epoch milliseconds as Lark sends them (a string); absent means now."""
    return read_time(value, "action_time", MalformedReaction, absent=now)


def read_reaction(event: Mapping[str, Any], *, removed: bool, now: datetime) -> Reaction:
    """The reaction an event describes, or MalformedReaction naming the first bad field."""
    message_id = _identifier(event.get("message_id"), "message_id")
    reaction_type = event.get("reaction_type")
    emoji = reaction_type.get("emoji_type") if isinstance(reaction_type, Mapping) else None
    if not isinstance(emoji, str) or not _EMOJI.fullmatch(emoji):
        raise MalformedReaction("bad_emoji_type")
    operator_type = event.get("operator_type")
    if operator_type == "app":
        operator = _identifier(event.get("app_id"), "app_id")
    elif operator_type == "user":
        user = event.get("user_id")
        open_id = user.get("open_id") if isinstance(user, Mapping) else None
        operator = _identifier(open_id, "open_id")
    else:
        raise MalformedReaction("bad_operator_type")
    return Reaction(
        message_id,
        emoji,
        operator_type,
        operator,
        _action_time(event.get("action_time"), now),
        removed,
    )
