"""What the category model reads of a message: its words, word pairs, opening and shape.

Chinese is read in words, as the segmenter gives them (`segment`), not one character at a time.

Kept apart from the model so that the fitting tool (`tools/fit_category_model.py`) and the
product compute exactly the same features; pure, no I/O. Numbers are read as a number, with or
without a unit, so that "38%" and "12%" are one feature: the model learns how a kind of fact is
said, not the values of one incident (bench/quality/NOTES.md, "A category model").
"""

from __future__ import annotations

import math
import re

from timeline_pipeline.synthesis import lexicon
from timeline_pipeline.synthesis.contract import EvidenceItem
from timeline_pipeline.synthesis.segment import segmented
from timeline_pipeline.synthesis.text import casual_spelling, clean_text

__all__ = ["category_features"]

_TOKEN = re.compile(
    r"[a-z]+(?:'[a-z]+)?|\d+(?:\.\d+)?\s?(?:%|ms|s|m|h|k|gb|tb|x)?|[\u4e00-\u9fff]+|[?!:;/+>-]"
)
"""English words, numbers, punctuation that shapes a sentence, and Chinese words: the text is
segmented first, so a run of Chinese characters between spaces is one word (`飙到` is not the
`到` of `降到`)."""
_CJK_RUN = re.compile(r"[\u4e00-\u9fff]{4}")
_MAX_LENGTH = 600
_MAX_TECHNICAL = 6


def _token(raw: str) -> str:
    if raw[0].isdigit():
        return "<num>" if raw[-1].isdigit() else "<num+unit>"
    return raw


def category_features(item: EvidenceItem) -> dict[str, float]:
    """Sparse features of one message, by name; absent features are zero."""
    cleaned = clean_text(item.text)
    tokens = [_token(t) for t in _TOKEN.findall(segmented(casual_spelling(cleaned)).lower())]
    features: dict[str, float] = {}
    for index, token in enumerate(tokens):
        features[f"w:{token}"] = 1.0
        if index + 1 < len(tokens):
            features[f"b:{token}_{tokens[index + 1]}"] = 1.0
    if tokens:
        features[f"first:{tokens[0]}"] = 1.0
        if len(tokens) > 1:
            features[f"first2:{tokens[0]}_{tokens[1]}"] = 1.0
    features["shape:length"] = min(len(cleaned), _MAX_LENGTH) / (_MAX_LENGTH / 2)
    features["shape:log_tokens"] = math.log1p(len(tokens)) / 3
    technical = len(lexicon.TECHNICAL_TOKEN.findall(cleaned))
    features["shape:technical"] = min(technical, _MAX_TECHNICAL) / (_MAX_TECHNICAL / 2)
    if cleaned.rstrip().endswith(("?", "\uff1f")):
        features["shape:question"] = 1.0
    if item.message_type == "post":
        features["shape:post"] = 1.0
    if item.parent_id:
        features["shape:reply"] = 1.0
    if _CJK_RUN.search(cleaned):
        features["shape:chinese"] = 1.0
    return features
