"""Source names, identity checks and message/chat keys (docs/design.md §3, §5).

The identities rows are unique on are built in one place each, so the event path,
reconciliation, discovery and synthesis cannot disagree about them: message and chat
checkpoint keys here, every window key (sync-state, partition, cursor) in
`domain.window_keys`, which uses the checks below.
"""

from __future__ import annotations

import re

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
