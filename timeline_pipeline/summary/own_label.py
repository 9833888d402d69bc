"""The label an author put in front of a title, found by one rule over the category words.

Authors label their own messages ("Root cause identified: ...", "[Root cause] ...", "【根因】...",
"决策：..."), and a title keeps the author's words, so under the summary's heading for that
category the label would be said twice ("Root cause: Root cause identified: ..."). Rather than a
list of phrases, which always misses the next one, a label is read as a shape (docs/i18n.md):

    [ticket id] category word [announcing word] [(qualifier)] separator
    [ticket id] [category word [announcing word] [(qualifier)]] [separator]    (square brackets)
    [ticket id] 【category word [announcing word] [(qualifier)]】 [separator]

The category words are the shared category names in every language the product speaks
(`i18n.labels`, so a new catalog brings its words with it), English plurals and spacing
variants included, plus the few other names authors use for a kind (`AUTHOR_WORDS`). An
announcing word only says that the label's claim is established ("identified", "analysis",
"定位"); a word that changes the claim ("Decision needed: ...", "Recovery ETA: ...") is not one,
so such a title is left as it was written. Pure.
"""

from __future__ import annotations

import re
from functools import cache

from timeline_pipeline.i18n.labels import CATEGORY_LABELS, category_label
from timeline_pipeline.i18n.locales import Locale

__all__ = ["ANNOUNCING_WORDS", "AUTHOR_WORDS", "strip_own_label"]

AUTHOR_WORDS: dict[str, tuple[str, ...]] = {
    "impact": (),
    "root_cause": ("RC", "RCA", "根本原因"),
    "finding": (),
    "decision": ("decided",),
    "mitigation": ("缓解", "止血"),
    "recovery": ("recovered", "已恢复"),
    "next_step": ("follow-up", "action item", "后续", "跟进", "待办"),
}
"""Names authors give a kind besides its shared category name, in either language."""

ANNOUNCING_WORDS: dict[str, tuple[str, ...]] = {
    "latin": (
        "identified",
        "found",
        "confirmed",
        "determined",
        "established",
        "analysis",
        "made",
        "taken",
        "applied",
        "done",
        "completed",
        "agreed",
        "update",
    ),
    "han": ("已定位", "定位", "已确认", "确认", "已找到", "分析", "结论"),
}
"""Words that may follow a category word inside a label without changing its claim: Latin
ones after a space ("Root cause identified"), Han ones directly ("根因分析")."""

_TICKET = r"(?:[A-Z][A-Z0-9]*-\d+\s+)?"
_QUALIFIER = r"(?:\s*(?P<qualifier>\([^()（）]{1,24}\)|（[^()（）]{1,24}）))?"
_SEPARATOR = r"(?:\s*[:\uff1a]\s*|\s+[-\u2013\u2014]{1,2}\s+)"


def _word_pattern(word: str) -> str:
    """`Root cause` as `root[ -]?causes?`: spacing and hyphenation vary, plurals are common
    ("Findings", "Next steps"); a Han word is matched as written."""
    parts = [re.escape(part) for part in re.split(r"[\s-]+", word.strip()) if part]
    pattern = r"[ -]?".join(parts)
    return pattern + "s?" if parts and parts[-1].isascii() and parts[-1].isalpha() else pattern


def _category_words(category: str) -> list[str]:
    words = {category_label(category, locale) for locale in Locale}
    words.update(AUTHOR_WORDS.get(category, ()))
    # Longest first, so that `缓解措施` is tried before `缓解`.
    return sorted(words, key=lambda word: (-len(word), word))


@cache
def _label(category: str) -> re.Pattern[str] | None:
    if category not in CATEGORY_LABELS:
        return None
    words = "|".join(_word_pattern(word) for word in _category_words(category))
    latin = "|".join(ANNOUNCING_WORDS["latin"])
    han = "|".join(ANNOUNCING_WORDS["han"])
    core = rf"(?:{words})(?:\s+(?:{latin})\b|\s*(?:{han}))?{_QUALIFIER}"
    # In brackets the separator is optional ("[Root cause] ...", "【根因】..."); bare, required.
    return re.compile(
        rf"^{_TICKET}(?:(?P<open>[\[【])\s*)?{core}(?(open)\s*[\]】]{_SEPARATOR}?|{_SEPARATOR})\s*",
        re.IGNORECASE,
    )


def strip_own_label(title: str, category: str) -> str:
    """The title without a leading label naming its own category ("" when the title is only
    that label). A qualifier the author put on the label ("(draft)", "（初步）") stays, in front
    of the claim it qualifies; a label naming another category is the author's words and stays.
    """
    pattern = _label(category)
    match = pattern.match(title) if pattern else None
    if match is None:
        return title
    rest = title[match.end() :].strip()
    if not rest:
        return ""
    qualifier = match.group("qualifier")
    if not qualifier:
        return rest[0].upper() + rest[1:]
    opening, inner, closing = qualifier[0], qualifier[1:-1].strip(), qualifier[-1]
    return f"{opening}{inner}{closing}{' ' if closing == ')' else ''}{rest}"
