"""The rule synthesizer against hand-written incident timelines (the gold set).

Transcripts go through the product's own Lark normalizer, then 10-minute windows and chunks as
in production. An output entry matches an expected fact when the category is equal and they
share at least one supporting message; each expected fact is matched at most once.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.quality.evaluation import (
    CategoryScore,
    ProducedFact,
    Score,
    category_scores,
    drafted_negatives,
    match_facts,
    produced_facts,
    run_windows,
    score,
)
from bench.quality.gold import (
    ExpectedFact,
    GoldTranscript,
    NegativeExample,
    Split,
    load_gold_set,
    load_languages,
    load_splits,
    transcript_from_records,
)
from timeline_pipeline.demo_data import (
    load_expected_facts,
    load_messages,
    load_negative_examples,
)
from timeline_pipeline.synthesis.contract import Category
from timeline_pipeline.synthesis.rules import RuleSynthesizer

GOLD = Path(__file__).resolve().parents[1] / "data" / "gold"
MIN_PRECISION = 0.8
MIN_RECALL = 0.8
TUNED_MIN_PRECISION = 0.88
TUNED_MIN_RECALL = 0.95
"""The tuned set may not fall below what it scored before the structural cues were added."""
TUNING_FLOORS = {"en": (0.85, 0.78), "mixed": (0.85, 0.85), "zh": (0.85, 0.78)}
"""Per language (`languages.json`), precision and recall. The English tuning transcripts scored
0.89 / 0.81 with rules-v6 (their last four 0.53 / 0.40 under rules-v5 before they were tuned
on); the Chinese and mixed ones were added with issue 33's Chinese cues (bench/quality/NOTES.md,
"Chinese and mixed chats": 0.91 / 0.92 and 0.92 / 0.85 after it, tuned on)."""
HELD_OUT_FLOOR_PRECISION = 0.55
HELD_OUT_FLOOR_RECALL = 0.5
"""A regression floor under the measured held-out figures (the eight transcripts of rounds one
to three: 0.60 / 0.53 under rules-v4, 0.59 / 0.54 under rules-v5, 0.63 / 0.58 under rules-v6;
with the eight Chinese and mixed ones of issue 33, sixteen: 0.69 / 0.64),
not the 0.80 target: bench/quality reports the target and whether it is met. Raising these
numbers by changing a rule for a held-out miss is what the split forbids
(bench/quality/NOTES.md)."""
HELD_OUT_FLOORS = {"en": (0.55, 0.5), "mixed": (0.65, 0.6), "zh": (0.6, 0.52)}
"""Per language, under the figures measured when the Chinese cues were added (en 0.62 / 0.56, mixed
0.75 / 0.71, zh 0.71 / 0.62; before them mixed 0.62 / 0.48, zh 0.68 / 0.36): a regression floor,
not a target (bench/quality/NOTES.md, "Chinese and mixed chats")."""
HELD_OUT_MIN_PRECISION = 0.6
HELD_OUT_MIN_RECALL = 0.6
"""The bundled demo chat was written independently of the rules: a floor, not a tuning target."""


@pytest.fixture(scope="module")
def gold() -> list[GoldTranscript]:
    """The transcripts the rules were first developed against."""
    return load_gold_set(GOLD, split=Split.TUNED)


@pytest.fixture(scope="module")
def every_transcript() -> list[GoldTranscript]:
    return load_gold_set(GOLD)


def _score(transcript: GoldTranscript) -> Score:
    run = run_windows(transcript.evidence, RuleSynthesizer())
    return score(
        produced_facts(run.entries, transcript.message_id_by_evidence_id()), transcript.expected
    )


def test_rule_synthesizer_meets_the_quality_bar_on_the_gold_set(
    gold: list[GoldTranscript],
) -> None:
    total = sum((_score(t) for t in gold), Score(0, 0, 0))
    assert total.precision >= MIN_PRECISION, total
    assert total.recall >= MIN_RECALL, total


def test_the_tuned_set_keeps_its_figures(gold: list[GoldTranscript]) -> None:
    total = sum((_score(t) for t in gold), Score(0, 0, 0))
    assert total.precision >= TUNED_MIN_PRECISION, total
    assert total.recall >= TUNED_MIN_RECALL, total


@pytest.mark.parametrize("language", sorted(TUNING_FLOORS))
def test_the_tuning_half_meets_its_bar_in_every_language(language: str) -> None:
    languages = load_languages(GOLD)
    tuning = load_gold_set(GOLD, split=Split.TUNING)
    part = [t for t in tuning if languages.get(t.name, "en") == language]
    assert part
    total = sum((_score(t) for t in part), Score(0, 0, 0))
    precision, recall = TUNING_FLOORS[language]
    assert total.precision >= precision, total
    assert total.recall >= recall, total


def test_the_held_out_half_stays_above_its_floor_with_every_category_hit() -> None:
    held_out = load_gold_set(GOLD, split=Split.HELD_OUT)
    total = sum((_score(t) for t in held_out), Score(0, 0, 0))
    assert total.precision >= HELD_OUT_FLOOR_PRECISION, total
    assert total.recall >= HELD_OUT_FLOOR_RECALL, total
    hit: set[Category] = set()
    for transcript in held_out:
        run = run_windows(transcript.evidence, RuleSynthesizer())
        produced = produced_facts(run.entries, transcript.message_id_by_evidence_id())
        hit.update(
            c for c, s in category_scores(produced, transcript.expected).items() if s.matched
        )
    assert hit == set(Category)


@pytest.mark.parametrize("language", sorted(HELD_OUT_FLOORS))
def test_the_held_out_half_stays_above_its_floor_in_every_language(language: str) -> None:
    languages = load_languages(GOLD)
    held_out = load_gold_set(GOLD, split=Split.HELD_OUT)
    part = [t for t in held_out if languages.get(t.name, "en") == language]
    assert part
    total = sum((_score(t) for t in part), Score(0, 0, 0))
    precision, recall = HELD_OUT_FLOORS[language]
    assert total.precision >= precision, total
    assert total.recall >= recall, total


def test_no_single_transcript_is_far_below_the_bar(gold: list[GoldTranscript]) -> None:
    for transcript in gold:
        result = _score(transcript)
        assert result.precision >= MIN_PRECISION - 0.1, (transcript.name, result)
        assert result.recall >= MIN_RECALL - 0.1, (transcript.name, result)


def test_rule_synthesizer_generalises_to_the_held_out_demo_chat() -> None:
    held_out = transcript_from_records("demo", load_messages(), load_expected_facts())
    result = _score(held_out)
    assert result.precision >= HELD_OUT_MIN_PRECISION, result
    assert result.recall >= HELD_OUT_MIN_RECALL, result


def test_the_demo_chat_drafts_none_of_its_negative_examples() -> None:
    """An acknowledgement ("ok I'm on. I'll take IC") and an agreement with no subject of its
    own ("yep, thats why we see US errors too") are no decisions (demo_data's
    negative_examples.json)."""
    demo = transcript_from_records(
        "demo", load_messages(), load_expected_facts(), load_negative_examples()
    )
    assert len(demo.negatives) >= 2
    run = run_windows(demo.evidence, RuleSynthesizer())
    produced = produced_facts(run.entries, demo.message_id_by_evidence_id())
    assert drafted_negatives(produced, demo.negatives) == []


def test_a_negative_example_counts_only_when_a_draft_of_its_kind_rests_on_nothing_else() -> None:
    ack = NegativeExample(Category.DECISION, "om_ack", "an acknowledgement")

    def drafted(category: Category, *message_ids: str) -> list[NegativeExample]:
        fact = ProducedFact(category=category, message_ids=frozenset(message_ids), title="t")
        return drafted_negatives([fact], [ack])

    assert drafted(Category.DECISION, "om_ack") == [ack]
    assert drafted(Category.DECISION, "om_ack", "om_roster") == []  # folded into the decision
    assert drafted(Category.FINDING, "om_ack") == []  # only the kind it is not


def test_a_transcript_from_records_is_read_like_one_from_disk(
    gold: list[GoldTranscript],
) -> None:
    directory = GOLD / gold[0].name
    lines = (directory / "messages.jsonl").read_text().splitlines()
    expected = json.loads((directory / "expected.json").read_text())
    again = transcript_from_records(gold[0].name, [json.loads(line) for line in lines], expected)
    assert again == gold[0]


# --- the gold set itself -------------------------------------------------------------------


def test_gold_set_has_at_least_three_different_incidents(
    every_transcript: list[GoldTranscript],
) -> None:
    assert len(every_transcript) >= 3
    speakers = [{item.actor_id for item in t.evidence} for t in every_transcript]
    assert all(a.isdisjoint(b) for i, a in enumerate(speakers) for b in speakers[i + 1 :])


def test_every_transcript_has_a_split_and_both_new_halves_are_populated() -> None:
    names = sorted(p.name for p in GOLD.iterdir() if p.is_dir())
    splits = load_splits(GOLD)
    assert sorted(splits) == names
    assert sum(s is Split.TUNING for s in splits.values()) >= 4
    assert sum(s is Split.HELD_OUT for s in splits.values()) >= 4


def test_a_split_selects_only_its_transcripts() -> None:
    splits = load_splits(GOLD)
    held_out = load_gold_set(GOLD, split=Split.HELD_OUT)
    assert held_out
    assert all(splits[t.name] is Split.HELD_OUT for t in held_out)


_TUNED_NAMES = sorted(name for name, split in load_splits(GOLD).items() if split is Split.TUNED)
_NEW_NAMES = sorted(name for name, split in load_splits(GOLD).items() if split is not Split.TUNED)


@pytest.mark.parametrize("name", _NEW_NAMES)
def test_new_transcript_is_a_realistic_chat(name: str) -> None:
    """The newer transcripts are shorter (terse chats end quickly) but carry the same mess:
    bot cards, images, a thread, a reply, an edit and a mention."""
    lines = (GOLD / name / "messages.jsonl").read_text(encoding="utf-8").splitlines()
    items = [json.loads(line) for line in lines]
    assert 20 <= len(items) <= 150
    times = [int(item["create_time"]) for item in items]
    assert times == sorted(times)
    assert 20 <= (times[-1] - times[0]) / 60_000 <= 90
    assert len({item["message_id"] for item in items}) == len(items)
    assert {"text", "interactive", "image"} <= {item["msg_type"] for item in items}
    assert any(item["sender"]["sender_type"] == "app" for item in items)
    assert any(item.get("thread_id") for item in items)
    assert any(item.get("parent_id") and not item.get("thread_id") for item in items)
    assert any(item["updated"] and item["update_time"] > item["create_time"] for item in items)
    assert any(item["mentions"] for item in items)


@pytest.mark.parametrize("name", _TUNED_NAMES)
def test_transcript_is_realistic(name: str) -> None:
    lines = (GOLD / name / "messages.jsonl").read_text().splitlines()
    items = [json.loads(line) for line in lines]
    assert 60 <= len(items) <= 150
    times = [int(item["create_time"]) for item in items]
    assert times == sorted(times)
    assert 40 <= (times[-1] - times[0]) / 60_000 <= 90
    assert len({item["message_id"] for item in items}) == len(items)
    types = {item["msg_type"] for item in items}
    assert {"text", "interactive", "image"} <= types
    assert any(item["sender"]["sender_type"] == "app" for item in items)
    assert any(item.get("thread_id") for item in items)
    assert any(item.get("parent_id") and not item.get("thread_id") for item in items)
    assert any(item["updated"] and item["update_time"] > item["create_time"] for item in items)
    assert any(item["mentions"] for item in items)


def test_expected_facts_rest_on_eligible_messages_of_their_transcript(
    every_transcript: list[GoldTranscript],
) -> None:
    for transcript in every_transcript:
        eligible = {item.message_id for item in transcript.evidence}
        assert transcript.expected
        for fact in transcript.expected:
            assert isinstance(fact, ExpectedFact)
            assert fact.evidence_message_ids, fact.title
            assert fact.evidence_message_ids <= eligible, fact.title
        assert {fact.category for fact in transcript.expected} == set(Category)


def test_matching_claims_each_expected_fact_once() -> None:
    fact = ExpectedFact(Category.MITIGATION, frozenset({"om_1", "om_2"}), "rolled back")
    produced = [
        ProducedFact(Category.MITIGATION, frozenset({"om_1"}), "rolling back"),
        ProducedFact(Category.MITIGATION, frozenset({"om_2"}), "rollback done"),
        ProducedFact(Category.DECISION, frozenset({"om_1"}), "decided to roll back"),
    ]
    assert match_facts(produced, [fact]) in ({0: 0}, {1: 0})
    assert score(produced, [fact]) == Score(produced=3, expected=1, matched=1)


def test_category_scores_split_the_overall_score_by_kind() -> None:
    expected = [
        ExpectedFact(Category.MITIGATION, frozenset({"om_1"}), "rolled back"),
        ExpectedFact(Category.FINDING, frozenset({"om_2"}), "pool exhausted"),
    ]
    produced = [
        ProducedFact(Category.MITIGATION, frozenset({"om_1"}), "rolled back"),
        ProducedFact(Category.FINDING, frozenset({"om_3"}), "chatter"),
        ProducedFact(Category.IMPACT, frozenset({"om_2"}), "pool exhausted"),
    ]
    by_kind = category_scores(produced, expected)
    assert by_kind[Category.MITIGATION] == CategoryScore(produced=1, expected=1, matched=1)
    assert by_kind[Category.FINDING] == CategoryScore(produced=1, expected=1, matched=0)
    assert by_kind[Category.IMPACT].precision == 0.0
    assert sum(by_kind.values(), CategoryScore(0, 0, 0)) == CategoryScore(3, 2, 1)
    assert score(produced, expected) == Score(3, 2, 1)
