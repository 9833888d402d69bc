"""A deterministic synthesizer for when no model is configured (and a baseline when one is).

It reads each conversation group in order, scores every sentence against the incident vocabulary
in `lexicon`, drops what carries no fact (acknowledgements, chatter, bot output, bare links,
questions, guesses, status pings) and merges consecutive messages that state the same fact into
one entry citing all of them: one person's observation split over several messages, an impact
seen in the same place, an announced action and the report that it was done, the ask that a
decision settles. No I/O, no randomness: the same chunk always yields the same drafts, so reruns
deduplicate cleanly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Literal

from timeline_pipeline.synthesis.category_model import CategoryModel, default_category_model
from timeline_pipeline.synthesis.classify import (
    DEFAULT_MIN_SCORE,
    MessageKind,
    Reading,
    read_message,
)
from timeline_pipeline.synthesis.contract import (
    Category,
    ConversationGroup,
    DraftEntry,
    SynthesisChunk,
    SynthesisResult,
    TokenUsage,
    validate_entries,
)

__all__ = ["RULES_PROMPT_VERSION", "RuleSynthesizer"]

RULES_PROMPT_VERSION = "rules-v7"

_STATE_CATEGORIES = frozenset(
    {Category.IMPACT, Category.RECOVERY, Category.ROOT_CAUSE, Category.NEXT_STEP}
)
"""Kinds where consecutive statements in one conversation refine one fact (the service state,
the explanation, the follow-up list) rather than add a new one."""

_OBSERVATIONS = frozenset({Category.FINDING, Category.IMPACT})
"""Kinds one person's consecutive short messages often split between them."""

_MIN_SHARED_TOPICS = {Category.FINDING: 2, Category.MITIGATION: 1, Category.DECISION: 2}
"""A decision joins another only on two shared words: taking command ("I'm IC, Bea on
cert-manager") and choosing a course ("we'll go with the manual cert") often share one."""
_MIN_FINDING_OVERLAP = 0.5
"""Findings are distinct observations by default; only a near restatement joins another."""
_MIN_SHARED_ROOT_CAUSE_TOPICS = 2
_MIN_SHARED_REPEAT_TOPICS = 4
"""A restatement shares a measured value and a few words around it ("orders-db primary cpu
31%" twice); a shared value alone can be coincidence."""
_MAX_DETAIL_CHARS = 1000
_SPAN_TOPICS = frozenset({"second", "sec", "minut", "min", "hour", "last", "past", "ago"})
"""Units and spans of time are in most measured messages ("in the last 3 minutes"): two
actions sharing only one of them are not one action."""


@dataclass
class _Draft:
    """An entry being assembled from the readings that state one fact."""

    category: Category
    readings: list[Reading] = field(default_factory=list)

    @property
    def last(self) -> Reading:
        return self.readings[-1]

    @property
    def topics(self) -> frozenset[str]:
        return frozenset().union(*(reading.topics for reading in self.readings))

    def to_entry(self) -> DraftEntry:
        """Title from the most telling message (earliest on a tie), the others as detail."""
        best = max(self.readings, key=lambda r: (r.score, -self.readings.index(r)))
        others = [r.title for r in self.readings if r is not best and r.title]
        detail = "; ".join(others)[:_MAX_DETAIL_CHARS] or None
        return DraftEntry(
            title=best.title,
            category=self.category,
            occurred_at=min(r.item.occurred_at for r in self.readings),
            evidence_ids=[r.item.id for r in self.readings],
            detail=detail,
        )


def _answers(draft: _Draft, fact: Reading) -> bool:
    """Someone else replying in kind to a message elaborates that message's fact.

    A reply to one's own message is different: people use it to add the next point of a list.
    """
    parent = fact.item.parent_id
    return any(
        r.item.message_id == parent and r.item.actor_id != fact.item.actor_id
        for r in draft.readings
    )


def _aspects(draft: _Draft) -> frozenset[str]:
    return frozenset(reading.aspect for reading in draft.readings)


_MEASURE = re.compile(r"~?\d[\d,.]*(?:%|ms|s|sec|min|k|x|gb|mb)")


def _measures(topics: frozenset[str]) -> frozenset[str]:
    """Measured values ("31%", "9.5s"), not bare numbers or names with digits ("db-2")."""
    return frozenset(topic for topic in topics if _MEASURE.fullmatch(topic))


