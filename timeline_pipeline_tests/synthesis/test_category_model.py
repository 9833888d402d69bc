"""The category model: a second opinion on a fact's kind, never on whether it is a fact.

It is fitted on the tuned set and the tuning half only (bench/quality/NOTES.md), ships as
`category_model.json`, and overrides the vocabulary's kind only when it is surer of another kind
by its margin.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.quality.gold import Split, load_splits
from timeline_pipeline.synthesis.category_features import category_features
from timeline_pipeline.synthesis.category_model import CategoryModel, default_category_model
from timeline_pipeline.synthesis.classify import MessageKind, read_message
from timeline_pipeline.synthesis.contract import Category
from timeline_pipeline.synthesis.rules import RuleSynthesizer
from timeline_pipeline_tests.synthesis.builders import WINDOW_END, WINDOW_START, evidence
from tools.fit_category_model import OUTPUT, fit, same_model

GOLD = Path(__file__).resolve().parents[1] / "data" / "gold"
FINDING = "the kafka broker 3 disk is at 99%"
"""Read as a finding by the vocabulary (test_rule_patterns)."""


def _model(weights: dict[str, tuple[float, ...]], margin: float = 0.5) -> CategoryModel:
    return CategoryModel(
        categories=(Category.FINDING, Category.IMPACT),
        intercepts=(0.0, 0.0),
        weights=weights,
        margin=margin,
    )


def test_probabilities_are_a_softmax_that_unknown_features_do_not_move() -> None:
    model = _model({"w:disk": (0.0, 2.0)})
    probabilities = model.probabilities({"w:disk": 1.0, "w:never-seen": 1.0})
    assert sum(probabilities.values()) == pytest.approx(1.0)
    assert probabilities[Category.IMPACT] > 0.85
    assert model.probabilities({"w:never-seen": 1.0})[Category.IMPACT] == pytest.approx(0.5)


def test_the_vocabulary_keeps_its_kind_unless_the_model_is_surer_by_the_margin() -> None:
    item = evidence(1, FINDING)
    assert _model({"w:disk": (0.0, 0.5)}).reassign(Category.FINDING, item) is Category.FINDING
    assert _model({"w:disk": (0.0, 4.0)}).reassign(Category.FINDING, item) is Category.IMPACT
    assert _model({"w:disk": (0.0, 4.0)}, margin=1.0).reassign(Category.FINDING, item) is (
        Category.FINDING
    )


def test_the_model_changes_a_facts_kind_and_never_makes_a_fact() -> None:
    model = _model({"w:disk": (0.0, 4.0), "w:lunch": (0.0, 4.0)})
    fact = read_message(evidence(1, FINDING), category_model=model)
    assert (fact.kind, fact.category) == (MessageKind.FACT, Category.IMPACT)
    chatter = read_message(evidence(2, "grabbing lunch, back in 10"), category_model=model)
    assert chatter.kind is MessageKind.NOISE


def test_the_synthesizer_uses_the_shipped_model_unless_told_not_to() -> None:
    from timeline_pipeline.synthesis.chunking import plan_chunks

    [chunk] = plan_chunks(WINDOW_START, WINDOW_END, [evidence(1, FINDING)])
    model = _model({"w:disk": (0.0, 4.0)})
    assert RuleSynthesizer().category_model is default_category_model()
    assert [e.category for e in RuleSynthesizer(category_model=None).synthesize(chunk).entries] == [
        Category.FINDING
    ]
    assert [
        e.category for e in RuleSynthesizer(category_model=model).synthesize(chunk).entries
    ] == [Category.IMPACT]


def test_a_model_with_a_row_of_the_wrong_width_is_refused() -> None:
    raw = {"categories": ["finding", "impact"], "intercepts": [0, 0], "margin": 0.5}
    with pytest.raises(ValueError, match="one value per category"):
        CategoryModel.from_json({**raw, "weights": {"w:x": [1.0]}})


def test_numbers_are_one_feature_whatever_their_value_and_terse_spelling_is_read_as_usual() -> None:
    a = category_features(evidence(1, "p99 at 38ms, cant reach the primary"))
    b = category_features(evidence(2, "p99 at 900ms, can't reach the primary"))
    assert {k for k in a if k.startswith("w:")} == {k for k in b if k.startswith("w:")}
    assert "w:<num+unit>" in a and "w:can't" in a


def test_the_shipped_model_was_fitted_on_the_tuned_set_and_the_tuning_half_only() -> None:
    """The names are written by the fitting tool; with the refit test below they say the file
    was fitted on today's tuned set and tuning half, and on no held-out transcript."""
    splits = load_splits(GOLD)
    trained_on = set(default_category_model().trained_on)
    assert trained_on == {n for n, s in splits.items() if s in (Split.TUNED, Split.TUNING)}
    assert not trained_on & {n for n, s in splits.items() if s is Split.HELD_OUT}


def test_a_refit_gives_the_shipped_model() -> None:
    """Run `python -m tools.fit_category_model` after changing the gold set or the features."""
    assert same_model(json.loads(OUTPUT.read_text(encoding="utf-8")), fit(GOLD))


def test_a_kind_the_model_does_not_know_gives_way_only_by_the_margin() -> None:
    item = evidence(1, FINDING)
    model = _model({"w:disk": (0.0, 4.0)})
    assert model.reassign(Category.DECISION, item) is Category.IMPACT
    assert _model({"w:disk": (0.0, 0.1)}, margin=0.6).reassign(Category.DECISION, item) is (
        Category.DECISION
    )


def test_a_reassigned_kind_meets_that_kinds_own_bar() -> None:
    """A finding must say something concrete: "i'll ic." stays the decision it is."""
    model = _model({"w:ic": (6.0, 0.0)})
    reading = read_message(evidence(1, "i'll ic."), category_model=model)
    assert (reading.kind, reading.category) == (MessageKind.FACT, Category.DECISION)


def test_a_refit_that_rounds_a_weight_to_zero_elsewhere_is_the_same_model() -> None:
    a = {"categories": ["finding", "impact"], "intercepts": [0.1, 0.2], "margin": 0.5}
    b = dict(a)
    assert same_model({**a, "weights": {"w:x": [0.001, 0.0]}}, {**b, "weights": {}})
    assert not same_model({**a, "weights": {"w:x": [0.5, 0.0]}}, {**b, "weights": {}})
