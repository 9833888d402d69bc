"""A second opinion on a fact's kind, learned from the gold set's tuning half.

The rules decide whether a message states a fact at all, and their vocabulary gives its kind.
On chats nobody tuned for, the rules find the right messages far more often than they name their
kind (bench/quality/NOTES.md, "A category model"): a multinomial logistic regression over the
message's words and shape, fitted on the tuned set and the tuning half by
`tools/fit_category_model.py` and shipped as `category_model.json`, overrides the rules' kind
only when it is surer of another one by `margin`. It never decides whether a message is a
fact (a changed kind can change which neighbours a draft merges with, so the count of drafts
may move a little). Deterministic and free of I/O once loaded: the same message always gets
the same kind.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from timeline_pipeline.synthesis.category_features import category_features
from timeline_pipeline.synthesis.contract import Category, EvidenceItem

__all__ = ["MODEL_FILE", "CategoryModel", "default_category_model"]

MODEL_FILE = "category_model.json"


@dataclass(frozen=True)
class CategoryModel:
    """Weights by feature, one per kind in `categories` order, and the override margin."""

    categories: tuple[Category, ...]
    intercepts: tuple[float, ...]
    weights: Mapping[str, tuple[float, ...]]
    margin: float
    trained_on: tuple[str, ...] = ()
    """The gold transcripts it was fitted on: never one of the held-out half (tested)."""

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> CategoryModel:
        categories = tuple(Category(c) for c in raw["categories"])
        width = len(categories)
        weights = {str(k): tuple(float(x) for x in v) for k, v in raw["weights"].items()}
        if len(raw["intercepts"]) != width or any(len(v) != width for v in weights.values()):
            raise ValueError("category model: every weight row needs one value per category")
        return cls(
            categories=categories,
            intercepts=tuple(float(x) for x in raw["intercepts"]),
            weights=weights,
            margin=float(raw["margin"]),
            trained_on=tuple(str(n) for n in raw.get("trained_on", ())),
        )

    def probabilities(self, features: Mapping[str, float]) -> dict[Category, float]:
        """Softmax of the linear scores; features the model never saw count for nothing."""
        scores = list(self.intercepts)
        for name, value in features.items():
            row = self.weights.get(name)
            if row is None or not value:
                continue
            for index, weight in enumerate(row):
                scores[index] += weight * value
        top = max(scores)
        exps = [math.exp(s - top) for s in scores]
        total = sum(exps)
        return {c: e / total for c, e in zip(self.categories, exps, strict=True)}

    def reassign(self, category: Category, item: EvidenceItem) -> Category:
        """The rules' kind, unless the model is surer of another by at least the margin."""
        probabilities = self.probabilities(category_features(item))
        best = max(self.categories, key=lambda c: (probabilities[c], c is category))
        if best is category:
            return category
        if probabilities[best] - probabilities.get(category, 0.0) >= self.margin:
            return best
        return category


@cache
def default_category_model() -> CategoryModel:
    """The model shipped with the package (read once per process)."""
    text = resources.files(__package__).joinpath(MODEL_FILE).read_text(encoding="utf-8")
    return CategoryModel.from_json(json.loads(text))