def _numbers(topics: frozenset[str]) -> frozenset[str]:
    return frozenset(topic for topic in topics if any(ch.isdigit() for ch in topic))


class RuleSynthesizer:
    """Rule-based drafts from English incident chat; deterministic and free of I/O."""

    name = "rules"
    prompt_version = RULES_PROMPT_VERSION

    def __init__(
        self,
        *,
        min_score: float = DEFAULT_MIN_SCORE,
        merge_gap: timedelta = timedelta(minutes=5),
        state_merge_gap: timedelta = timedelta(minutes=3),
        continuation_gap: timedelta = timedelta(seconds=45),
        repeat_similarity: float = 0.5,
        category_model: CategoryModel | Literal["shipped"] | None = "shipped",
    ) -> None:
        """`category_model`: the model shipped with the package by default, None for the
        vocabulary alone (the kinds of rules-v5)."""
        self.category_model = (
            default_category_model() if category_model == "shipped" else category_model
        )
        self.min_score = min_score
        self.merge_gap = merge_gap
        self.state_merge_gap = state_merge_gap
        self.continuation_gap = continuation_gap
        self.repeat_similarity = repeat_similarity

    def synthesize(self, chunk: SynthesisChunk) -> SynthesisResult:
        drafts: list[_Draft] = []
        for group in chunk.groups:
            drafts.extend(self._group_drafts(group))
        position = {item.id: index for index, item in enumerate(chunk.evidence)}
        drafts.sort(key=lambda d: position[d.readings[0].item.id])
        drafts = self._fold_repeats(drafts)
        entries = validate_entries(chunk, [draft.to_entry() for draft in drafts])
        return SynthesisResult(
            entries=entries, usage=TokenUsage(), model=self.name, prompt_version=self.prompt_version
        )

    # --- merging within one conversation -----------------------------------------------------

    def _group_drafts(self, group: ConversationGroup) -> list[_Draft]:
        drafts: list[_Draft] = []
        intents: list[Reading] = []
        previous: Reading | None = None
        for item in group.evidence:
            reading = read_message(
                item, min_score=self.min_score, category_model=self.category_model
            )
            if reading.kind is MessageKind.NOISE:
                continue
            if reading.kind is MessageKind.APPROVAL:
                approved = self._approve(drafts, previous, reading)
                if approved is not None and approved in intents:
                    intents.remove(approved)  # a draft of its own now
            elif reading.kind is MessageKind.OWNERSHIP:
                self._claim(drafts, reading)
            elif reading.kind is MessageKind.PROPOSAL and reading.category is not None:
                intents.append(reading)
            elif reading.kind is MessageKind.FACT:
                self._add_fact(drafts, reading, intents)
            previous = reading
        return drafts

    def _close_in_time(self, earlier: Reading, later: Reading) -> bool:
        return later.item.occurred_at - earlier.item.occurred_at <= self.merge_gap

    def _approve(
        self, drafts: list[_Draft], previous: Reading | None, approval: Reading
    ) -> Reading | None:
        """A go-ahead makes the plan it answers a decision; with nothing to answer it is an ack.

        Returns the proposal it turned into a draft of its own, if any.
        """
        if previous is None or not self._close_in_time(previous, approval):
            return None
        if previous.kind is MessageKind.PROPOSAL:
            # An approved offer is a decision; an approved announced action is that action.
            category = previous.category or Category.DECISION
            proposal = replace(previous, kind=MessageKind.FACT, category=category)
            drafts.append(_Draft(category, [proposal, approval]))
            return previous
        if drafts and drafts[-1].last is previous:
            if len(drafts[-1].readings) == 1 and previous.category in (
                Category.MITIGATION,
                Category.NEXT_STEP,
            ):
                drafts[-1].category = Category.DECISION
            drafts[-1].readings.append(approval)
        return None

    def _claim(self, drafts: list[_Draft], claim: Reading) -> None:
        """Taking an item of a follow-up list belongs to that list, not to a new entry."""
        for draft in reversed(drafts):
            if draft.category is Category.NEXT_STEP:
                if claim.item.occurred_at - draft.last.item.occurred_at <= 2 * self.merge_gap:
                    draft.readings.append(claim)
                return

    def _add_fact(self, drafts: list[_Draft], fact: Reading, intents: list[Reading]) -> None:
        """Join the latest recent draft of this conversation that states the same fact.

        Looking past the last draft matters because conversations interleave: a progress report
        on a rollback often follows an unrelated finding posted a minute earlier. A new action
        also takes in the announcement of it ("I'll purge the old jobs" ... "purged 118k jobs").
        """
        assert fact.category is not None
        for draft in reversed(drafts):
            if self._same_fact(draft, fact):
                draft.readings.append(fact)
                return
        announced = [
            intent
            for intent in intents
            if intent.category is fact.category
            and self._close_in_time(intent, fact)
            and intent.topics & fact.topics
        ]
        for intent in announced:
            intents.remove(intent)
        if fact.category is Category.DECISION:
            announced.extend(self._deliberation(drafts, fact))
        drafts.append(_Draft(fact.category, [*announced, fact]))

    def _deliberation(self, drafts: list[_Draft], decision: Reading) -> list[Reading]:
        """Take out the asks for an action that a decision just settled.

        "roll back pls" followed a minute later by "Decision: we roll back" is one decision,
        argued for and then made; the ask is not an action of its own.
        """
        settled = [
            draft
            for draft in drafts
            if draft.category is Category.MITIGATION
            and all(reading.requested for reading in draft.readings)
            and self._close_in_time(draft.last, decision)
            and draft.topics & decision.topics
        ]
        for draft in settled:
            drafts.remove(draft)
        return [reading for draft in settled for reading in draft.readings]

    def _continues(self, draft: _Draft, fact: Reading) -> bool:
        """The same person going on about the same kind of thing a moment later.

        People split one observation over several short messages ("7 of 12 pods: active=40" /
        "it's not draining"); read together they are one fact. Replying to oneself is not
        that: it adds the next point of a list. Neither are actions: two actions posted in a
        row by the person doing them are two actions.
        """
        last = draft.last
        return (
            fact.category in _OBSERVATIONS
            and last.item.actor_id is not None
            and last.item.actor_id == fact.item.actor_id
            and fact.item.parent_id not in {r.item.message_id for r in draft.readings}
            and fact.item.occurred_at - last.item.occurred_at <= self.continuation_gap
        )

    def _same_fact(self, draft: _Draft, fact: Reading) -> bool:
        if draft.category is not fact.category or not self._close_in_time(draft.last, fact):
            return False
        if _answers(draft, fact) or self._continues(draft, fact):
            return True
        if fact.category in _STATE_CATEGORIES:
            if fact.item.occurred_at - draft.last.item.occurred_at > self.state_merge_gap:
                return False
            # Impact statements close together are one picture only when they look at the same
            # thing: "orders/min down 35%" and "support chats up" are two impacts.
            return fact.category is not Category.IMPACT or fact.aspect in _aspects(draft)
        shared = (draft.topics & fact.topics) - _SPAN_TOPICS
        if len(shared) < _MIN_SHARED_TOPICS[fact.category]:
            return False
        if fact.category is Category.FINDING:
            smaller = min(len(draft.topics), len(fact.topics))
            return len(shared) / smaller >= _MIN_FINDING_OVERLAP
        return True

    # --- repeated status across conversations ------------------------------------------------

    def _fold_repeats(self, drafts: list[_Draft]) -> list[_Draft]:
        """A fact restated in another conversation of the chunk is support, not a new entry."""
        kept: list[_Draft] = []
        for draft in drafts:
            twin = next((k for k in kept if self._repeats(k, draft)), None)
            if twin is None:
                kept.append(draft)
            else:
                twin.readings.extend(draft.readings)
        return kept

    def _repeats(self, earlier: _Draft, later: _Draft) -> bool:
        if earlier.category is not later.category:
            return False
        a, b = earlier.topics, later.topics
        if not a or not b:
            return False
        if later.category is Category.ROOT_CAUSE and len(a & b) >= _MIN_SHARED_ROOT_CAUSE_TOPICS:
            return True  # a conclusion restated elsewhere in the chunk is the same conclusion
        shared = a & b
        if _measures(shared) and len(shared) >= _MIN_SHARED_REPEAT_TOPICS:
            return True  # the same reading ("cpu 31%") of the same thing, told twice
        if _numbers(a) and _numbers(b) and _numbers(a) != _numbers(b):
            return False  # "85%" then "96%" are two readings of a metric, not one repeated
        return len(a & b) / len(a | b) >= self.repeat_similarity
