"""How the category model does on a chat it was not fitted on: leave one transcript out.

    python -m tools.cross_validate_category_model [--regularization 0.3,1,3] [--margin 0.4,0.5]

The tuning half's own figures are flattering twice over: the vocabulary was tuned on those chats
and the shipped model was fitted on them. The held-out half may only be read as totals, and
rarely (bench/quality/NOTES.md, "Moves between halves"), so C and the margin are chosen here:
for every transcript of the tuned set and the tuning half, a model is fitted on all the others
(`tools.fit_category_model.fit_on`) and the rule synthesizer scores that one transcript with it,
window by window as the benchmark does. The sums are printed per language (`languages.json`),
next to the vocabulary alone on the same chats. The vocabulary itself is not left out (it was
tuned on every one of these chats), so the figures say what the model adds, not what a new chat
would score. The held-out half is never read.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from bench.quality.evaluation import Score, produced_facts, run_windows, score
from bench.quality.gold import load_languages
from timeline_pipeline.synthesis.category_model import CategoryModel
from timeline_pipeline.synthesis.rules import RuleSynthesizer
from tools.fit_category_model import (
    GOLD,
    MARGIN,
    REGULARIZATION,
    Labelled,
    fit_on,
    labelled_transcripts,
)

ALL = "all"


@dataclass(frozen=True)
class Setting:
    """One way of giving the kinds: the vocabulary alone, or a model at this C and margin."""

    regularization: float | None
    margin: float = MARGIN

    @property
    def label(self) -> str:
        if self.regularization is None:
            return "vocabulary alone"
        return f"C={self.regularization:g} margin={self.margin:g}"


def _scored(
    labelled: Labelled, model: CategoryModel | None, languages: Mapping[str, str]
) -> dict[str, Score]:
    run = run_windows(labelled.transcript.evidence, RuleSynthesizer(category_model=model))
    produced = produced_facts(run.entries, labelled.transcript.message_id_by_evidence_id())
    result = score(produced, labelled.transcript.expected)
    return {ALL: result, languages.get(labelled.name, "en"): result}


def _add(total: dict[str, Score], part: Mapping[str, Score]) -> None:
    for key, value in part.items():
        total[key] = total.get(key, Score(0, 0, 0)) + value


def cross_validate(
    labelled: Sequence[Labelled], settings: Iterable[Setting], languages: Mapping[str, str]
) -> dict[Setting, dict[str, Score]]:
    """Per setting, the scores summed over every left-out transcript, overall and per language.

    One model is fitted per left-out transcript and C, and shared by the margins.
    """
    totals: dict[Setting, dict[str, Score]] = {}
    fitted: dict[tuple[str, float], CategoryModel] = {}
    for setting in settings:
        total = totals.setdefault(setting, {})
        for left_out in labelled:
            model = None
            if setting.regularization is not None:
                key = (left_out.name, setting.regularization)
                if key not in fitted:
                    rest = [one for one in labelled if one.name != left_out.name]
                    fitted[key] = CategoryModel.from_json(
                        fit_on(rest, regularization=setting.regularization)
                    )
                model = replace(fitted[key], margin=setting.margin)
            _add(total, _scored(left_out, model, languages))
    return totals


def _floats(raw: str) -> list[float]:
    return [float(part) for part in raw.split(",") if part.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.cross_validate_category_model")
    parser.add_argument("--regularization", type=_floats, default=[REGULARIZATION])
    parser.add_argument("--margin", type=_floats, default=[MARGIN])
    parser.add_argument("--gold", type=Path, default=GOLD)
    args = parser.parse_args(argv)
    labelled = labelled_transcripts(args.gold)
    settings = [Setting(None)] + [Setting(c, m) for c in args.regularization for m in args.margin]
    totals = cross_validate(labelled, settings, load_languages(args.gold))
    print(f"leave one transcript out, {len(labelled)} transcripts (precision / recall, hits)")
    for setting, scores in totals.items():
        cells = "  ".join(
            f"{key} {value.precision:.2f} / {value.recall:.2f} ({value.matched})"
            for key, value in sorted(scores.items())
        )
        print(f"{setting.label:24} {cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
