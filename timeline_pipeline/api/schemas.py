"""Request and response bodies of the timeline API: the served OpenAPI schema is the contract.

Inputs forbid unknown fields and carry the same bounds the curation rules enforce, so that the
schema tells a client what is accepted and a violation is a 422 before any work is done. The
service checks again (the CLI reaches it without these models).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Final, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, RootModel
from pydantic.json_schema import SkipJsonSchema

from timeline_pipeline.curation.rules import (
    DETAIL_MAX_CHARS,
    MAX_EVIDENCE_PER_ENTRY,
    SUMMARY_MAX_CHARS,
    TITLE_MAX_CHARS,
)
from timeline_pipeline.synthesis.contract import Category

__all__ = [
    "DurationsOut",
    "EntryCreate",
    "EntryEdit",
    "EntryOut",
    "EntryStatus",
    "ErrorOut",
    "EvidenceItemOut",
    "EvidenceLinkOut",
    "EvidencePage",
    "MilestoneIn",
    "MilestoneName",
    "MilestoneOut",
    "MilestonesOut",
    "Problem",
    "ReportCountsOut",
    "ReportItemOut",
    "ReportOut",
    "ReportSectionOut",
    "ReportWindowOut",
    "RevisionIn",
    "SummaryIn",
    "SummaryOut",
    "TimelineOut",
    "UnprocessableOut",
    "ValidationErrorOut",
]

EntryStatus = Literal["draft", "confirmed", "hidden"]
MAX_ID = 2**53 - 1
"""Ids are BIGINT, but a JSON client (and a JSON schema validator comparing as floats) holds
integers exactly only up to 2**53 - 1, which no row id reaches."""
MAX_REVISION = 2**31 - 1
RowId = Annotated[int, Field(ge=1, le=MAX_ID)]
Revision = Annotated[int, Field(ge=1, le=MAX_REVISION)]

_INPUT = ConfigDict(extra="forbid")

# What the curation rules accept, stated in the schema so that a client (and a schema-driven
# test) knows it before sending: some text that is not blank, without control characters (a
# single-line field also without line breaks). The time bound is only described: a pattern on
# a date-time cannot follow its UTC offset. The service checks everything again.
_LINE = r"^[^\x00-\x1f\x7f]*[^\x00-\x1f\x7f\s][^\x00-\x1f\x7f]*$"
_CTRL = r"\x00-\x08\x0b\x0c\x0e-\x1f\x7f"
_TEXT = rf"^[^{_CTRL}]*[^{_CTRL}\s][^{_CTRL}]*$"
_TIME = {"description": "From 2000-01-01 to before 2100-01-01 UTC; outside is 422 `invalid_input`."}
Time = Annotated[AwareDatetime, Field(json_schema_extra=_TIME)]
Title = Annotated[str, Field(min_length=1, max_length=TITLE_MAX_CHARS, pattern=_LINE)]


# --- responses -------------------------------------------------------------------------------


class Problem(BaseModel):
    code: str = Field(description="Stable machine-readable reason, e.g. `stale_revision`.")
    message: str
    current_revision: int | None = Field(
        default=None, description="On `stale_revision`: the revision to re-read."
    )
    current: dict[str, Any] | None = Field(
        default=None,
        description="On a 409 about an entry: the entry as it is now (an `EntryOut`), so the "
        "client can show what changed before deciding again.",
    )


class ErrorOut(BaseModel):
    detail: Problem


class ValidationIssue(BaseModel):
    type: str
    loc: list[str | int]
    msg: str


class ValidationErrorOut(BaseModel):
    """A body that does not match the schema: where and why, never the input echoed back."""

    detail: list[ValidationIssue]


class UnprocessableOut(RootModel[ValidationErrorOut | ErrorOut]):
    """422: either the schema's own validation (a list of issues) or a curation rule the
    schema cannot state (`invalid_input`, e.g. evidence of another workspace)."""


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
    recalled_evidence: bool = Field(
        default=False,
        description="One of its messages was recalled: a curator's text is kept and flagged for "
        "review, a pin's or a machine draft's text is replaced by `[recalled]` "
        "(docs/lifecycle.md).",
    )


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


class CuratorOut(BaseModel):
    open_id: str = Field(description="The Lark open_id whose review-card actions count.")
    created: bool | None = Field(
        default=None, description="On PUT: true when the curator is new, false when already one."
    )


class CuratorsOut(BaseModel):
    items: list[CuratorOut]


# --- requests --------------------------------------------------------------------------------


class RevisionIn(BaseModel):
    """The revision the client saw; may be left out when an If-Match header carries it."""

    model_config = _INPUT

    revision: Revision | None = None


class EntryCreate(BaseModel):
    model_config = _INPUT

    occurred_at: Time
    title: Title
    category: Category
    detail: str | None = Field(default=None, max_length=DETAIL_MAX_CHARS, pattern=_TEXT)
    evidence_ids: list[RowId] = Field(default_factory=list, max_length=MAX_EVIDENCE_PER_ENTRY)


class EntryEdit(BaseModel):
    """Fields to change; a field left out stays as it is, `detail: null` clears the detail."""

    model_config = _INPUT

    revision: Revision | None = None
    # Title, category and time can be changed, not removed: null is not in their schema.
    title: Title | SkipJsonSchema[None] = None
    detail: str | None = Field(default=None, max_length=DETAIL_MAX_CHARS, pattern=_TEXT)
    category: Category | SkipJsonSchema[None] = None
    occurred_at: Time | SkipJsonSchema[None] = None


class SummaryIn(BaseModel):
    """`revision`: the summary revision the curator saw, or null when there was none."""

    model_config = _INPUT

    content: str = Field(min_length=1, max_length=SUMMARY_MAX_CHARS, pattern=_TEXT)
    revision: Revision | None = None


# --- legal holds (api/routers/holds.py) ------------------------------------------------------


def _descriptor_keys() -> list[str]:
    from timeline_pipeline.lifecycle.registry import load_registry

    return sorted(load_registry().descriptors)


HOLD_REASON_MIN: Final = 10
HOLD_REASON_MAX: Final = 1000


_REASON = _TEXT
"""A hold's reason: some text that is not blank, without control characters."""


