"""Offline prompt-size estimates.

The SDK's token counter is a network call, so chunk planning cannot use it; an estimate that
errs on the large side keeps prompts under budget, and the real `usage` of each reply is what gets
recorded. Count limits alone are not enough (docs/design.md §9): one pasted stack trace can be
larger than forty one-line acknowledgements.

No single characters-per-token rate holds for every script a chat carries (docs/design.md §9,
"Token estimates"). A byte-level tokenizer reads English words whole, but spends a token on
nearly every change between letters and digits in a hex trace id or a UUID, about one on a
common Chinese character and more on a Korean syllable or a Thai letter, and up to one per UTF-8
byte on a rare character or an emoji. The estimate therefore walks the text once and charges each
character by its kind and by the character before it:

* lowercase letters and spaces at `CHARS_PER_TOKEN` characters a token, so plain English prose
  costs what it always did;
* capitals, digits and other ASCII punctuation more, and a run of letters or digits that starts
  right after a letter or digit of another kind (`4bf92f35`, `b72c`, `getConfig`) much more;
* a common Chinese character, kana (halfwidth kana included: the tokenizer folds them to their
  fullwidth forms), a common Hangul syllable, a letter of an alphabetic script (accented Latin,
  Greek, Cyrillic, Hebrew, Arabic) and CJK punctuation at a rate per kind, the first of a run
  dearer than the ones after it;
* every other character (rare ideographs, other scripts such as Thai or Devanagari, symbols,
  emoji and the joiners, modifiers and flags of emoji sequences) at its UTF-8 length, the most a
  byte-level tokenizer can ever spend on it.

The rates are upper bounds fitted against a real byte-level tokenizer on chat, prose, code and
identifiers of every kind above; the tests hold its counts for samples of each kind against the
estimate. The text is read as the tokenizer reads it, after NFKC folding (fullwidth letters,
digits and commas count as ASCII's). A message's framing in the prompt (`MESSAGE_OVERHEAD_TOKENS`)
includes the one token a tokenizer may spend splitting the first word of a text that a space does
not introduce; a message's actor is counted as the prompt shows it, by name or else by id.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Iterable, Iterator

from timeline_pipeline.synthesis.contract import EvidenceItem

__all__ = [
    "CHARS_PER_TOKEN",
    "MESSAGE_OVERHEAD_TOKENS",
    "estimate_evidence_tokens",
    "estimate_text_tokens",
    "estimate_total_tokens",
    "max_text_chars_for",
]

CHARS_PER_TOKEN = 3.5
"""Lowercase letters and spaces: English prose averages about four characters a token."""

MESSAGE_OVERHEAD_TOKENS = 30
"""Per-message framing in the prompt (`synthesis/prompt.py`, one JSON line: evidence id, time,
group label and keys; the actor is counted apart), measured at 26 tokens, plus the token a text's
first word may cost when no space introduces it and three of headroom for long ids and the
escapes JSON adds to quotes and newlines."""

_UNITS_PER_TOKEN = 28
"""The estimate in integer units, so that every rate is exact and a prefix's cost is a sum."""

# Kinds of character. A kind in `_COSTS` is charged per run; `_FIXED` is charged its own units.
_LOWER, _UPPER, _DIGIT, _SPACE, _BREAK, _PUNCT = range(6)
_LETTER, _HAN, _KANA, _HANGUL, _CJK_PUNCT, _FIXED = range(6, 12)

_COSTS: dict[int, tuple[int, int, int]] = {
    # kind: (units for the first of a run, for the first of a run right after a letter or digit
    # of another kind, for each one after the first)
    _LOWER: (8, 8, 8),  # 3.5 characters a token
    _UPPER: (17, 56, 17),
    _DIGIT: (20, 56, 13),
    _SPACE: (8, 8, 8),
    _BREAK: (28, 28, 28),  # newlines and tabs: the prompt escapes them (`\n`)
    _PUNCT: (41, 41, 22),
    _LETTER: (56, 56, 34),  # accented Latin, Greek, Cyrillic, Armenian, Hebrew, Arabic
    _HAN: (49, 49, 35),  # a common Chinese character
    _KANA: (45, 45, 45),
    _HANGUL: (57, 57, 38),  # a common Hangul syllable
    _CJK_PUNCT: (50, 50, 14),
}
_WORD = frozenset({_LOWER, _UPPER, _DIGIT})
"""Kinds that make up one alphanumeric token (`4bf92f35`): a run of one starting right after
another is a new piece for the tokenizer."""

_COMMON_HAN = (("gb2312", b"\xb0", b"\xd8"), ("big5", b"\xa4\x40", b"\xc6\x7f"))
"""The first levels of the national character sets, GB 2312's 3,755 and Big5's 5,401 most
frequent ideographs, as (codec, lowest encoding, encoding past the last): other ideographs cost
their bytes."""


