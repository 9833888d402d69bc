"""Scoring a synthesizer against a hand-written timeline, the way a reviewer would.

An output entry counts as right when it has the expected kind and rests on at least one of the
messages the expected fact rests on; each expected fact can be claimed once. Matching is a
maximum bipartite matching, so the score does not depend on the order entries come out in.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from bench.quality.gold import ExpectedFact, NegativeExample
from bench.window import WINDOW
from timeline_pipeline.domain.window_keys import window_start_of
from timeline_pipeline.synthesis.chunking import ChunkLimits, plan_chunks
from timeline_pipeline.synthesis.contract import (
    Category,
    DraftEntry,
    EvidenceItem,
    SynthesisChunk,
    Synthesizer,
)
from timeline_pipeline.synthesis.token_estimate import estimate_total_tokens

__all__ = [
    "CategoryScore",
    "ProducedFact",
    "Score",
    "WindowedRun",
    "category_scores",
    "drafted_negatives",
    "facts_as_produced",
    "match_facts",
    "run_windows",
    "score",
]


@dataclass(frozen=True)
class ProducedFact:
    """An output entry seen through the message ids of the evidence it cites."""

    category: Category
    message_ids: frozenset[str]
    title: str


@dataclass(frozen=True)
class Score:
    produced: int
    expected: int
    matched: int

    @property
    def precision(self) -> float:
        return self.matched / self.produced if self.produced else 1.0

    @property
    def recall(self) -> float:
        return self.matched / self.expected if self.expected else 1.0

    def __add__(self, other: Score) -> Score:
        return Score(
            self.produced + other.produced,
            self.expected + other.expected,
            self.matched + other.matched,
        )


@dataclass(frozen=True)
class WindowedRun:
    """What running a synthesizer over a transcript window by window produced and cost."""

    entries: list[DraftEntry]
    chunks: list[SynthesisChunk]

    @property
    def estimated_prompt_tokens(self) -> int:
        return sum(
            estimate_total_tokens(chunk.evidence) + estimate_total_tokens(chunk.context)
            for chunk in self.chunks
        )


def run_windows(
    evidence: Sequence[EvidenceItem],
    synthesizer: Synthesizer,
    *,
    window: timedelta = WINDOW,
    limits: ChunkLimits | None = None,
) -> WindowedRun:
    """Feed evidence to a synthesizer as the pipeline would: window by window, chunk by chunk."""
    ordered = sorted(evidence, key=lambda item: (item.occurred_at, item.id))
    by_window: dict[datetime, list[EvidenceItem]] = {}
    for item in ordered:
        by_window.setdefault(window_start_of(item.occurred_at, window), []).append(item)
    entries: list[DraftEntry] = []
    chunks: list[SynthesisChunk] = []
    for start, items in sorted(by_window.items()):
        for chunk in plan_chunks(
            start, start + window, items, limits=limits, context_candidates=ordered
        ):
            chunks.append(chunk)
            entries.extend(synthesizer.synthesize(chunk).entries)
    return WindowedRun(entries=entries, chunks=chunks)


def facts_as_produced(facts: Iterable[ExpectedFact]) -> list[ProducedFact]:
    """A reviewer's timeline seen as output, so that it is scored like the synthesizer's."""
    return [
        ProducedFact(
            category=fact.category, message_ids=fact.evidence_message_ids, title=fact.title
        )
        for fact in facts
    ]


def produced_facts(
    entries: Iterable[DraftEntry], message_id_of: dict[int, str]
) -> list[ProducedFact]:
    return [
        ProducedFact(
            category=entry.category,
            message_ids=frozenset(message_id_of[i] for i in entry.evidence_ids),
            title=entry.title,
        )
        for entry in entries
    ]


def match_facts(
    produced: Sequence[ProducedFact],
    expected: Sequence[ExpectedFact],
    *,
    any_kind: bool = False,
) -> dict[int, int]:
    """Maximum matching from produced index to expected index (Kuhn's augmenting paths).

    `any_kind` matches on the messages alone: whether the fact was found at all, whatever kind
    it was given (bench/quality/NOTES.md reads the two apart).
    """
    edges = [
        [
            j
            for j, fact in enumerate(expected)
            if (any_kind or fact.category is entry.category)
            and fact.evidence_message_ids & entry.message_ids
        ]
        for entry in produced
    ]
    owner: dict[int, int] = {}

    def claim(i: int, seen: set[int]) -> bool:
        for j in edges[i]:
            if j in seen:
                continue
            seen.add(j)
            if j not in owner or claim(owner[j], seen):
                owner[j] = i
                return True
        return False

    for i in range(len(produced)):
        claim(i, set())
    return {i: j for j, i in owner.items()}


def drafted_negatives(
    produced: Sequence[ProducedFact], negatives: Sequence[NegativeExample]
) -> list[NegativeExample]:
    """The negative examples drafted as their kind: an entry of that kind that rests on the
    message and on nothing but negative examples of the kind. An entry that also rests on the
    fact itself (an acknowledgement folded into the roster it precedes) is not counted."""
    banned: dict[Category, set[str]] = {}
    for negative in negatives:
        banned.setdefault(negative.category, set()).add(negative.message_id)
    return [
        negative
        for negative in negatives
        if any(
            fact.category is negative.category
            and negative.message_id in fact.message_ids
            and fact.message_ids <= banned[negative.category]
            for fact in produced
        )
    ]


def score(
    produced: Sequence[ProducedFact],
    expected: Sequence[ExpectedFact],
    *,
    any_kind: bool = False,
) -> Score:
    return Score(
        produced=len(produced),
        expected=len(expected),
        matched=len(match_facts(produced, expected, any_kind=any_kind)),
    )


@dataclass(frozen=True)
class CategoryScore(Score):
    """A score restricted to one kind of fact: which kinds the synthesizer misses or overdraws."""

    def __add__(self, other: Score) -> CategoryScore:
        total = Score.__add__(self, other)
        return CategoryScore(total.produced, total.expected, total.matched)


def category_scores(
    produced: Sequence[ProducedFact], expected: Sequence[ExpectedFact]
) -> dict[Category, CategoryScore]:
    """Precision and recall per category, from the same matching as the overall score.

    A match only ever pairs facts of one category, so the per-category figures add up to the
    overall one.
    """
    matching = match_facts(produced, expected)
    return {
        category: CategoryScore(
            produced=sum(fact.category is category for fact in produced),
            expected=sum(fact.category is category for fact in expected),
            matched=sum(produced[i].category is category for i in matching),
        )
        for category in Category
    }
