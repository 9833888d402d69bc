"""Links from a timeline entry back to the chat: one click from a line to the Lark message.

Pure. The applink form is kept in one constant so that a deployment on another Lark domain (or
Feishu) changes one line. Only Lark chat messages get a link; a source this module does not
know gets none rather than a guessed URL.
"""

from __future__ import annotations

import re
from urllib.parse import urlencode

from timeline_pipeline.domain.keys import SOURCE_LARK, SOURCE_TYPE_LARK_MESSAGE

__all__ = ["LARK_APPLINK_BASE", "evidence_link", "message_applink", "parse_message_source_key"]

LARK_APPLINK_BASE = "https://applink.larksuite.com/client/chat/open"
"""Lark's applink that opens a chat at a message (`openChatId`, `openMessageId`)."""

_MESSAGE_KEY = re.compile(r"^chat/([A-Za-z0-9_-]{1,200})/message/([A-Za-z0-9_-]{1,200})$")


def message_applink(chat_id: str, message_id: str) -> str:
    """The applink that opens `chat_id` scrolled to `message_id` in the Lark client."""
    return f"{LARK_APPLINK_BASE}?{urlencode({'openChatId': chat_id, 'openMessageId': message_id})}"


def parse_message_source_key(source_key: str) -> tuple[str, str] | None:
    """(chat_id, message_id) of `chat/<chat_id>/message/<message_id>`, else None."""
    match = _MESSAGE_KEY.match(source_key)
    return (match.group(1), match.group(2)) if match else None


def evidence_link(source: str, source_type: str, source_key: str) -> str | None:
    """The link of one evidence row, or None when the row is not a Lark chat message."""
    if source != SOURCE_LARK or source_type != SOURCE_TYPE_LARK_MESSAGE:
        return None
    parsed = parse_message_source_key(source_key)
    return message_applink(*parsed) if parsed else None
