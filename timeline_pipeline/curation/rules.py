"""The curation rules, with no I/O: which status an action leads to, what text is acceptable,
and how revisions and ETags express "I edited what I saw".

Statuses: `draft` (a machine proposal), `confirmed` (a curator vouched for it), `hidden` (kept
for traceability, never shown by default and never fed to the summary). Transitions:

| action  | from             | to                                       |
|---------|------------------|------------------------------------------|
| confirm | draft            | confirmed                                |
| hide    | draft, confirmed | hidden                                   |
| restore | hidden           | confirmed (human entry) / draft (machine)|

Anything else is an invalid transition, including confirming what is already confirmed: a
client that thinks an entry is a draft when it is not is acting on a stale view and should
re-read rather than believe it succeeded. Edits apply in every status and mark the entry
`human_edited`, after which synthesis never rewrites its text (store/entries.py).
"""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, datetime
from enum import StrEnum

from timeline_pipeline.domain.entries import EntrySource, EntryStatus
from timeline_pipeline.domain.errors import InvalidInput, InvalidTransition, StaleRevision
from timeline_pipeline.synthesis.contract import Category

__all__ = [
    "CATEGORIES",
    "DETAIL_MAX_CHARS",
    "MAX_EVIDENCE_PER_ENTRY",
    "SUMMARY_MAX_CHARS",
    "TITLE_MAX_CHARS",
    "Action",
    "check_category",
    "check_revision",
    "check_text",
    "check_time",
    "entry_etag",
    "entry_etag_prefix",
    "revision_from_if_match",
    "summary_etag",
    "summary_etag_prefix",
    "target_status",
]

CATEGORIES = tuple(c.value for c in Category)
TITLE_MAX_CHARS = 512  # the column's width
DETAIL_MAX_CHARS = 10_000
SUMMARY_MAX_CHARS = 20_000
MAX_EVIDENCE_PER_ENTRY = 200


class Action(StrEnum):
    CONFIRM = "confirm"
    HIDE = "hide"
    RESTORE = "restore"


_TRANSITIONS: dict[Action, tuple[EntryStatus, ...]] = {
    Action.CONFIRM: (EntryStatus.DRAFT,),
    Action.HIDE: (EntryStatus.DRAFT, EntryStatus.CONFIRMED),
    Action.RESTORE: (EntryStatus.HIDDEN,),
}


def target_status(action: Action, status: str, source: str) -> EntryStatus:
    """The status `action` moves an entry to, or InvalidTransition naming what is allowed."""
    allowed = _TRANSITIONS[action]
    if status not in allowed:
        raise InvalidTransition(
            f"cannot {action.value} an entry that is {status} "
            f"(only {' or '.join(allowed)} entries can be {_past(action)})"
        )
    if action is Action.CONFIRM:
        return EntryStatus.CONFIRMED
    if action is Action.HIDE:
        return EntryStatus.HIDDEN
    # A person wrote a human entry: it comes back as they left it, not as a machine proposal.
    return EntryStatus.CONFIRMED if source == EntrySource.HUMAN else EntryStatus.DRAFT


def _past(action: Action) -> str:
    return {Action.CONFIRM: "confirmed", Action.HIDE: "hidden", Action.RESTORE: "restored"}[action]


def check_revision(expected: int | None, current: int, what: str = "entry") -> None:
    """None means the caller asked for no check (an operator acting on the current state)."""
    if expected is not None and expected != current:
        raise StaleRevision(
            f"{what} is at revision {current}, not {expected}: re-read it and apply the change "
            "again",
            current,
        )


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def check_text(value: str, field: str, max_chars: int, *, multiline: bool = True) -> str:
    """Trimmed text that every database stores as given, or InvalidInput naming the field.

    NUL and other control characters are refused (PostgreSQL cannot store NUL in text, and a
    terminal or a Markdown export would render the others as garbage); so are lone surrogates,
    which have no UTF-8 encoding. A single-line field also refuses line breaks.
    """
    text = value.strip()
    if not text:
        raise InvalidInput(f"{field} must not be blank")
    if len(text) > max_chars:
        raise InvalidInput(f"{field} is {len(text)} characters; at most {max_chars} are allowed")
    if _CONTROL.search(text) or (not multiline and ("\n" in text or "\r" in text)):
        raise InvalidInput(f"{field} contains control characters")
    if any(unicodedata.category(ch) == "Cs" for ch in text):
        raise InvalidInput(f"{field} is not valid Unicode text")
    return text


EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
LATEST = datetime(2100, 1, 1, tzinfo=UTC)


def check_time(value: datetime, field: str = "occurred_at") -> datetime:
    """A timezone-aware time within sane bounds, in UTC.

    The bounds keep a typo (year 20026) or a naive local time from sorting an entry to the far
    end of the timeline, and keep the UTC conversion itself from overflowing.
    """
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInput(f"{field} needs a timezone, e.g. 2026-11-29T10:00:00Z")
    try:
        moment = value.astimezone(UTC)
    except (OverflowError, ValueError):
        raise InvalidInput(f"{field} is out of range") from None
    if not EARLIEST <= moment < LATEST:
        raise InvalidInput(f"{field} must be between 2000 and 2100")
    return moment


def check_category(value: str) -> str:
    if value not in CATEGORIES:
        raise InvalidInput(f"unknown category {value!r}: expected one of {', '.join(CATEGORIES)}")
    return value


def entry_etag_prefix(entry_id: int) -> str:
    return f"e{entry_id}"


def summary_etag_prefix(workspace_id: str) -> str:
    return f"s.{workspace_id}"


def entry_etag(entry_id: int, revision: int) -> str:
    """A strong ETag naming the entry and its revision (If-Match compares these exactly)."""
    return f'"{entry_etag_prefix(entry_id)}.r{revision}"'


def summary_etag(workspace_id: str, revision: int) -> str:
    return f'"{summary_etag_prefix(workspace_id)}.r{revision}"'


_TAG = re.compile(r'^"([A-Za-z0-9._-]{1,200})\.r([0-9]{1,10})"$')


def revision_from_if_match(header: str, etag_prefix: str) -> int | None:
    """The revision an If-Match header names for the resource whose tags start `etag_prefix`.

    None for `*` (any current revision). One tag only: a list would let a client hedge between
    versions it has seen, which is not an edit of what it saw. A well-formed tag of another
    resource can never match, so it is a stale precondition (409), not a malformed one (400).
    """
    value = header.strip()
    if value == "*":
        return None
    if value.startswith("W/"):
        raise InvalidInput("If-Match needs a strong entity tag (as returned in ETag), not W/...")
    match = _TAG.match(value)
    if match is None:
        raise InvalidInput('If-Match must be "*" or one entity tag as returned in ETag')
    if match.group(1) != etag_prefix:
        raise StaleRevision("If-Match names another resource's entity tag", None)
    return int(match.group(2))
