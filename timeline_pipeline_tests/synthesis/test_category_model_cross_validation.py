"""Choosing the category model's C and margin without the held-out half: leave one chat out.

`tools/cross_validate_category_model.py` scores each tuning chat with a model fitted on the
others (bench/quality/NOTES.md, "Leave one chat out").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.quality.evaluation import Score, produced_facts, run_windows, score
from timeline_pipeline.synthesis.rules import RuleSynthesizer
from tools import cross_validate_category_model as cv
from tools.fit_category_model import Labelled, labelled_transcripts

GOLD = Path(__file__).resolve().parents[1] / "data" / "gold"


@pytest.fixture(scope="module")
def three() -> list[Labelled]:
    return labelled_transcripts(GOLD)[:3]


def test_a_fold_never_fits_on_the_chat_it_scores(
    three: list[Labelled], monkeypatch: pytest.MonkeyPatch
) -> None:
    fitted_on: list[set[str]] = []
    real_fit_on = cv.fit_on

    def recording(labelled: list[Labelled], **kwargs: Any) -> dict[str, Any]:
        fitted_on.append({one.name for one in labelled})
        return real_fit_on(labelled, **kwargs)

    monkeypatch.setattr(cv, "fit_on", recording)
    cv.cross_validate(three, [cv.Setting(1.0, 0.4), cv.Setting(1.0, 0.6)], {})
    names = {one.name for one in three}
    # One fit per left-out chat, shared by the two margins, each on exactly the other two.
    assert sorted(map(sorted, fitted_on)) == sorted(sorted(names - {n}) for n in names)


def test_the_vocabulary_alone_scores_as_the_benchmark_does(three: list[Labelled]) -> None:
    languages = {three[0].name: "mixed"}
    totals = cv.cross_validate(three, [cv.Setting(None)], languages)[cv.Setting(None)]
    expected = Score(0, 0, 0)
    for one in three:
        run = run_windows(one.transcript.evidence, RuleSynthesizer(category_model=None))
        produced = produced_facts(run.entries, one.transcript.message_id_by_evidence_id())
        expected += score(produced, one.transcript.expected)
    assert totals[cv.ALL] == expected
    assert totals["mixed"] + totals["en"] == expected
    assert totals["mixed"].expected == len(three[0].transcript.expected)
