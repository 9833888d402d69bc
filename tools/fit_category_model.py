"""Fit the rule synthesizer's category model on the gold set's tuned set and tuning half.

    python -m tools.fit_category_model          # writes synthesis/category_model.json
    python -m tools.fit_category_model --check  # exit 1 unless a refit gives the shipped file

The held-out half is never read (bench/quality/NOTES.md): only transcripts whose split is
`tuned` or `tuning` in `splits.json` are fitted on, and their names are written into the model.
Each evidence message a fact cites is one example, labelled with that fact's kind (the first
fact, when several cite it), read in words (Chinese segmented by `synthesis/segment.py`, so the
three languages of the gold set, en, mixed and zh, share one model). scikit-learn's
multinomial logistic regression (lbfgs, L2, C=1) is deterministic, so a refit reproduces the
file; weights are rounded to three decimals, features whose largest weight rounds to zero are
left out, and the file has one feature per line so that a refit reads as a diff.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.quality.gold import GoldTranscript, Split, load_gold_set
from timeline_pipeline.synthesis.category_features import category_features
from timeline_pipeline.synthesis.category_model import MODEL_FILE
from timeline_pipeline.synthesis.contract import Category

ROOT = Path(__file__).resolve().parents[1]
GOLD = ROOT / "timeline_pipeline_tests" / "data" / "gold"
OUTPUT = ROOT / "timeline_pipeline" / "synthesis" / MODEL_FILE
REGULARIZATION = 1.0
MARGIN = 0.5
"""With the model fitted on the first three rounds only, margins 0.3 to 0.6 (and C 1 to 3) scored
within one fact of each other on the fourth round's chats; of those, 0.5 is the most lenient
that leaves the demo chat's timeline as it was (bench/quality/NOTES.md)."""
DECIMALS = 3
TOLERANCE = 2e-3


@dataclass(frozen=True)
class Labelled:
    """One gold transcript's cited messages: the features and the kind of each."""

    name: str
    transcript: GoldTranscript
    features: list[dict[str, float]]
    kinds: list[str]


def labelled_transcripts(gold: Path) -> list[Labelled]:
    """Every transcript of the tuned set and the tuning half, with its cited messages labelled.

    A message cited by several facts takes the first fact's kind.
    """
    labelled: list[Labelled] = []
    for split in (Split.TUNED, Split.TUNING):
        for transcript in load_gold_set(gold, split=split):
            kind: dict[str, Category] = {}
            for fact in transcript.expected:
                for message_id in fact.evidence_message_ids:
                    kind.setdefault(message_id, fact.category)
            cited = [item for item in transcript.evidence if item.message_id in kind]
            labelled.append(
                Labelled(
                    name=transcript.name,
                    transcript=transcript,
                    features=[category_features(item) for item in cited],
                    kinds=[kind[item.message_id].value for item in cited],
                )
            )
    return labelled


def fit_on(
    labelled: Sequence[Labelled], *, regularization: float = REGULARIZATION
) -> dict[str, Any]:
    """The model fitted on these transcripts' cited messages, in the shipped file's form."""
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression

    features = [f for one in labelled for f in one.features]
    kinds = [k for one in labelled for k in one.kinds]
    vectorizer = DictVectorizer()
    matrix = vectorizer.fit_transform(features)
    model = LogisticRegression(C=regularization, max_iter=10_000)
    model.fit(matrix, kinds)
    classes = [str(c) for c in model.classes_]
    weights: dict[str, list[float]] = {}
    for index, name in enumerate(vectorizer.get_feature_names_out()):
        row = [round(float(w), DECIMALS) for w in model.coef_[:, index]]
        if any(row):
            weights[str(name)] = row
    return {
        "categories": classes,
        "intercepts": [round(float(b), DECIMALS) for b in model.intercept_],
        "weights": dict(sorted(weights.items())),
        "margin": MARGIN,
        "trained_on": sorted(one.name for one in labelled),
        "examples": len(kinds),
    }


def fit(gold: Path) -> dict[str, Any]:
    """The shipped model: fitted on every transcript of the tuned set and the tuning half."""
    return fit_on(labelled_transcripts(gold))


def same_model(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Equal up to the last rounded decimal (BLAS builds differ in the last bits).

    A feature missing on one side counts as a row of zeros: a weight that rounds to zero in one
    build and to 0.001 in another is the same model.
    """
    rest = ("weights", "intercepts")
    if {k: v for k, v in a.items() if k not in rest} != {
        k: v for k, v in b.items() if k not in rest
    }:
        return False
    width = len(a["categories"])
    zeros = [0.0] * width
    rows = [(a["intercepts"], b["intercepts"])] + [
        (a["weights"].get(k, zeros), b["weights"].get(k, zeros))
        for k in a["weights"].keys() | b["weights"].keys()
    ]
    return all(
        abs(x - y) <= TOLERANCE for left, right in rows for x, y in zip(left, right, strict=True)
    )


def render(model: dict[str, Any]) -> str:
    """JSON with one weight row per line: reviewable, and stable under a refit."""
    head = {k: v for k, v in model.items() if k != "weights"}
    rows = [
        f"{json.dumps(name, ensure_ascii=False)}:{json.dumps(row, separators=(',', ':'))}"
        for name, row in model["weights"].items()
    ]
    opening = json.dumps(head, ensure_ascii=False, indent=2)[:-2]
    return opening + ',\n  "weights": {\n' + ",\n".join(rows) + "\n}}\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.fit_category_model")
    parser.add_argument(
        "--check", action="store_true", help="compare a refit with the shipped file"
    )
    args = parser.parse_args(argv)
    fitted = fit(GOLD)
    if args.check:
        shipped = json.loads(OUTPUT.read_text(encoding="utf-8"))
        if not same_model(shipped, fitted):
            print(
                f"{OUTPUT.name} is not what a refit gives: run python -m tools.fit_category_model",
                file=sys.stderr,
            )
            return 1
        return 0
    OUTPUT.write_text(render(fitted), encoding="utf-8")
    print(f"wrote {OUTPUT} ({len(fitted['weights'])} features, {fitted['examples']} examples)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
