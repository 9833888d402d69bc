"""Text hygiene shared by the rule synthesizer: cleaning, sentences, titles, topic words.

Chat text carries mentions, links and filler words that say nothing about the incident; both
classification and titles work on the cleaned form so that "@Dana ok so rollback done" and
"rollback done" are read, and shown, the same way.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from timeline_pipeline.synthesis.segment import segmented

__all__ = [
    "cjk_count",
    "clean_text",
    "keep_sentences",
    "make_title",
    "sentences",
    "strip_links",
    "topic_words",
    "word_count",
]

_MENTION = re.compile(r"@(?:all\b|_user_\d+|[A-Z][\w'.-]*(?:\s+[A-Z][\w'.-]*)?|[\w.-]+)")
_URL = re.compile(r"\b(?:https?://|www\.)\S+", re.IGNORECASE)
_SPACES = re.compile(r"[ \t]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)|(?<=[\u3002\uff01\uff1f])\s*(?=\S)|\n+")
_SENTENCE_SPLIT = re.compile(r"((?<=[.!?])\s+(?=\S)|(?<=[\u3002\uff01\uff1f])\s*(?=\S)|\n+)")
"""The same boundaries, kept in the result of a split so that the text can be put back. Chinese
ends a sentence with a full-width 。！？ and no space after it."""
_LEADING_FILLER = re.compile(
    r"^(?:(?:ok(?:ay)?|so|hmm+|um+|uh+|well|also|and|but|fyi|btw|fwiw|tbh|imo|update|heads up|"
    r"yes|yeah|yep|right|alright|wait|note|ps|pls|please|interesting)\b[\s,:;.!-]*|\+1(?!\d)"
    r"[\s,:;.!-]*)+",
    re.IGNORECASE,
)
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_./#%-]*")
_LIST_MARKER = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s*")

_STOPWORDS = frozenset(
    str.split(
        """
    a an the and or but if then so of to in on at by for with from into onto over under up
    down out off about as is are was were be been being am do does did doing done have has
    had having i me my we us our you your he him his she her they them their it its this
    that these those there here what which who whom when where why how all any both each few
    more most other some such no nor not only own same than too very can will just should
    would could might must may now still again also please let lets let's ok okay yes yeah
    yep hmm thanks thank looks look like see seeing seen get got getting going go went gone
    one two three much many new think
    """
    )
)

MAX_TITLE_CHARS = 120


def strip_links(text: str) -> str:
    """Remove URLs: a link's address says nothing a reader of the timeline can use."""
    return _URL.sub(" ", text)


def clean_text(text: str) -> str:
    """Drop mentions and links and collapse spacing, keeping line breaks for lists."""
    without_links = strip_links(text)
    without_mentions = _MENTION.sub(" ", without_links)
    lines = (_SPACES.sub(" ", line).strip(" ,;:") for line in without_mentions.splitlines())
    return "\n".join(line for line in lines if line)


_BARE_CONTRACTIONS = {
    "ill": "i'll",
    "im": "i'm",
    "ive": "i've",
    "dont": "don't",
    "cant": "can't",
    "wont": "won't",
    "didnt": "didn't",
    "doesnt": "doesn't",
    "isnt": "isn't",
    "wasnt": "wasn't",
    "arent": "aren't",
    "couldnt": "couldn't",
    "shouldnt": "shouldn't",
    "thats": "that's",
    "whats": "what's",
    "theres": "there's",
    "its": "it's",
    "weve": "we've",
    "youre": "you're",
}
_BARE_CONTRACTION = re.compile(
    r"\b(" + "|".join(sorted(_BARE_CONTRACTIONS, key=len, reverse=True)) + r")\b(?!['\u2019-])",
    re.IGNORECASE,
)
_CURLY_APOSTROPHE = re.compile("[\u2018\u2019]")


def casual_spelling(text: str) -> str:
    """Terse chat spelled the way the vocabulary is written: "ill put it back" as "i'll ...".

    On-call engineers drop apostrophes ("ill", "cant", "thats") and type curly ones from phones;
    reading both as the usual spelling lets one pattern cover every way of typing it. "its" is
    read as "it's" because incident chat states far more than it possesses; the title keeps the
    author's spelling (`clean_text` is not changed by this).
    """
    straight = _CURLY_APOSTROPHE.sub("'", text)
    return _BARE_CONTRACTION.sub(lambda m: _BARE_CONTRACTIONS[m.group(1).lower()], straight)


def sentences(text: str) -> list[str]:
    """Split cleaned text into sentences and list items, dropping bullets and empty pieces."""
    pieces = (_LIST_MARKER.sub("", piece).strip() for piece in _SENTENCE_END.split(text))
    return [piece for piece in pieces if piece]


def keep_sentences(text: str, keep: Callable[[str], bool]) -> str:
    """`text` without the sentences at its start and end that `keep` rejects.

    Used to take greetings, questions and chatter off the edges of a message before it becomes
    a title ("joining. is this customer facing? orders/min is falling" -> "orders/min is
    falling"). Sentences in the middle stay, so lists and posts keep their shape; when nothing
    would be left the text is returned as it is.
    """
    pieces = _SENTENCE_SPLIT.split(text)
    sentences_at = [i for i in range(0, len(pieces), 2) if pieces[i].strip()]
    kept = [i for i in sentences_at if keep(_LIST_MARKER.sub("", pieces[i]).strip())]
    if not kept:
        return text
    return "".join(pieces[kept[0] : kept[-1] + 1]).strip()


