"""What the product does with each kind of Lark message (docs/design.md §2).

The decisions live here, apart from the parsing in `normalize`, so that the rules a reviewer has
to agree with (which types are stored, which may reach the model, what survives a recall) can be
read in one place without wading through JSON handling.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from timeline_pipeline.domain.message_types import AI_TEXT_TYPES

SENDER_TYPES: Final = frozenset({"user", "app", "anonymous", "unknown"})

IDENTITY_METADATA_KEYS: Final = ("chat_id", "thread_id", "root_id", "parent_id", "message_type")
"""What a recalled message keeps: enough to find its row and its thread, nothing that was said."""

VOLATILE_METADATA_KEYS: Final = frozenset({"recalled_at", "updated"})
"""Bookkeeping that differs between the event and the history paths for the same recall or edit
(history marks an edit `updated`, the event shape has no such field; the edit itself changes
the text, which is hashed).

Leaving it out of the content hash keeps a recall seen twice from looking like a second change.
"""


def sender_kind(raw: str | None) -> str:
    """Fold unknown sender types into "unknown" so that a new Lark value can never be eligible."""
    if raw in SENDER_TYPES:
        return raw
    return "unknown"


def is_self_message(*, sender_type: str, sender_id: str | None, app_id: str | None) -> bool:
    """Our own bot's cards and replies must not feed back into the timeline they came from."""
    if sender_type == "app":
        return True
    return app_id is not None and sender_id == app_id


def is_ai_eligible(
    *,
    message_type: str,
    sender_type: str,
    sender_id: str | None,
    deleted: bool,
    text: str,
    app_id: str | None,
) -> bool:
    """A message may reach the model only when a person wrote words that are still there."""
    if message_type not in AI_TEXT_TYPES or deleted or not text:
        return False
    if is_self_message(sender_type=sender_type, sender_id=sender_id, app_id=app_id):
        return False
    return sender_type == "user"


def redacted_metadata(metadata: Mapping[str, Any], *, recalled_at_iso: str) -> dict[str, Any]:
    """Keep identity, drop every trace of content (attachment names and keys, mentioned people)."""
    kept = {key: metadata.get(key) for key in IDENTITY_METADATA_KEYS}
    kept["deleted"] = True
    kept["recalled_at"] = recalled_at_iso
    return kept
