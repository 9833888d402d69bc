"""Request and response bodies of the timeline API: the served OpenAPI schema is the contract.

Inputs forbid unknown fields and carry the same bounds the curation rules enforce, so that the
schema tells a client what is accepted and a violation is a 422 before any work is done. The
service checks again (the CLI reaches it without these models).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from timeline_pipeline.curation.rules import (
    DETAIL_MAX_CHARS,
    MAX_EVIDENCE_PER_ENTRY,
    SUMMARY_MAX_CHARS,
    TITLE_MAX_CHARS,
)
from timeline_pipeline.synthesis.models import Category

__all__ = [
    "EntryCreate",
    "EntryEdit",
    "EntryOut",
    "EntryStatus",
    "ErrorOut",
    "EvidenceItemOut",
    "EvidenceLinkOut",
    "EvidencePage",
    "Problem",
    "RevisionIn",
    "SummaryIn",
    "SummaryOut",
    "TimelineOut",
]

EntryStatus = Literal["draft", "confirmed", "hidden"]
MAX_ID = 2**63 - 1
MAX_REVISION = 2**31 - 1
RowId = Annotated[int, Field(ge=1, le=MAX_ID)]
Revision = Annotated[int, Field(ge=1, le=MAX_REVISION)]

_INPUT = ConfigDict(extra="forbid")


# --- responses -------------------------------------------------------------------------------


class Problem(BaseModel):
    code: str = Field(description="Stable machine-readable reason, e.g. `stale_revision`.")
    message: str
    current_revision: int | None = Field(
        default=None, description="On `stale_revision`: the revision to re-read."
    )


class ErrorOut(BaseModel):
    detail: Problem


class EvidenceLinkOut(BaseModel):
    evidence_id: int
    occurred_at: datetime
    url: str | None = Field(
        description="Lark applink opening the chat at the message; null when none exists "
        "(another source, or a recalled message)."
    )


class EntryOut(BaseModel):
    id: int
    occurred_at: datetime
    title: str
    detail: str | None
    category: str
    source: str = Field(description="`ai`, `rule` (synthesis) or `human` (added by a curator).")
    status: str = Field(description="`draft`, `confirmed` or `hidden`.")
    human_edited: bool = Field(description="A curator rewrote it; synthesis never will again.")
    revision: int = Field(description="Send it back (or the ETag as If-Match) to change it.")
    etag: str
    evidence_ids: list[int]
    links: list[EvidenceLinkOut]
    created_at: datetime
    updated_at: datetime


class SummaryOut(BaseModel):
    content: str
    source: str = Field(description="`ai` (regenerated automatically) or `human` (never).")
    revision: int
    etag: str
    updated_at: datetime


class TimelineOut(BaseModel):
    workspace_id: str
    statuses: list[str]
    entries: list[EntryOut]
    summary: SummaryOut | None
    next_cursor: str | None = Field(description="Pass as `after` for the next page; null at end.")


class EvidenceItemOut(BaseModel):
    id: int
    source: str
    source_type: str
    source_key: str
    occurred_at: datetime
    source_updated_at: datetime
    actor_id: str | None
    actor_display_name: str | None
    content: str = Field(description="Normalized text; empty for a recalled message.")
    deleted: bool
    ai_eligible: bool
    link: str | None


class EvidencePage(BaseModel):
    items: list[EvidenceItemOut]
    next_cursor: str | None


# --- requests --------------------------------------------------------------------------------


class RevisionIn(BaseModel):
    """The revision the client saw; may be left out when an If-Match header carries it."""

    model_config = _INPUT

    revision: Revision | None = None


class EntryCreate(BaseModel):
    model_config = _INPUT

    occurred_at: AwareDatetime
    title: str = Field(min_length=1, max_length=TITLE_MAX_CHARS)
    category: Category
    detail: str | None = Field(default=None, max_length=DETAIL_MAX_CHARS)
    evidence_ids: list[RowId] = Field(default_factory=list, max_length=MAX_EVIDENCE_PER_ENTRY)


class EntryEdit(BaseModel):
    """Fields to change; a field left out stays as it is, `detail: null` clears the detail."""

    model_config = _INPUT

    revision: Revision | None = None
    title: str | None = Field(default=None, min_length=1, max_length=TITLE_MAX_CHARS)
    detail: str | None = Field(default=None, max_length=DETAIL_MAX_CHARS)
    category: Category | None = None
    occurred_at: AwareDatetime | None = None


class SummaryIn(BaseModel):
    """`revision`: the summary revision the curator saw, or null when there was none."""

    model_config = _INPUT

    content: str = Field(min_length=1, max_length=SUMMARY_MAX_CHARS)
    revision: Revision | None = None
