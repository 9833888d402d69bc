"""The Chinese and mixed Chinese-English vocabulary, read from its table (`lexicon_zh.toml`).

Lark's users mostly write Chinese, and mix it with English in one sentence ("rollback 已经开始了",
"retry 关了"). The cues are data, one table per language (docs/design.md §7): this module only
compiles the table once, on import, into the same shapes as the English vocabulary in `lexicon`
(cues with weights per category; filters for questions, hedges, guesses, negation, chatter), so
that `classify` scores every language the same way. Every pattern is read on the segmented
sentence (`segment.segmented`), where Chinese words are separated by spaces.
"""

from __future__ import annotations

import re
import tomllib
from importlib import resources
from typing import Any

from timeline_pipeline.synthesis.contract import Category
from timeline_pipeline.synthesis.lexicon import Cue

__all__ = [
    "ACKNOWLEDGEMENT",
    "BOT",
    "BUSINESS",
    "CATEGORY_CUES",
    "COMMS",
    "CONDITION",
    "COORDINATION",
    "FRONTED_REASON",
    "HEDGE",
    "HISTORY",
    "INTENT",
    "NEGATION",
    "PARTIAL",
    "PENDING",
    "PROPOSAL",
    "QUESTION",
    "REPORTS",
    "SOCIAL",
    "SPECULATION",
    "STRUCTURAL_CUES",
    "TABLE_FILE",
    "UNKNOWN_CAUSE",
    "load_table",
]

TABLE_FILE = "lexicon_zh.toml"
_MACRO = re.compile(r"\{\{([A-Z][A-Z0-9_]*)\}\}")


def _expand(pattern: str, macros: dict[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in macros:
            raise ValueError(f"{TABLE_FILE}: unknown macro {name}")
        return macros[name]

    return _MACRO.sub(value, pattern)


def load_table(
    text: str, *, structural: bool = False
) -> tuple[dict[str, re.Pattern[str]], dict[Category, tuple[Cue, ...]]]:
    """The table's filters (one pattern each, its alternatives joined) and cues per category
    (with `structural`, only the groups marked `structural = true`)."""
    raw: dict[str, Any] = tomllib.loads(text)
    macros: dict[str, str] = {}
    for name, value in raw.get("macros", {}).items():
        macros[str(name)] = _expand(str(value), macros)
    filters = {
        str(name): re.compile(
            "|".join(f"(?:{_expand(str(p), macros)})" for p in patterns), re.IGNORECASE
        )
        for name, patterns in raw.get("filters", {}).items()
    }
    cues: dict[Category, tuple[Cue, ...]] = {}
    for name, groups in raw.get("cues", {}).items():
        category = Category(name)
        cues[category] = tuple(
            Cue(re.compile(_expand(str(p), macros), re.IGNORECASE), float(group["weight"]))
            for group in groups
            if not structural or group.get("structural", False)
            for p in group["patterns"]
        )
    return filters, cues


_TEXT = resources.files(__package__).joinpath(TABLE_FILE).read_text(encoding="utf-8")
_FILTERS, CATEGORY_CUES = load_table(_TEXT)
STRUCTURAL_CUES = load_table(_TEXT, structural=True)[1]
"""Numbers and units as evidence: discounted when a specific kind is clearly stated, as the
English `lexicon.STRUCTURAL_CUES` are."""

QUESTION = _FILTERS["question"]
"""A question, with or without its mark: "是不是 DNS 导致 的", "恢复 了 吗"."""
CONDITION = _FILTERS["condition"]
"""A condition or an offer opening the sentence: "如果 ...", "建议 ...", "要不 ..."."""
HEDGE = _FILTERS["hedge"]
"""Deliberation: "要不 先 回滚", "如果 ... 的话"."""
SPECULATION = _FILTERS["speculation"]
"""A guess or a prediction: "可能", "感觉", "好像", "估计"; no observation and no cause."""
NEGATION = _FILTERS["negation"]
"""Read against the clause before a cue: "还没 恢复", "没 回滚", "不是 ... 导致 的"."""
UNKNOWN_CAUSE = _FILTERS["unknown_cause"]
"""A cause not found yet: "root cause 还没找到"."""
PENDING = _FILTERS["pending"]
PARTIAL = _FILTERS["partial"]
FRONTED_REASON = _FILTERS["fronted_reason"]
HISTORY = _FILTERS["history"]
"""A change told as history: a finding about the change, not an action taken now."""
COORDINATION = _FILTERS["coordination"]
COMMS = _FILTERS["comms"]
SOCIAL = _FILTERS["social"]
ACKNOWLEDGEMENT = _FILTERS["acknowledgement"]
BOT = _FILTERS["bot"]
PROPOSAL = _FILTERS["proposal"]
REPORTS = _FILTERS["reports"]
"""Impact seen through people telling us: 反馈, 投诉, 工单."""
BUSINESS = _FILTERS["business"]
"""Impact seen in business numbers: 订单, 成交, GMV."""
INTENT = _FILTERS["intent"]
