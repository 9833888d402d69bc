"""A second reviewer's timeline is scored with the synthesizer's own matcher (bench/quality).

How far two careful reviewers agree is the level the synthesizer's figures are read against:
a reviewer who splits one fact into two loses precision exactly as the synthesizer would.
"""

from __future__ import annotations

import json
from pathlib import Path

from bench.quality.evaluation import facts_as_produced, score
from bench.quality.gold import (
    SECOND_REVIEW_FILE,
    ExpectedFact,
    load_gold_set,
    load_second_reviews,
)
from bench.quality.run import Row, _agreement, _agreement_rows
from timeline_pipeline.synthesis.contract import Category

GOLD = Path(__file__).resolve().parents[1] / "data" / "gold"


def _fact(category: Category, *ids: str) -> ExpectedFact:
    return ExpectedFact(category=category, evidence_message_ids=frozenset(ids), title="t")


def test_a_reviewer_who_writes_the_same_timeline_agrees_fully() -> None:
    gold = [_fact(Category.IMPACT, "a"), _fact(Category.DECISION, "b", "c")]
    result = score(facts_as_produced(gold), gold)
    assert (result.precision, result.recall) == (1.0, 1.0)


def test_a_reviewer_who_splits_a_fact_or_names_another_kind_loses_a_match() -> None:
    gold = [_fact(Category.FINDING, "a", "b"), _fact(Category.ROOT_CAUSE, "c")]
    theirs = [
        _fact(Category.FINDING, "a"),
        _fact(Category.FINDING, "b"),  # the same fact split in two: one of them is extra
        _fact(Category.FINDING, "c"),  # the cause called a finding: no match
    ]
    result = score(facts_as_produced(theirs), gold)
    assert (result.produced, result.expected, result.matched) == (3, 2, 1)


def test_every_second_review_cites_only_eligible_messages_of_its_transcript() -> None:
    reviews = load_second_reviews(GOLD)
    assert reviews
    transcripts = {t.name: t for t in load_gold_set(GOLD)}
    for name, facts in reviews.items():
        eligible = {item.message_id for item in transcripts[name].evidence}
        assert facts, name
        assert all(fact.evidence_message_ids <= eligible for fact in facts), name


def test_a_transcript_without_a_second_review_is_left_out(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    (tmp_path / "two" / SECOND_REVIEW_FILE).write_text(
        json.dumps([{"category": "impact", "evidence_message_ids": ["m1"], "title": "x"}])
    )
    assert list(load_second_reviews(tmp_path)) == ["two"]


def _row(name: str, produced: int, expected: int, matched: int) -> Row:
    return Row(name, 10, 10, expected, produced, matched, 0, 0, 1, 0, 1, 0, 10, 0)


def test_the_rules_are_set_beside_the_reviewer_set_by_set() -> None:
    sets = {"tuning": load_gold_set(GOLD)[:1], "held_out": load_gold_set(GOLD)[1:2]}
    first, second = sets["tuning"][0], sets["held_out"][0]
    reviews = {first.name: first.expected, second.name: first.expected[:1]}
    rules = {"tuning": [_row(first.name, 4, 4, 3)], "held_out": [_row(second.name, 2, 4, 1)]}
    agreements = _agreement(sets, reviews, rules)
    assert [(a.transcript, a.split) for a in agreements] == [
        (first.name, "tuning"),
        (second.name, "held_out"),
    ]
    assert agreements[0].reviewer.matched == len(first.expected)
    table = _agreement_rows(agreements)
    assert [row.figure for row in table] == [
        "rules precision, tuning half, the 1 a second reviewer also read",
        "rules recall, tuning half, the 1 a second reviewer also read",
        "rules precision, held-out half, the 1 a second reviewer also read",
        "rules recall, held-out half, the 1 a second reviewer also read",
    ]
    assert table[1].value == 0.75 and table[1].baseline_value == 1.0


def test_no_second_review_gives_no_rows() -> None:
    assert _agreement_rows([]) == []


def test_a_fact_found_with_another_kind_counts_only_when_the_kind_is_ignored() -> None:
    gold = [_fact(Category.ROOT_CAUSE, "a"), _fact(Category.IMPACT, "b")]
    drafts = facts_as_produced([_fact(Category.FINDING, "a"), _fact(Category.IMPACT, "b")])
    assert score(drafts, gold).matched == 1
    assert score(drafts, gold, any_kind=True).matched == 2