_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_CJK_CHARS_PER_WORD = 2
"""Chinese has no spaces; a word is about two characters, which is all a length check needs."""


def cjk_count(text: str) -> int:
    """Chinese characters in `text`: Lark chats mix them with English in one sentence."""
    return len(_CJK.findall(text))


def word_count(text: str) -> int:
    """Words, counting Chinese at about two characters a word."""
    return len(_WORD.findall(text)) + -(-cjk_count(text) // _CJK_CHARS_PER_WORD)


_PHRASAL = (
    (re.compile(r"\broll(?:ed|ing|s)?[\s-]+back\b", re.IGNORECASE), "rollback"),
    (re.compile(r"\bfail(?:ed|ing|s)?[\s-]+over\b", re.IGNORECASE), "failover"),
    (re.compile(r"\b(?:turn|switch)(?:ed|ing|s)?[\s-]+off\b", re.IGNORECASE), "disable"),
    (re.compile(r"\b(?:turn|switch)(?:ed|ing|s)?[\s-]+on\b", re.IGNORECASE), "enable"),
    (re.compile(r"\bscal(?:e|ed|ing|es)[\s-]+(?:up|out)\b", re.IGNORECASE), "scaleup"),
)
"""Two-word verbs said both ways ("rolled back", "rollback") name one action."""

_KEEP_DOUBLE = frozenset("lsz")


def _stem(word: str) -> str:
    """A crude English stemmer: enough to see "restarting", "restarted", "restart" as one topic."""
    lowered = word.lower().strip("./#%-")
    if any(ch.isdigit() for ch in lowered):
        return lowered  # numbers and versions are compared as written
    for suffix in ("ing", "ed", "es", "s", "e"):
        if lowered.endswith(suffix) and len(lowered) - len(suffix) >= 3:
            lowered = lowered[: -len(suffix)]
            break
    if len(lowered) >= 4 and lowered[-1] == lowered[-2] and lowered[-1] not in _KEEP_DOUBLE:
        lowered = lowered[:-1]
    return lowered


def _pieces(word: str) -> list[str]:
    """An identifier and its parts: `reconcile_stuck_carts.py` also talks about carts."""
    parts = [part for part in re.split(r"[_./-]+", word) if part]
    return [word, *parts] if len(parts) > 1 else [word]


def topic_words(text: str) -> frozenset[str]:
    """Content words (stemmed) used to tell whether two messages talk about the same thing."""
    canonical = clean_text(text)
    for pattern, replacement in _PHRASAL:
        canonical = pattern.sub(replacement, canonical)
    words = (
        _stem(piece)
        for word in _WORD.findall(canonical)
        for piece in _pieces(word)
        if piece.lower() not in _STOPWORDS
    )
    english = (
        word
        for word in words
        if (len(word) >= 3 or any(ch.isdigit() for ch in word)) and word not in _STOPWORDS
    )
    return frozenset((*english, *_chinese_topics(canonical)))


_CJK_WORD = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]{2,}")
_CHINESE_STOPWORDS = frozenset(
    str.split(
        """
    已经 现在 这个 那个 这边 那边 我们 你们 他们 大家 一下 一个 还是 就是 但是 不过 然后 所以
    因为 可以 需要 应该 可能 好像 感觉 没有 还没 问题 情况 目前 刚才 刚刚 之后 之前 时候 一直
    的话 如果 看看 看到 发现 确认 知道 觉得 这样 那样 什么 怎么 全部 都是 先把 正在
    """
    )
)
"""Words every Chinese message uses: they say nothing about which system or action it is."""


def _chinese_topics(text: str) -> list[str]:
    """Chinese content words, as the segmenter splits them: "回滚 网关 配置" talks about the
    gateway's configuration, whoever wrote it and however."""
    if not cjk_count(text):
        return []
    return [word for word in _CJK_WORD.findall(segmented(text)) if word not in _CHINESE_STOPWORDS]


def _shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:-") + "…"


def make_title(text: str, *, limit: int = MAX_TITLE_CHARS) -> str:
    """A concise, capitalised one-liner: fillers, mentions, links and list markers removed."""
    lines: list[str] = []
    for raw in clean_text(text).splitlines():
        line = _LIST_MARKER.sub("", raw).strip()
        # A post's title is often repeated as its first line ("Follow-ups" / "Follow-ups:").
        if line and not (lines and line.rstrip(":").casefold() == lines[-1].rstrip(":").casefold()):
            lines.append(line)
    if not lines:
        return ""
    if len(lines) > 1:
        head, rest = lines[0].rstrip(":"), [line.rstrip(".;") for line in lines[1:]]
        joined = f"{head}: {'; '.join(rest)}"
    else:
        joined = lines[0]
    joined = _LEADING_FILLER.sub("", joined).strip() or joined
    joined = joined.rstrip(" .!,;:")
    first_word = joined.split(" ", 1)[0]
    if joined and joined[0].islower() and first_word.isalpha():
        # "Restarted api", but `orders-db` and `max_retries` keep the case they are named in.
        joined = joined[0].upper() + joined[1:]
    return _shorten(joined, limit)
