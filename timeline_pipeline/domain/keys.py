"""Source names and keys (docs/design.md §3, §5): the identities rows are unique on.

Every key is built here and only here, so the event path, reconciliation, discovery and
synthesis cannot disagree about what `chat/<chat_id>/window/<start>` looks like.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

SOURCE_LARK = "lark"
SOURCE_SYSTEM = "system"
SOURCE_TYPE_LARK_MESSAGE = "lark_message"
SOURCE_TYPE_LARK_MESSAGES = "lark_messages"  # the chat collection checkpoint
SOURCE_TYPE_WINDOW = "lark_timeline_window"

RESOURCE_LARK_CHAT = "lark_chat"

_WORKSPACE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_LARK_ID = re.compile(r"^[A-Za-z0-9_-]{1,200}$")
_VERSION = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


class InvalidKey(ValueError):
    """An identifier that cannot be part of a stored key."""


def check_workspace_id(value: str) -> str:
    # Workspace ids become parts of Dagster partition keys (`:`-separated, no `...`).
    if not _WORKSPACE_ID.match(value) or "..." in value:
        raise InvalidKey(
            f"invalid workspace id {value!r}: use 1-128 letters, digits, '.', '_' or '-'"
        )
    return value


def check_lark_id(value: str, what: str = "chat id") -> str:
    if not _LARK_ID.match(value):
        raise InvalidKey(f"invalid {what} {value!r}: expected Lark's [A-Za-z0-9_-] identifier")
    return value


def check_processor_version(value: str) -> str:
    if not _VERSION.match(value) or "..." in value:
        raise InvalidKey(f"invalid processor version {value!r}")
    return value


def message_source_key(chat_id: str, message_id: str) -> str:
    return f"chat/{chat_id}/message/{message_id}"


def chat_checkpoint_key(chat_id: str) -> str:
    return f"chat/{chat_id}"


def format_window_start(window_start: datetime) -> str:
    if window_start.tzinfo is None:
        raise ValueError("naive window start")
    return window_start.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_window_start(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def window_source_key(chat_id: str, window_start: datetime, processor_version: str | None) -> str:
    """`chat/<chat_id>/window/<start>`, or the versioned rerun namespace
    `chat/<chat_id>/processor/<version>/window/<start>` (docs/design.md §5)."""
    start = format_window_start(window_start)
    if processor_version is None:
        return f"chat/{chat_id}/window/{start}"
    return f"chat/{chat_id}/processor/{processor_version}/window/{start}"
