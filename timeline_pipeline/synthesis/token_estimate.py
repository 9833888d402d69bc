"""Offline prompt-size estimates.

The SDK's token counter is a network call, so chunk planning cannot use it; an estimate that
errs on the large side keeps prompts under budget, and the real `usage` of each reply is what gets
recorded. Count limits alone are not enough (docs/design.md §9): one pasted stack trace can be
larger than forty one-line acknowledgements.

The characters-per-token rule of English prose does not hold for every script: a Chinese,
Japanese or Korean character is usually a token of its own (a byte-level tokenizer spends up to
three or four byte pieces on a rare one), so a Chinese chat estimated at 3.5 characters a token
would come in at about a third of its real size. The estimate therefore counts by kind of
character (docs/design.md §9, "Token estimates"):

* ASCII at `CHARS_PER_TOKEN` characters a token;
* common wide characters (the ideographs of the GB2312 and Big5 national sets, kana, Hangul
  syllables, CJK and fullwidth punctuation) at `WIDE_CHAR_TOKENS` tokens each;
* rare wide characters (other ideographs, the supplementary planes) and emoji at
  `RARE_CHAR_TOKENS` tokens each;
* any other non-ASCII character (accented Latin, Cyrillic, symbols) at one token each.

Each is an upper bound for its kind, so mixed text is bounded too; the tests hold the figures
of a real byte-level tokenizer for a few samples against the estimate.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable

from timeline_pipeline.synthesis.contract import EvidenceItem

__all__ = [
    "CHARS_PER_TOKEN",
    "MESSAGE_OVERHEAD_TOKENS",
    "RARE_CHAR_TOKENS",
    "WIDE_CHAR_TOKENS",
    "estimate_evidence_tokens",
    "estimate_text_tokens",
    "estimate_total_tokens",
    "max_text_chars_for",
]

CHARS_PER_TOKEN = 3.5
"""English prose averages about four characters a token; 3.5 leaves headroom for ids and code."""

WIDE_CHAR_TOKENS = 1.5
"""Tokens charged for one common wide character: a common Chinese character measures about one
token, Hangul a little more; the half token of headroom covers both."""

RARE_CHAR_TOKENS = 3
"""Tokens charged for one rare ideograph or emoji, which a byte-level tokenizer may split into
one piece per UTF-8 byte (three or four)."""

MESSAGE_OVERHEAD_TOKENS = 24
"""Per-message framing in the prompt: evidence id, time, actor id, group key and separators."""

_WIDE = re.compile(
    "["
    "\u1100-\u115f"  # Hangul Jamo (leading consonants)
    "\u2600-\u27bf"  # miscellaneous symbols and dingbats (many shown as emoji)
    "\u2e80-\u303e"  # CJK radicals, Kangxi, ideographic description, CJK symbols and punctuation
    "\u3041-\u33ff"  # Hiragana, Katakana, Bopomofo, Hangul compatibility Jamo, CJK compatibility
    "\u3400-\u4dbf"  # CJK Unified Ideographs Extension A
    "\u4e00-\u9fff"  # CJK Unified Ideographs
    "\ua000-\ua4cf"  # Yi
    "\ua960-\ua97f"  # Hangul Jamo Extended-A
    "\uac00-\ud7a3"  # Hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\ufe10-\ufe19"  # vertical forms
    "\ufe30-\ufe6f"  # CJK compatibility forms, small form variants
    "\uff00-\uff60"  # fullwidth forms
    "\uffe0-\uffe6"  # fullwidth signs
    "\U0001f000-\U0001faff"  # emoji, pictographs and other supplementary symbols
    "\U00020000-\U0003fffd"  # CJK Unified Ideographs Extensions B and later
    "]"
)

_UNITS_PER_TOKEN = 14
"""The estimate in integer units, so that every kind's rate is exact."""
_ASCII_UNITS = 4  # 14 / 4 = 3.5 characters a token
_WIDE_UNITS = 21  # 1.5 tokens
_RARE_UNITS = RARE_CHAR_TOKENS * _UNITS_PER_TOKEN
_OTHER_UNITS = _UNITS_PER_TOKEN
_COMMON_SETS = ("gb2312",)


@functools.lru_cache(maxsize=65_536)
def _wide_units(char: str) -> int:
    """A wide character's cost: common (national-set ideographs, kana, Hangul, punctuation)
    or rare (other ideographs, emoji, the supplementary planes)."""
    point = ord(char)
    if point > 0xFFFF or 0x2600 <= point <= 0x27BF:
        return _RARE_UNITS
    if not (0x3400 <= point <= 0x4DBF or 0x4E00 <= point <= 0x9FFF or 0xF900 <= point <= 0xFAFF):
        return _WIDE_UNITS  # kana, Hangul, CJK and fullwidth punctuation
    for codec in _COMMON_SETS:
        try:
            char.encode(codec)
        except UnicodeEncodeError:
            continue
        return _WIDE_UNITS
    return _RARE_UNITS


def _units(char: str) -> int:
    if char.isascii():
        return _ASCII_UNITS
    if _WIDE.match(char):
        return _wide_units(char)
    return _OTHER_UNITS


def _tokens(units: int) -> int:
    return -(-units // _UNITS_PER_TOKEN)


def estimate_text_tokens(text: str) -> int:
    """Tokens for a piece of text alone, rounded up so that an empty estimate means empty text."""
    if text.isascii():
        return math.ceil(len(text) / CHARS_PER_TOKEN)
    return _tokens(sum(_units(char) for char in text))


def estimate_evidence_tokens(item: EvidenceItem) -> int:
    """Tokens one evidence item costs in a prompt, metadata included."""
    name = item.actor_display_name or ""
    return MESSAGE_OVERHEAD_TOKENS + estimate_text_tokens(item.text) + estimate_text_tokens(name)


def estimate_total_tokens(items: Iterable[EvidenceItem]) -> int:
    """Tokens a list of evidence items costs in a prompt."""
    return sum(estimate_evidence_tokens(item) for item in items)


def max_text_chars_for(item: EvidenceItem, budget_tokens: int) -> int:
    """The longest prefix of `item`'s text (in characters) that keeps it within `budget_tokens`,
    metadata included: `estimate_text_tokens(item.text[:n])` never exceeds what is left."""
    name_tokens = estimate_text_tokens(item.actor_display_name or "")
    available = budget_tokens - MESSAGE_OVERHEAD_TOKENS - name_tokens
    if available <= 0:
        return 0
    if item.text.isascii():
        return min(len(item.text), math.floor(available * CHARS_PER_TOKEN))
    budget_units = available * _UNITS_PER_TOKEN
    spent = 0
    for index, char in enumerate(item.text):
        spent += _units(char)
        if spent > budget_units:
            return index
    return len(item.text)
