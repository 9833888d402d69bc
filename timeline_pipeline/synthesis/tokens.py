"""Offline prompt-size estimates.

The SDK's token counter is a network call, so chunk planning cannot use it; an estimate that
errs on the large side keeps prompts under budget, and the real `usage` of each reply is what gets
recorded. Count limits alone are not enough (docs/design.md §9): one pasted stack trace can be
larger than forty one-line acknowledgements.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from timeline_pipeline.synthesis.models import EvidenceItem

__all__ = [
    "CHARS_PER_TOKEN",
    "MESSAGE_OVERHEAD_TOKENS",
    "estimate_evidence_tokens",
    "estimate_text_tokens",
    "estimate_total_tokens",
    "max_text_chars_for",
]

CHARS_PER_TOKEN = 3.5
"""English prose averages about four characters a token; 3.5 leaves headroom for ids and code."""

MESSAGE_OVERHEAD_TOKENS = 24
"""Per-message framing in the prompt: evidence id, time, actor id, group key and separators."""


def estimate_text_tokens(text: str) -> int:
    """Tokens for a piece of text alone, rounded up so that an empty estimate means empty text."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def estimate_evidence_tokens(item: EvidenceItem) -> int:
    """Tokens one evidence item costs in a prompt, metadata included."""
    name = item.actor_display_name or ""
    return MESSAGE_OVERHEAD_TOKENS + estimate_text_tokens(item.text) + estimate_text_tokens(name)


def estimate_total_tokens(items: Iterable[EvidenceItem]) -> int:
    """Tokens a list of evidence items costs in a prompt."""
    return sum(estimate_evidence_tokens(item) for item in items)


def max_text_chars_for(item: EvidenceItem, budget_tokens: int) -> int:
    """The longest text of `item` that keeps it within `budget_tokens`, metadata included."""
    name_tokens = estimate_text_tokens(item.actor_display_name or "")
    available = budget_tokens - MESSAGE_OVERHEAD_TOKENS - name_tokens
    return max(0, math.floor(available * CHARS_PER_TOKEN))
