"""The contract between chunk planning, synthesizers and whoever persists drafts.

Everything here is frozen and free of I/O so that a chunk can be retried, compared and hashed
without surprises, and so that a rule synthesizer and a model synthesizer are interchangeable.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Annotated, Protocol

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from timeline_pipeline.i18n.locales import Locale

__all__ = [
    "FINGERPRINT_SCOPE",
    "Category",
    "ConversationGroup",
    "DraftEntry",
    "EvidenceItem",
    "InvalidSynthesisOutput",
    "SynthesisChunk",
    "SynthesisError",
    "SynthesisRejected",
    "SynthesisResult",
    "SynthesisUnavailable",
    "Synthesizer",
    "TokenUsage",
    "draft_fingerprint",
    "nearby_fingerprints",
    "normalize_title",
    "validate_entries",
]


def _as_utc(value: datetime) -> datetime:
    # Windows are fixed UTC buckets; a naive time would silently shift by the host's offset.
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("timestamp must be timezone-aware")
    return value.astimezone(UTC)


UtcDatetime = Annotated[datetime, AfterValidator(_as_utc)]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class EvidenceItem(BaseModel):
    """One eligible chat message as the synthesizer sees it (a row of timeline evidence)."""

    model_config = _FROZEN

    id: int
    occurred_at: UtcDatetime
    actor_id: str | None = None
    actor_display_name: str | None = None
    text: str
    content_hash: str
    message_id: str
    chat_id: str
    thread_id: str | None = None
    root_id: str | None = None
    parent_id: str | None = None
    message_type: str = "text"


class Category(StrEnum):
    """The kinds of timeline-worthy fact of docs/design.md §7."""

    IMPACT = "impact"
    FINDING = "finding"
    DECISION = "decision"
    MITIGATION = "mitigation"
    ROOT_CAUSE = "root_cause"
    RECOVERY = "recovery"
    NEXT_STEP = "next_step"


class ConversationGroup(BaseModel):
    """Messages that belong to one conversation inside a chunk, in chat order."""

    model_config = _FROZEN

    key: str
    evidence: list[EvidenceItem]


class SynthesisChunk(BaseModel):
    """One model call's worth of window evidence.

    `context` is read-only: it may explain the evidence but must never be cited, because only
    evidence inside the window counts towards the window cursor and aggregate hash.
    `truncated_ids` names evidence whose text was shortened to fit the token budget, so that the
    shortening is visible to the caller instead of silent; `context_truncated_ids` names the
    context (a reply's thread root or replied-to parent) shortened because the one reply's
    root and parent alone outgrew the context budget (`synthesis.chunking`). `locale` is the
    workspace's language
    (docs/i18n.md): a model synthesizer writes titles in it; the rule synthesizer ignores it.
    """

    model_config = _FROZEN

    window_start: UtcDatetime
    window_end: UtcDatetime
    index: int = Field(ge=0)
    evidence: list[EvidenceItem]
    groups: list[ConversationGroup]
    context: list[EvidenceItem] = Field(default_factory=list)
    truncated_ids: list[int] = Field(default_factory=list)
    context_truncated_ids: list[int] = Field(default_factory=list)
    locale: Locale = Locale.EN


class DraftEntry(BaseModel):
    """A proposed timeline entry; it becomes a `source=ai|rule`, `status=draft` row."""

    model_config = _FROZEN

    title: str = Field(min_length=1, max_length=200)
    category: Category
    occurred_at: UtcDatetime
    evidence_ids: list[int] = Field(min_length=1)
    detail: str | None = Field(default=None, max_length=1000)

    @field_validator("title")
    @classmethod
    def _title_has_text(cls, value: str) -> str:
        stripped = value.strip()
        if not stripped:
            raise ValueError("title must not be blank")
        return stripped

    @field_validator("evidence_ids")
    @classmethod
    def _ids_unique(cls, value: list[int]) -> list[int]:
        if len(set(value)) != len(value):
            raise ValueError("evidence_ids must be unique")
        return value


class TokenUsage(BaseModel):
    """Tokens billed for one chunk; zero for synthesizers that make no model call."""

    model_config = _FROZEN

    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)


class SynthesisResult(BaseModel):
    """What one synthesizer call produced for one chunk, with the provenance to record."""

    model_config = _FROZEN

    entries: list[DraftEntry]
    usage: TokenUsage = Field(default_factory=TokenUsage)
    model: str
    prompt_version: str


class SynthesisError(Exception):
    """Base of the synthesis failures a caller must handle; `reason` is a short stable code.

    Messages carry codes, counts and ids only, never chat text, because they end up in logs and in
    the window's bounded diagnostics.
    """

    def __init__(self, reason: str, message: str | None = None) -> None:
        super().__init__(message or reason)
        self.reason = reason


class InvalidSynthesisOutput(SynthesisError):
    """The synthesizer answered, but the answer cannot be trusted (schema, unknown ids).

    Not retried inside the synthesizer: the caller owns the bounded whole-window retry.
    """


class SynthesisUnavailable(SynthesisError):
    """A transient failure outlived the synthesizer's own retries; retry the chunk later.

    `retry_after`: the service's last retry-after hint in seconds, if it gave one."""

    def __init__(
        self, reason: str, message: str | None = None, *, retry_after: float | None = None
    ) -> None:
        super().__init__(reason, message)
        self.retry_after = retry_after


class SynthesisRejected(SynthesisError):
    """The service refused the request for a reason retrying will not fix (auth, bad request)."""


class Synthesizer(Protocol):
    """Turns one chunk into draft entries; implementations must be safe to call again."""

    name: str
    prompt_version: str

    def synthesize(self, chunk: SynthesisChunk) -> SynthesisResult: ...


def validate_entries(chunk: SynthesisChunk, entries: list[DraftEntry]) -> list[DraftEntry]:
    """Check that entries cite only this chunk's evidence and pin their time to that evidence.

    Citing context or an unknown id would bind an entry to a row outside the window (or to
    nothing), which breaks traceability; so the whole output is rejected, not repaired. The
    time is clamped to the span of the cited messages because a synthesizer may guess a time,
    but the evidence is the authority. Evidence ids are put in chat order for stable output.
    """
    by_id = {item.id: item for item in chunk.evidence}
    context_ids = {item.id for item in chunk.context} - by_id.keys()
    order = {item.id: position for position, item in enumerate(chunk.evidence)}
    checked: list[DraftEntry] = []
    for position, entry in enumerate(entries):
        cited_context = [i for i in entry.evidence_ids if i in context_ids]
        if cited_context:
            raise InvalidSynthesisOutput(
                "context_evidence_cited",
                f"entry {position} cites read-only context evidence ids {sorted(cited_context)}",
            )
        unknown = [i for i in entry.evidence_ids if i not in by_id]
        if unknown:
            raise InvalidSynthesisOutput(
                "unknown_evidence_id",
                f"entry {position} cites evidence ids not in the chunk: {sorted(unknown)}",
            )
        ids = sorted(entry.evidence_ids, key=order.__getitem__)
        times = [by_id[i].occurred_at for i in ids]
        earliest, latest = min(times), max(times)
        occurred_at = min(max(entry.occurred_at, earliest), latest)
        checked.append(entry.model_copy(update={"evidence_ids": ids, "occurred_at": occurred_at}))
    return checked


_WHITESPACE = re.compile(r"\s+")


def normalize_title(title: str) -> str:
    """Fold a title to the form used for deduplication: casefolded, no punctuation, one space."""
    folded = unicodedata.normalize("NFKC", title).casefold()
    without_punctuation = "".join(
        " " if unicodedata.category(ch).startswith(("P", "S")) else ch for ch in folded
    )
    return _WHITESPACE.sub(" ", without_punctuation).strip()


FINGERPRINT_SCOPE = timedelta(minutes=30)
"""How near in time a restatement of a fact must be to merge into its entry.

A draft merges into an entry with the same category and normalized title that was first
proposed less than this long before or after it; further apart it is a repeat of the event (a
second rollback an hour after the first) and gets its own entry. See the runbook in docs/runbooks.md
"Deduplication of drafts".
"""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _scope_start(at: datetime) -> datetime:
    """The fixed UTC bucket of `FINGERPRINT_SCOPE` holding `at`."""
    return _EPOCH + ((at - _EPOCH) // FINGERPRINT_SCOPE) * FINGERPRINT_SCOPE


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()


def _scoped(workspace_id: str, entry: DraftEntry, scope_start: datetime) -> str:
    stamp = scope_start.astimezone(UTC).strftime("%Y-%m-%dT%H:%MZ")
    return _digest(workspace_id, entry.category.value, normalize_title(entry.title), stamp)


def draft_fingerprint(workspace_id: str, entry: DraftEntry) -> str:
    """A stable key so that rerunning a window re-finds the draft it made before.

    Category and normalized title, scoped to the `FINGERPRINT_SCOPE` bucket of the draft's
    time: a rerun may cite one more message or shift the time a little, and it is still the
    same fact; the same title an hour later is another event. Evidence ids are left out.
    """
    return _scoped(workspace_id, entry, _scope_start(entry.occurred_at))


def nearby_fingerprints(workspace_id: str, entry: DraftEntry) -> tuple[str, ...]:
    """The other keys the same fact may be stored under when it was first proposed nearby.

    The neighbouring buckets (an entry first proposed at 10:29 is near a restatement at
    10:31), and the unscoped key that entries stored before the scope existed carry. The store
    decides by the entry's first-proposed time whether it is really within the scope.
    """
    start = _scope_start(entry.occurred_at)
    return (
        _scoped(workspace_id, entry, start - FINGERPRINT_SCOPE),
        _scoped(workspace_id, entry, start + FINGERPRINT_SCOPE),
        _digest(workspace_id, entry.category.value, normalize_title(entry.title)),
    )
