"""Loading hand-labelled incident transcripts (the gold set) as synthesis evidence.

Transcripts are stored in Lark's history list-item shape and go through the product's own
normalizer, so that the quality measured on them is the quality of the real path (eligibility,
mention resolution, post flattening included), not of a test-only shortcut.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from timeline_pipeline.lark.normalize import normalize_list_item, semantic_content
from timeline_pipeline.synthesis.contract import Category, EvidenceItem

__all__ = [
    "LANGUAGES_FILE",
    "NEGATIVES_FILE",
    "SECOND_REVIEW_FILE",
    "SPLITS_FILE",
    "ExpectedFact",
    "GoldTranscript",
    "NegativeExample",
    "Split",
    "load_gold_set",
    "load_languages",
    "load_second_reviews",
    "load_splits",
    "load_transcript",
    "transcript_from_records",
]

MAX_TEXT_CHARS = 4000
SPLITS_FILE = "splits.json"
SECOND_REVIEW_FILE = "second_review.json"
"""Another reviewer's timeline of the same chat, written without seeing `expected.json`."""
LANGUAGES_FILE = "languages.json"
"""Transcript name to the language its chat is written in: `en`, `mixed` or `zh`."""
NEGATIVES_FILE = "negatives.json"
"""Optional: messages of the chat that must not be drafted as an entry of a kind on their own."""


class Split(StrEnum):
    """Which part of the evaluation a transcript belongs to.

    The split is what keeps the figures honest: a held-out transcript's misses may not be used to
    change a rule unless the transcript moves to the tuning half (and bench/quality's notes say
    so), because a rule fitted to a transcript says nothing about chats it has not seen.
    """

    TUNED = "tuned"
    """The first gold transcripts, which the rules were developed against from the start."""
    TUNING = "tuning"
    """Written before any rule change for them, then used to develop the rules."""
    HELD_OUT = "held_out"
    """Written before any rule change and never used to develop one."""


@dataclass(frozen=True)
class ExpectedFact:
    """One line of the timeline an incident commander wrote for the transcript."""

    category: Category
    evidence_message_ids: frozenset[str]
    title: str


@dataclass(frozen=True)
class NegativeExample:
    """A message that is no entry of `category` on its own: an acknowledgement is no decision,
    agreement with someone else's message states nothing. A draft of that kind resting on it
    (and on nothing but such examples) is counted against the synthesizer."""

    category: Category
    message_id: str
    why: str


@dataclass(frozen=True)
class GoldTranscript:
    """A transcript's eligible evidence (ids assigned in chat order), its expected timeline and
    its negative examples."""

    name: str
    message_count: int
    evidence: list[EvidenceItem]
    expected: list[ExpectedFact]
    negatives: tuple[NegativeExample, ...] = ()

    def message_id_by_evidence_id(self) -> dict[int, str]:
        """Evidence ids are assigned on load; scoring maps them back to Lark message ids."""
        return {item.id: item.message_id for item in self.evidence}


def _evidence(items: Sequence[Mapping[str, Any]]) -> tuple[int, list[EvidenceItem]]:
    normalized = [normalize_list_item(item, max_text_chars=MAX_TEXT_CHARS) for item in items]
    eligible = sorted(
        (message for message in normalized if message.ai_eligible),
        key=lambda message: (message.created_at, message.message_id),
    )
    evidence = [
        EvidenceItem(
            id=index,
            occurred_at=message.created_at,
            actor_id=message.sender_id,
            actor_display_name=None,
            text=message.text,
            content_hash=hashlib.sha256(semantic_content(message).encode("utf-8")).hexdigest(),
            message_id=message.message_id,
            chat_id=message.chat_id,
            thread_id=message.thread_id,
            root_id=message.root_id,
            parent_id=message.parent_id,
            message_type=message.message_type,
        )
        for index, message in enumerate(eligible, start=1)
    ]
    return len(normalized), evidence


def transcript_from_records(
    name: str,
    messages: Sequence[Mapping[str, Any]],
    expected_facts: Sequence[Mapping[str, Any]],
    negatives: Sequence[Mapping[str, Any]] = (),
) -> GoldTranscript:
    """A transcript from Lark list items and expected facts already in memory.

    The same path as `load_transcript`, for chats that are not stored as a gold directory (the
    bundled demo chat is scored this way, as a held-out set).
    """
    count, evidence = _evidence(list(messages))
    return GoldTranscript(
        name=name,
        message_count=count,
        evidence=evidence,
        expected=_facts(expected_facts),
        negatives=tuple(
            NegativeExample(
                category=Category(raw["category"]),
                message_id=str(raw["message_id"]),
                why=str(raw["why"]),
            )
            for raw in negatives
        ),
    )


def _facts(raw: Sequence[Mapping[str, Any]]) -> list[ExpectedFact]:
    return [
        ExpectedFact(
            category=Category(fact["category"]),
            evidence_message_ids=frozenset(fact["evidence_message_ids"]),
            title=fact["title"],
        )
        for fact in raw
    ]


def load_transcript(directory: Path) -> GoldTranscript:
    """Read `<directory>/messages.jsonl`, `<directory>/expected.json` and, if there is one,
    `<directory>/negatives.json`."""
    lines = (directory / "messages.jsonl").read_text(encoding="utf-8").splitlines()
    raw_expected = json.loads((directory / "expected.json").read_text(encoding="utf-8"))
    negatives_path = directory / NEGATIVES_FILE
    raw_negatives = (
        json.loads(negatives_path.read_text(encoding="utf-8")) if negatives_path.is_file() else []
    )
    return transcript_from_records(
        directory.name,
        [json.loads(line) for line in lines if line.strip()],
        raw_expected,
        raw_negatives,
    )


def load_splits(root: Path) -> dict[str, Split]:
    """`<root>/splits.json`: transcript name to split; a transcript it does not name is tuned."""
    path = root / SPLITS_FILE
    if not path.is_file():
        return {}
    raw = json.loads(path.read_text(encoding="utf-8"))
    return {str(name): Split(value) for name, value in raw.items()}


def load_languages(root: Path) -> dict[str, str]:
    """`<root>/languages.json`: transcript name to `en`, `mixed` (Chinese and English in one
    chat) or `zh`; a transcript it does not name is English. Figures are reported per language
    as well as per split, since a vocabulary can serve one language and fail another."""
    path = root / LANGUAGES_FILE
    if not path.is_file():
        return {}
    raw = json.loads(path.read_text(encoding="utf-8"))
    return {str(name): str(value) for name, value in raw.items()}


def load_gold_set(root: Path, *, split: Split | None = None) -> list[GoldTranscript]:
    """Every transcript directory under `root` (or only those of `split`), in name order."""
    splits = load_splits(root)
    return [
        load_transcript(path)
        for path in sorted(root.iterdir())
        if path.is_dir()
        and (path / "messages.jsonl").is_file()
        and (split is None or splits.get(path.name, Split.TUNED) is split)
    ]


def load_second_reviews(root: Path) -> dict[str, list[ExpectedFact]]:
    """Transcript name to a second reviewer's timeline, for the transcripts that have one.

    Scored against `expected.json` with the synthesizer's own matcher, it says how far two
    careful reviewers agree: the level the synthesizer's figures should be read against
    (bench/quality/NOTES.md).
    """
    return {
        path.name: _facts(json.loads((path / SECOND_REVIEW_FILE).read_text(encoding="utf-8")))
        for path in sorted(root.iterdir())
        if (path / SECOND_REVIEW_FILE).is_file()
    }