def _step_table() -> tuple[tuple[int, ...], ...]:
    """`_STEP[previous][kind]`: the units of a character of `kind` after one of `previous`."""
    table: list[tuple[int, ...]] = []
    for previous in range(_FIXED + 1):
        row: list[int] = []
        for kind in range(_FIXED):
            first, joined, following = _COSTS[kind]
            if kind == previous:
                row.append(following)
            elif previous in _WORD and kind in _WORD:
                row.append(joined)
            else:
                row.append(first)
        table.append(tuple(row))
    return tuple(table)


_STEP = _step_table()


def _ascii_kind(char: str) -> int:
    if "a" <= char <= "z":
        return _LOWER
    if "A" <= char <= "Z":
        return _UPPER
    if "0" <= char <= "9":
        return _DIGIT
    if char == " ":
        return _SPACE
    if char.isspace():
        return _BREAK
    return _PUNCT


_ASCII = tuple((_ascii_kind(chr(point)), 0) for point in range(128))


def _encoded(char: str, codec: str) -> bytes:
    try:
        return char.encode(codec)
    except UnicodeEncodeError:
        return b""


def _common_han(char: str) -> bool:
    return any(low <= _encoded(char, codec) < high for codec, low, high in _COMMON_HAN)


def _folded_kind(char: str) -> int:
    """The run kind of one non-ASCII character already in NFKC form, or `_FIXED`."""
    point = ord(char)
    if 0x3400 <= point <= 0x4DBF or 0x4E00 <= point <= 0x9FFF:
        return _HAN if _common_han(char) else _FIXED
    if 0x3041 <= point <= 0x30FF:
        return _KANA
    if 0xAC00 <= point <= 0xD7A3:
        # Every syllable has an EUC-KR spelling; the 2,350 of KS X 1001 take two bytes.
        return _HANGUL if len(_encoded(char, "euc_kr")) == 2 else _FIXED
    if 0x3000 <= point <= 0x303F or 0xFE30 <= point <= 0xFE4F or 0xFF00 <= point <= 0xFFEF:
        return _CJK_PUNCT
    alphabetic = 0x00C0 <= point <= 0x06FF or 0x10A0 <= point <= 0x10FF or 0x1E00 <= point <= 0x1FFF
    if alphabetic and unicodedata.category(char).startswith("L"):
        return _LETTER
    return _FIXED


@functools.lru_cache(maxsize=65_536)
def _kind_of(char: str) -> tuple[int, int]:
    """A character's run kind, and its units when the kind is `_FIXED`."""
    if char.isascii():
        return _ASCII[ord(char)]
    folded = unicodedata.normalize("NFKC", char)
    if len(folded) == 1:
        if folded.isascii():
            return _ASCII[ord(folded)]
        kind = _folded_kind(folded)
        if kind != _FIXED:
            return kind, 0
    return _FIXED, len(folded.encode("utf-8")) * _UNITS_PER_TOKEN


def _char_units(text: str) -> Iterator[int]:
    """Each character's units in order, so that any prefix's estimate is a running sum.

    A line break first rounds what came before it up to a whole token: the tokenizer never
    merges across a newline, so lines cost at least their own rounded-up counts plus the break,
    and the sum of the lines' estimates is never above the estimate of the text."""
    previous = _FIXED
    spent = 0
    for char in text:
        kind, fixed = _ASCII[ord(char)] if char.isascii() else _kind_of(char)
        units = fixed if kind == _FIXED else _STEP[previous][kind]
        if kind == _BREAK:
            units += -spent % _UNITS_PER_TOKEN
        spent += units
        yield units
        previous = kind


def _tokens(units: int) -> int:
    return -(-units // _UNITS_PER_TOKEN)


def estimate_text_tokens(text: str) -> int:
    """Tokens for a piece of text alone, rounded up so that an empty estimate means empty text."""
    return _tokens(sum(_char_units(text)))


def _actor_label(item: EvidenceItem) -> str:
    # The prompt names the actor by display name, else by id (synthesis/prompt.py).
    return item.actor_display_name or item.actor_id or "unknown"


def estimate_evidence_tokens(item: EvidenceItem) -> int:
    """Tokens one evidence item costs in a prompt, metadata included."""
    return (
        MESSAGE_OVERHEAD_TOKENS
        + estimate_text_tokens(item.text)
        + estimate_text_tokens(_actor_label(item))
    )


def estimate_total_tokens(items: Iterable[EvidenceItem]) -> int:
    """Tokens a list of evidence items costs in a prompt."""
    return sum(estimate_evidence_tokens(item) for item in items)


def max_text_chars_for(item: EvidenceItem, budget_tokens: int) -> int:
    """The longest prefix of `item`'s text (in characters) that keeps it within `budget_tokens`,
    metadata included: `estimate_text_tokens(item.text[:n])` never exceeds what is left."""
    name_tokens = estimate_text_tokens(_actor_label(item))
    available = budget_tokens - MESSAGE_OVERHEAD_TOKENS - name_tokens
    if available <= 0:
        return 0
    budget_units = available * _UNITS_PER_TOKEN
    spent = 0
    for index, units in enumerate(_char_units(item.text)):
        spent += units
        if spent > budget_units:
            return index
    return len(item.text)
