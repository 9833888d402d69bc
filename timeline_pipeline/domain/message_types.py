"""The Lark message types the product knows, and which of them are a person's prose (docs/design.md
§2; a new type is added here, docs/changing.md §1).

One set for every reader: the normalizer stores only supported types
(`lark/normalize.py`), the eligibility policy lets only text types reach a model
(`lark/message_policy.py`), and the rule synthesizer reads only text types as talk
(`synthesis/classify.py`), so a type added here is handled the same way by all three.
"""

from __future__ import annotations

from typing import Final

__all__ = ["AI_TEXT_TYPES", "STORED_ONLY_TYPES", "SUPPORTED_MESSAGE_TYPES"]

AI_TEXT_TYPES: Final = frozenset({"text", "post"})
"""Only human prose is worth a model call; everything else is context or noise."""

STORED_ONLY_TYPES: Final = frozenset(
    {
        "image",
        "file",
        "media",
        "audio",
        "sticker",
        "interactive",
        "system",
        "share_chat",
        "merge_forward",
    }
)
"""Kept as evidence for traceability (and for reconciliation), never sent to the model."""

SUPPORTED_MESSAGE_TYPES: Final = AI_TEXT_TYPES | STORED_ONLY_TYPES
