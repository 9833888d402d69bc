"""Reading one chat message: is it a fact, and of which kind, or something else entirely?

The rule synthesizer first reads every message on its own (this module) and only then decides
which messages state the same fact (`rules`). Keeping the two apart means the vocabulary scoring
can be tested sentence by sentence, and the merging with readings built by hand.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from timeline_pipeline.domain.message_types import AI_TEXT_TYPES
from timeline_pipeline.synthesis import lexicon, lexicon_zh
from timeline_pipeline.synthesis.category_model import CategoryModel
from timeline_pipeline.synthesis.contract import Category, EvidenceItem
from timeline_pipeline.synthesis.segment import segmented
from timeline_pipeline.synthesis.text import (
    casual_spelling,
    cjk_count,
    clean_text,
    keep_sentences,
    make_title,
    sentences,
    strip_links,
    topic_words,
    word_count,
)

__all__ = [
    "DEFAULT_MIN_SCORE",
    "MessageKind",
    "Reading",
    "impact_aspect",
    "is_substantive",
    "read_message",
    "score_sentence",
]

DEFAULT_MIN_SCORE = 2.5
"""A single strong cue (about 3) passes; a lone weak cue or bare technical jargon does not."""

_ACK_TOKEN = re.compile(r"[^\w+']+")
_MAX_ACK_WORDS = 6
_MAX_CLAIM_WORDS = 10
_MAX_TECHNICAL_BONUS = 1.5
_TECHNICAL_BONUS_EACH = 0.5
_HEDGE_PENALTY = 2.5
_PARTIAL_PENALTY = 3.0
_PENDING_PENALTY = 5.0
_MIN_PLAIN_WORDS = 4
"""An observation needs substance: something concrete (a number, a name, an infrastructure or
business noun) or, failing that, four content words."""
_SPECIFIC_CUE = 3.5
_RESULT_DISCOUNT = 1.0
"""An action told first outweighs the reading after it by this much ("pinned the image, 0
restarts since" is the action with its result)."""
_FALL_FACTOR = 5.0
_FALL_BONUS = 4.5
_ROSTER_SCORE = 6.0
"""As sure as a labelled decision: a roster is laid out to be read as one."""
_MENTION_SIGN = re.compile(r"@(?=\w)")
_MIN_CJK_CHARS = 6
"""A Chinese clause of this many characters says something beyond a status reading."""
_MAX_FINDING_CUES = 4.0
_FINDING_MARGIN = 1.0
"""Finding is the generic kind: a specific kind wins unless finding is clearly stronger."""
_FINDING_EXTRA_SCORE = 0.5
"""For the same reason a finding needs a little more than the other kinds to be a fact: one
observation cue plus a single bit of jargon ("seeing more 200s") is chatter about a graph, an
observation with a second cue or a few concrete details is a finding."""


class MessageKind(Enum):
    """What a message does in the conversation."""

    NOISE = "noise"  # acknowledgement, chatter, bot output, bare link, question
    FACT = "fact"  # states something timeline-worthy
    APPROVAL = "approval"  # a bare go-ahead for what was just proposed
    OWNERSHIP = "ownership"  # someone claiming an item of a list just posted
    PROPOSAL = "proposal"  # an offer (a decision once accepted) or an announced action


@dataclass(frozen=True)
class Reading:
    """What one message says, as far as the rules can tell."""

    item: EvidenceItem
    kind: MessageKind
    category: Category | None = None
    score: float = 0.0
    title: str = ""
    topics: frozenset[str] = frozenset()
    aspect: str = ""
    """For impact: where the impact is seen (`reports`, `business` or `service`)."""
    requested: bool = False
    """For an action: it was asked for ("roll back pls"), not reported as done."""


def _is_acknowledgement(cleaned: str) -> bool:
    if cjk_count(cleaned):
        # "收到", "好的我看一下", "在看了": read word by word on the segmented text.
        return bool(lexicon_zh.ACKNOWLEDGEMENT.match(cleaned))
    tokens = [t for t in _ACK_TOKEN.split(cleaned.lower()) if t]
    return len(tokens) <= _MAX_ACK_WORDS and all(t in lexicon.ACK_WORDS for t in tokens)


def _is_question(sentence: str) -> bool:
    """A question mark (half or full width), or a Chinese question without one ("是不是 DNS
    导致 的", "恢复 了 吗")."""
    if sentence.rstrip().endswith(("?", "\uff1f")):
        return True
    return bool(cjk_count(sentence)) and bool(lexicon_zh.QUESTION.search(sentence))


def _either(english: re.Pattern[str], chinese: re.Pattern[str], sentence: str) -> bool:
    """The English pattern, or for a sentence with Chinese in it the Chinese one too."""
    if english.search(sentence):
        return True
    return bool(cjk_count(sentence)) and bool(chinese.search(sentence))


def _is_roster(text: str) -> bool:
    """One line per role, each naming its person, the incident commander among them."""
    return bool(lexicon.ROSTER_COMMAND.search(text)) and (
        len(lexicon.ROSTER_ROLE.findall(text)) >= lexicon.MIN_ROSTER_ROLES
    )


def _is_chatter(sentence: str) -> bool:
    """Social talk, scheduling, coordination or comms, unless it carries a measurement.

    "ingest at 9.1k fixes/s, which is normal for Friday dinner" reports a value; the day and
    the meal are context. Coordination and comms stay chatter whatever they quote.
    """
    if _either(lexicon.COORDINATION, lexicon_zh.COORDINATION, sentence) or _either(
        lexicon.COMMS, lexicon_zh.COMMS, sentence
    ):
        return True
    if not (
        _either(lexicon.SOCIAL, lexicon_zh.SOCIAL, sentence) or lexicon.SCHEDULING.search(sentence)
    ):
        return False
    return not lexicon.UNIT_MEASURE.search(sentence)


_NEGATABLE = frozenset({Category.MITIGATION, Category.RECOVERY})
_NEGATABLE_ZH = frozenset({Category.MITIGATION, Category.RECOVERY, Category.ROOT_CAUSE})
"""In Chinese a cause is denied the same way ("不是 DNS 导致 的")."""
_CLAUSE_BREAK = re.compile(r"[\uff0c,\u3002\uff1b;\uff01!\uff1f?]")


def _cue_weight(cue: lexicon.Cue, sentence: str, category: Category) -> float:
    """A cue's weight when it matches; an action or recovery that is negated did not happen."""
    match = cue.pattern.search(sentence)
    if match is None:
        return 0.0
    before = sentence[: match.start()]
    if category in _NEGATABLE and lexicon.NEGATION.search(before):
        return 0.0
    if category in _NEGATABLE_ZH and cjk_count(sentence):
        clause = _CLAUSE_BREAK.split(before)[-1]
        if lexicon_zh.NEGATION.search(clause):
            return 0.0
    return cue.weight


def _cues(sentence: str) -> dict[Category, tuple[lexicon.Cue, ...]]:
    """The English cues, and the Chinese ones too for a sentence with Chinese in it."""
    if not cjk_count(sentence):
        return lexicon.CATEGORY_CUES
    return _BOTH_CUES


_BOTH_CUES = {
    category: (*cues, *lexicon_zh.CATEGORY_CUES.get(category, ()))
    for category, cues in lexicon.CATEGORY_CUES.items()
}


def _falls_far(sentence: str) -> bool:
    """A bad metric going from one value to a much smaller one in the same unit."""
    if not lexicon.BAD_METRIC.search(sentence):
        return False
    for match in lexicon.VALUE_CHANGE.finditer(sentence):
        before, after = float(match["before"]), float(match["after"])
        same_unit = (match["unit"] or "") == (match["unit2"] or "")
        if same_unit and before > 0 and after * _FALL_FACTOR <= before:
            return True
    return False


def score_sentence(sentence: str) -> tuple[Category | None, float]:
    """The best category for one sentence and its score; questions and chatter score nothing."""
    sentence = lexicon.LEADING_ASIDE.sub("", sentence)
    if _is_question(sentence) or _is_chatter(sentence):
        return None, 0.0
    if lexicon.ASK.search(sentence):
        return None, 0.0
    if lexicon.ALTERNATIVES.search(sentence):
        return None, 0.0
    if cjk_count(sentence) and lexicon_zh.CONDITION.search(sentence):
        return None, 0.0
    scores = {
        category: sum(_cue_weight(cue, sentence, category) for cue in cues)
        for category, cues in _cues(sentence).items()
    }
    chinese = bool(cjk_count(sentence))
    if chinese and lexicon_zh.UNKNOWN_CAUSE.search(sentence):
        # "root cause 还没找到": the cause is named as not known yet.
        scores[Category.ROOT_CAUSE] = min(scores[Category.ROOT_CAUSE], 0.0)
    if chinese and lexicon_zh.SPECULATION.search(sentence):
        # "可能 是 DNS 导致 的": a guess at the cause is not the cause, however it is worded.
        scores[Category.ROOT_CAUSE] = min(scores[Category.ROOT_CAUSE], 0.0)
    if _either(lexicon.HEDGE, lexicon_zh.HEDGE, sentence):
        # Something considered has not happened: it is neither an action nor a recovery.
        for category in (Category.MITIGATION, Category.DECISION, Category.RECOVERY):
            scores[category] -= _HEDGE_PENALTY
    if chinese and lexicon_zh.HISTORY.search(sentence):
        # "昨晚 22:10 发布 了 新 配置": a change told as history is a finding about it.
        scores[Category.MITIGATION] = min(scores[Category.MITIGATION], 0.0)
    if _either(lexicon.FRONTED_REASON, lexicon_zh.FRONTED_REASON, sentence):
        # "Because X is off, replay has been paused": the state is explained, not changed.
        for category in (Category.MITIGATION, Category.DECISION):
            scores[category] -= _HEDGE_PENALTY
    if _either(lexicon.SPECULATION, lexicon_zh.SPECULATION, sentence):
        # A guess or a prediction is not an observation either.
        for category in (Category.IMPACT, Category.FINDING, Category.RECOVERY):
            scores[category] -= _HEDGE_PENALTY
    if _falls_far(sentence):
        # "errors 38% -> 0.2%": a bad metric down by a large factor is the service recovering,
        # whatever the metric is called; the failure words in it are not a new impact.
        scores[Category.RECOVERY] += _FALL_BONUS
        scores[Category.IMPACT] -= _FALL_BONUS
    if lexicon.OPENING_ACTION.search(sentence) and scores[Category.MITIGATION] > 0:
        # "pinned the image, 0 restarts since": the action is the fact, the reading its result.
        scores[Category.RECOVERY] -= _RESULT_DISCOUNT
    if _either(lexicon.PENDING, lexicon_zh.PENDING, sentence):
        scores[Category.RECOVERY] -= _PENDING_PENALTY
    if any(scores[c] >= _SPECIFIC_CUE for c in scores if c is not Category.FINDING):
        # The structural signs of an observation (a name and a number) are in most sentences;
        # when a specific kind is clearly stated they are its evidence, not a finding of their own.
        structural = lexicon.STRUCTURAL_CUES[Category.FINDING]
        if chinese:
            structural += lexicon_zh.STRUCTURAL_CUES.get(Category.FINDING, ())
        scores[Category.FINDING] -= sum(
            _cue_weight(cue, sentence, Category.FINDING) for cue in structural
        )
    # Finding is the generic kind: many weak signs of an observation must not outvote one
    # specific cue ("purged 118k jobs, queue at 900" is an action with its result).
    scores[Category.FINDING] = min(scores[Category.FINDING], _MAX_FINDING_CUES)
    technical = {m.group(0).lower() for m in lexicon.TECHNICAL_TOKEN.finditer(sentence)}
    scores[Category.FINDING] += min(_MAX_TECHNICAL_BONUS, _TECHNICAL_BONUS_EACH * len(technical))
    if scores[Category.RECOVERY] > 0 and _either(lexicon.PARTIAL, lexicon_zh.PARTIAL, sentence):
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


def _joined_openers(pieces: list[str]) -> list[str]:
    """A lone "ok." belongs to what follows it: "ok. retention 12h now" settles a course."""
    if len(pieces) > 1 and lexicon.BARE_OPENER.match(pieces[0]):
        return [f"{pieces[0]} {pieces[1]}", *pieces[2:]]
    return pieces


def _best_sentence(cleaned: str) -> tuple[Category | None, float, str]:
    """The message's strongest sentence, except that an explanation outranks an observation.

    A message that opens by pointing back ("yep, that's why we see it in the US too") has no
    subject of its own in that sentence: it agrees with someone else's, and states nothing.

    "The threshold was set to 0ms yesterday. So every query is logged" states a finding and
    its consequence; together they are the cause, however much stronger the finding reads.
    Finding is the generic kind, so any other kind clearly stated in one sentence of a long
    message is what the message reports ("the replica has caught up. I set the delay to 30s so
    that ..." is a recovery with its detail).
    """
    best: tuple[Category | None, float, str] = (None, 0.0, "")
    cause: tuple[Category | None, float, str] = (None, 0.0, "")
    specific: tuple[Category | None, float, str] = (None, 0.0, "")
    for index, sentence in enumerate(_joined_openers(sentences(cleaned))):
        if index == 0 and lexicon.BACK_REFERENCE.match(sentence):
            continue  # "yep, that's why ...": what it points at was said by someone else
        category, score = score_sentence(sentence)
        if category is not None and score > best[1]:
            best = (category, score, sentence)
        if category is Category.ROOT_CAUSE and score >= DEFAULT_MIN_SCORE and score > cause[1]:
            cause = (category, score, sentence)
        if (
            category not in (None, Category.FINDING)
            and score >= _SPECIFIC_CUE
            and score > specific[1]
        ):
            specific = (category, score, sentence)
    if best[0] is Category.FINDING and cause[0] is not None:
        return cause
    if best[0] is Category.FINDING and specific[0] is not None:
        return specific
    return best


def is_substantive(sentence: str) -> bool:
    """Whether an observation says something concrete, beyond a running status reading.

    "p99 at 11s now", "5xx 18% now, worst so far" and "+1, matches what we saw" repeat or agree;
    "orders-db primary cpu 31%, no lock waits" and "p99 on the gateway is at 3s" report.
    """
    content = [
        word
        for word in topic_words(sentence)
        if not any(ch.isdigit() for ch in word) and word not in lexicon.STATUS_WORDS
    ]
    if cjk_count(sentence) >= _MIN_CJK_CHARS:
        return True  # the topic words are English only; a Chinese clause is the substance
    if not content or (len(content) == 1 and lexicon.RUNNING_STATUS.search(sentence)):
        return False
    concrete = any(
        not match.group(0).startswith(("+", "-"))
        for match in lexicon.TECHNICAL_TOKEN.finditer(sentence.lstrip("+1 ,"))
    ) or bool(lexicon.POPULATION.search(sentence))
    return concrete or len(content) >= _MIN_PLAIN_WORDS


def impact_aspect(sentence: str) -> str:
    """Where an impact is seen: people telling us, business numbers, or the service itself.

    Two impact statements a minute apart are one picture when they look at the same thing
    ("12% of requests fail" / "users see 'payment failed'") and two facts when they do not
    ("30% of orders fail" / "support has 14 tickets").
    """
    if _either(lexicon.REPORTS, lexicon_zh.REPORTS, sentence):
        return "reports"
    if _either(lexicon.BUSINESS_METRIC, lexicon_zh.BUSINESS, sentence):
        return "business"
    return "service"


def _says_something(sentence: str) -> bool:
    """Not a question, greeting, acknowledgement or chatter: worth keeping in a title."""
    if _is_question(sentence) or _is_chatter(sentence):
        return False
    return not _is_acknowledgement(sentence.rstrip(".!,;: "))


def _is_comms(cleaned: str) -> bool:
    """A post headed as a status-page or stakeholder update relays words to others.

    Its body restates impact and progress for customers ("some customers may be unable to
    check out"); the facts behind it are in the conversation already. A one-line message is
    read sentence by sentence instead ("status page updated. also restarted the workers").
    """
    first_line, _, rest = cleaned.partition("\n")
    return bool(rest.strip()) and _either(lexicon.COMMS, lexicon_zh.COMMS, first_line)


def _second_opinion(
    model: CategoryModel,
    category: Category,
    item: EvidenceItem,
    sentence: str,
    score: float,
    min_score: float,
) -> Category:
    """The model's kind, if the message would have passed that kind's own bar.

    A finding or an impact must say something concrete, and a finding needs a little more
    score than the other kinds: a reassigned kind meets the same bars as one the vocabulary
    chose, or the vocabulary's kind stays.
    """
    chosen = model.reassign(category, item)
    if chosen is category or not _says_enough(chosen, sentence):
        return category
    return chosen if score >= _bar(chosen, min_score) else category


def _says_enough(category: Category, sentence: str) -> bool:
    """An observation (a finding or an impact) must say something concrete."""
    return category not in (Category.FINDING, Category.IMPACT) or is_substantive(sentence)


def _bar(category: Category, min_score: float) -> float:
    """The score a sentence needs to be a fact of this kind."""
    return min_score + (_FINDING_EXTRA_SCORE if category is Category.FINDING else 0.0)


def read_message(
    item: EvidenceItem,
    *,
    min_score: float = DEFAULT_MIN_SCORE,
    category_model: CategoryModel | None = None,
) -> Reading:
    """Classify one message on its own, before any merging.

    With `category_model`, a fact's kind is the model's when it is surer of another kind than
    the vocabulary by its margin (`category_model`); whether the message is a fact stays the
    vocabulary's decision.
    """
    noise = Reading(item=item, kind=MessageKind.NOISE)
    if item.message_type not in AI_TEXT_TYPES or _either(
        lexicon.BOT_NOTIFICATION, lexicon_zh.BOT, item.text
    ):
        return noise
    cleaned = clean_text(item.text)
    words = word_count(cleaned)
    if words == 0:
        return noise
    if _is_roster(item.text):
        # The team is set: who commands, who does what. Read before the mentions go, and the
        # title keeps the names (without their @), since they are what the roster says.
        title = make_title(_MENTION_SIGN.sub("", item.text))
        return Reading(
            item, MessageKind.FACT, Category.DECISION, _ROSTER_SCORE, title, topic_words(cleaned)
        )
    title = make_title(keep_sentences(cleaned, _says_something))
    # Read in the usual spelling, Chinese word by word; the title keeps the author's.
    text = segmented(casual_spelling(cleaned))
    if lexicon.APPROVAL.match(text):
        return Reading(item=item, kind=MessageKind.APPROVAL, title=title)
    if _is_acknowledgement(text) or lexicon.ACKNOWLEDGED_ROLE.match(text):
        return noise
    if strip_links(item.text) != item.text and words < 4:
        return noise  # a link with a label is a pointer, not a fact
    if _is_comms(text):
        return noise
    topics = topic_words(cleaned)
    category, score, sentence = _best_sentence(text)
    if category is not None and not _says_enough(category, sentence):
        category, score = None, 0.0
    strong = category is not None and score >= _bar(category, min_score)
    if (
        words <= _MAX_CLAIM_WORDS
        and lexicon.OWNERSHIP_CLAIM.search(text)
        and not (strong and category is Category.DECISION)
    ):
        return Reading(item=item, kind=MessageKind.OWNERSHIP, title=title, topics=topics)
    # An offer ("I can run the cleanup") is not a fact until someone accepts it.
    if _either(lexicon.PROPOSAL, lexicon_zh.PROPOSAL, text) and category in (
        None,
        Category.FINDING,
    ):
        return Reading(item=item, kind=MessageKind.PROPOSAL, title=title, topics=topics)
    # An announced action ("I'll purge the old jobs") is one once it is done or approved.
    if _either(lexicon.INTENT, lexicon_zh.INTENT, text) and (
        category in (None, Category.FINDING) or (category is Category.MITIGATION and not strong)
    ):
        return Reading(
            item, MessageKind.PROPOSAL, Category.MITIGATION, score, title=title, topics=topics
        )
    if strong and category is not None:
        if category_model is not None:
            category = _second_opinion(category_model, category, item, sentence, score, min_score)
        aspect = impact_aspect(sentence) if category is Category.IMPACT else ""
        requested = category is Category.MITIGATION and bool(lexicon.REQUEST.search(sentence))
        return Reading(item, MessageKind.FACT, category, score, title, topics, aspect, requested)
    return noise