class HoldCreateIn(BaseModel):
    model_config = _INPUT

    descriptor_key: str | None = Field(
        default=None,
        max_length=128,
        description="Hold one descriptor (and its chain); default: every table of the workspace. "
        "One of the registered keys; another is 422 `unknown_descriptor`.",
        json_schema_extra={"enum": [*_descriptor_keys(), None]},
    )
    reason: str = Field(min_length=HOLD_REASON_MIN, max_length=HOLD_REASON_MAX, pattern=_REASON)
    review_at: AwareDatetime | None = Field(
        default=None,
        description="A date to review the hold on, 2000..2099 UTC; it never releases the hold.",
    )


class HoldReleaseIn(BaseModel):
    model_config = _INPUT

    reason: str = Field(min_length=HOLD_REASON_MIN, max_length=HOLD_REASON_MAX, pattern=_REASON)


class HoldOut(BaseModel):
    id: str
    workspace_id: str
    descriptor_key: str | None
    status: str
    reason: str
    review_at: datetime | None
    created_at: datetime
    created_by: str
    """Who placed it: `token:<id>` through the API, `cli:<user>` from the command line."""
    released_at: datetime | None
    released_by: str | None
    release_reason: str | None


# --- the incident report (api/routers/report.py) ---------------------------------------------

MilestoneName = Literal["started", "detected", "mitigated", "resolved"]
"""The four milestones of an incident, in the order it passes them (docs/report.md)."""


class MilestoneOut(BaseModel):
    at: datetime | None = Field(
        description="The effective time: a curator's, else the one the timeline gives; null "
        "while nothing says it yet."
    )
    entry_id: int | None = Field(
        description="The entry the time comes from; null when a curator set it or it comes "
        "from the chat (the first alert, the first message, the workspace's creation)."
    )
    overridden_by: str | None = Field(
        description="Who set the time: `token:<id>`, `cli:<user>`, `ui:<session>`; null when "
        "it is the derived one."
    )
    derived_at: datetime | None = Field(
        description="What the timeline gives, kept beside a curator's time."
    )
    derived_entry_id: int | None
    overridden_at: datetime | None = Field(description="When a curator set the time.")


class MilestonesOut(BaseModel):
    """The four milestones (docs/report.md, "Milestones")."""

    started: MilestoneOut
    detected: MilestoneOut
    mitigated: MilestoneOut
    resolved: MilestoneOut


class DurationsOut(BaseModel):
    """Whole seconds from `started`; null when either end is unknown, 0 when the later
    milestone came first."""

    time_to_detect: int | None
    time_to_mitigate: int | None
    time_to_resolve: int | None


class ReportWindowOut(BaseModel):
    start: datetime | None = Field(description="The first entry's time; null with no entry.")
    end: datetime | None = Field(description="The last entry's time; null with no entry.")


class ReportCountsOut(BaseModel):
    confirmed: int
    drafts: int
    hidden: int
    withheld: int = Field(description="Entries left out because a message they cite was recalled.")


class ReportItemOut(BaseModel):
    entry_id: int
    occurred_at: datetime
    category: str
    status: str = Field(description="`confirmed`, or `draft` (still awaiting review).")
    text: str
    links: list[str] = Field(description="Lark applinks to the entry's messages.")
    owners: list[str] = Field(description="On a follow-up: the people named as its owners.")


class ReportSectionOut(BaseModel):
    key: str = Field(
        description="`impact`, `root_cause`, `decisions`, `mitigations`, `timeline`, "
        "`follow_ups` or `unconfirmed`."
    )
    title: str = Field(description="The section's title in the workspace's language.")
    items: list[ReportItemOut]


class ReportOut(BaseModel):
    """One revision of the incident report, as it was built (times in UTC). A revision that
    quoted a recalled message is `withdrawn`: its text is gone, so everything read from it is
    null (and `sections` empty) until the next build."""

    revision: int
    built_at: datetime
    built_by: str = Field(
        description="Who asked for the build: `dagster:<run>`, `cli:<user>`, `ui:<session>`."
    )
    withdrawn: bool
    document_url: str | None = Field(
        description="The workspace's Lark document (it shows the newest revision); null "
        "until it is created."
    )
    title: str | None
    status: str | None = Field(description="The workspace's status when it was built.")
    window: ReportWindowOut | None
    drafts_pending: bool | None = Field(description="Built while drafts awaited review.")
    milestones: MilestonesOut | None
    durations: DurationsOut | None
    sections: list[ReportSectionOut]
    counts: ReportCountsOut | None


class MilestoneIn(BaseModel):
    model_config = _INPUT

    at: AwareDatetime = Field(
        description="The milestone's time, ISO 8601 with its UTC offset, from 2000-01-01 to "
        "before 2100-01-01 UTC and not in the future. A time that would contradict the other "
        "milestones (after `resolved`, `resolved` before `started`, `started` after a later "
        "one) is 422 `invalid_input` with the reason, and nothing changes."
    )
