"""Reading one chat message: is it a fact, and of which kind, or something else entirely?

The rule synthesizer first reads every message on its own (this module) and only then decides
which messages state the same fact (`rules`). Keeping the two apart means the vocabulary scoring
can be tested sentence by sentence, and the merging with readings built by hand.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from timeline_pipeline.synthesis import lexicon
from timeline_pipeline.synthesis.models import Category, EvidenceItem
from timeline_pipeline.synthesis.text import (
    clean_text,
    make_title,
    sentences,
    strip_links,
    topic_words,
    word_count,
)

__all__ = ["DEFAULT_MIN_SCORE", "MessageKind", "Reading", "read_message", "score_sentence"]

DEFAULT_MIN_SCORE = 2.5
"""A single strong cue (about 3) passes; a lone weak cue or bare technical jargon does not."""

_TEXT_TYPES = frozenset({"text", "post"})
_ACK_TOKEN = re.compile(r"[^\w+']+")
_MAX_ACK_WORDS = 6
_MAX_CLAIM_WORDS = 10
_MAX_TECHNICAL_BONUS = 1.5
_TECHNICAL_BONUS_EACH = 0.5
_HEDGE_PENALTY = 2.5
_PARTIAL_PENALTY = 3.0
_FINDING_MARGIN = 1.0
"""Finding is the generic kind: a specific kind wins unless finding is clearly stronger."""


class MessageKind(Enum):
    """What a message does in the conversation."""

    NOISE = "noise"  # acknowledgement, chatter, bot output, bare link, question
    FACT = "fact"  # states something timeline-worthy
    APPROVAL = "approval"  # a bare go-ahead for what was just proposed
    OWNERSHIP = "ownership"  # someone claiming an item of a list just posted
    PROPOSAL = "proposal"  # an offer that becomes a decision only once accepted


@dataclass(frozen=True)
class Reading:
    """What one message says, as far as the rules can tell."""

    item: EvidenceItem
    kind: MessageKind
    category: Category | None = None
    score: float = 0.0
    title: str = ""
    topics: frozenset[str] = frozenset()


def _is_acknowledgement(cleaned: str) -> bool:
    tokens = [t for t in _ACK_TOKEN.split(cleaned.lower()) if t]
    return len(tokens) <= _MAX_ACK_WORDS and all(t in lexicon.ACK_WORDS for t in tokens)


def _is_chatter(sentence: str) -> bool:
    return any(
        pattern.search(sentence)
        for pattern in (lexicon.SOCIAL, lexicon.SCHEDULING, lexicon.COORDINATION, lexicon.COMMS)
    )


def score_sentence(sentence: str) -> tuple[Category | None, float]:
    """The best category for one sentence and its score; questions and chatter score nothing."""
    if sentence.rstrip().endswith("?") or _is_chatter(sentence):
        return None, 0.0
    scores = {
        category: sum(cue.weight for cue in cues if cue.pattern.search(sentence))
        for category, cues in lexicon.CATEGORY_CUES.items()
    }
    if lexicon.HEDGE.search(sentence):
        # Something considered has not happened: it is neither an action nor a recovery.
        for category in (Category.MITIGATION, Category.DECISION, Category.RECOVERY):
            scores[category] -= _HEDGE_PENALTY
    technical = {m.group(0).lower() for m in lexicon.TECHNICAL_TOKEN.finditer(sentence)}
    scores[Category.FINDING] += min(_MAX_TECHNICAL_BONUS, _TECHNICAL_BONUS_EACH * len(technical))
    if scores[Category.RECOVERY] > 0 and lexicon.PARTIAL.search(sentence):
        scores[Category.RECOVERY] -= _PARTIAL_PENALTY
        scores[Category.FINDING] += 1.0
    scores[Category.FINDING] -= _FINDING_MARGIN
    best = max(
        lexicon.CATEGORY_PRIORITY,
        key=lambda c: (scores[c], -lexicon.CATEGORY_PRIORITY.index(c)),
    )
    if best is Category.FINDING:
        return best, scores[best] + _FINDING_MARGIN
    return best, scores[best]


def _best_sentence(cleaned: str) -> tuple[Category | None, float]:
    best: tuple[Category | None, float] = (None, 0.0)
    for sentence in sentences(cleaned):
        category, score = score_sentence(sentence)
        if category is not None and score > best[1]:
            best = (category, score)
    return best


def read_message(item: EvidenceItem, *, min_score: float = DEFAULT_MIN_SCORE) -> Reading:
    """Classify one message on its own, before any merging."""
    noise = Reading(item=item, kind=MessageKind.NOISE)
    if item.message_type not in _TEXT_TYPES or lexicon.BOT_NOTIFICATION.search(item.text):
        return noise
    cleaned = clean_text(item.text)
    words = word_count(cleaned)
    if words == 0:
        return noise
    title = make_title(cleaned)
    if lexicon.APPROVAL.match(cleaned):
        return Reading(item=item, kind=MessageKind.APPROVAL, title=title)
    if _is_acknowledgement(cleaned):
        return noise
    if strip_links(item.text) != item.text and words < 4:
        return noise  # a link with a label is a pointer, not a fact
    topics = topic_words(cleaned)
    category, score = _best_sentence(cleaned)
    strong = category is not None and score >= min_score
    if (
        words <= _MAX_CLAIM_WORDS
        and lexicon.OWNERSHIP_CLAIM.search(cleaned)
        and not (strong and category is Category.DECISION)
    ):
        return Reading(item=item, kind=MessageKind.OWNERSHIP, title=title, topics=topics)
    # An offer ("I can run the cleanup") is not a fact until someone accepts it.
    if lexicon.PROPOSAL.search(cleaned) and category in (None, Category.FINDING):
        return Reading(item=item, kind=MessageKind.PROPOSAL, title=title, topics=topics)
    if strong:
        return Reading(item, MessageKind.FACT, category, score, title, topics)
    return noise
