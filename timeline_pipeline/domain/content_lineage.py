"""The content lineage: where a message's text is copied, declared next to each table (no I/O).

A message's text does not live only in its evidence row: a pin's entry takes it as its title, a
machine draft and the summary are written from it, a review card and a pin's reply quote the
entry, a rerun preview proposes titles from it. Each store module that keeps such text declares
it with `declare_content` beside its lifecycle descriptor (docs/lifecycle.md, "What a recall and
a hold do to each copy"): the table, its text columns, how a row is tied to the message (an
evidence id column, the entry-evidence binding, a message id, or the workspace as a whole), what
a recall does to it, and the store function that does it. The registry check
(`lifecycle/live_check.py`) refuses a table with free-text columns that is neither declared nor
named as holding no message text, and `ingest/recall.py` acts on every declaration through one
seam. What a recall does to an entry depends on who wrote it: `entry_recall` decides, pure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Final

from timeline_pipeline.domain.entries import MACHINE_SOURCES, EntrySource, EntryStatus
from timeline_pipeline.domain.lifecycle_declare import owner_of

RECALLED_TEXT: Final = "[recalled]"
"""What stands where a recalled message's text was (a title is never empty); the page and the
API flag the entry beside it in the reader's language."""

PIN_FINGERPRINT_PREFIX: Final = "pin-"
"""A pin's entry is keyed by this prefix (`pins.service.pin_fingerprint`)."""


class Tie(StrEnum):
    """How a row of a copy is tied to the message it quotes."""

    EVIDENCE = "evidence"
    """The row is the message itself (the evidence store)."""
    EVIDENCE_ID = "evidence_id"
    """An evidence id in a column (or a JSON list of them)."""
    ENTRY_EVIDENCE = "entry_evidence"
    """Through the entry-evidence binding (`workspace_timeline_entry_evidence`)."""
    ENTRY = "entry"
    """Quotes an entry by id, so it follows what the recall did to the entry."""
    WORKSPACE = "workspace"
    """Written from the workspace's whole timeline (the summary)."""


class OnRecall(StrEnum):
    """What a recall does to a copy (docs/lifecycle.md)."""

    REDACT = "redact"
    """The text is replaced (`RECALLED_TEXT`), the row kept for traceability."""
    DROP = "drop"
    """The text, or the row, goes."""
    BY_AUTHOR = "by_author"
    """Decided per row by who wrote it (`entry_recall`): redact, hide or keep-and-flag."""
    STALE = "stale"
    """Generated from many rows: its stale text is dropped and it is written again."""
    IDS_ONLY = "ids_only"
    """Keeps ids and counts, never text: nothing to do."""


@dataclass(frozen=True, slots=True)
class RecallScope:
    """One recall in one workspace: the evidence rows it redacted, and whether a legal hold
    reaches the workspace (then the replaced text is set aside, never dropped)."""

    workspace_id: str
    evidence_ids: tuple[int, ...]
    now: datetime
    held: bool


@dataclass(frozen=True, slots=True)
class RecallEffect:
    """What one copy's recall changed: rows touched and the entries whose text moved (the cards
    and the summary follow those)."""

    rows: int = 0
    entry_ids: tuple[int, ...] = ()


Apply = Callable[[Any, RecallScope, Sequence[int]], RecallEffect]
"""A store's recall of its copy: (the caller's connection, scope, the entries changed so far)
-> effect. The connection is `Any` here only because this module imports no database library."""


@dataclass(frozen=True, slots=True)
class ContentCopy:
    """One table's copy of message text."""

    key: str
    table_name: str
    owner: str
    text_columns: tuple[str, ...]
    tie: Tie
    tie_column: str | None
    on_recall: OnRecall
    apply: Apply | None
    stage: int
    notes: str


def declare_content(
    module: str,
    table_name: str,
    *,
    text_columns: tuple[str, ...],
    tie: Tie,
    on_recall: OnRecall,
    tie_column: str | None = None,
    apply: Apply | None = None,
    stage: int = 0,
    notes: str = "",
) -> ContentCopy:
    """The declaration of `table_name`'s copy of message text, by `module` (pass `__name__`).

    `apply` is the store's own function the recall seam calls (None when the copy needs no
    action: the evidence, which the recall itself redacts, or ids only); `stage` orders them:
    entries (0) before what quotes entries (1)."""
    owner = owner_of(module)
    return ContentCopy(
        key=f"{owner}.{table_name}",
        table_name=table_name,
        owner=owner,
        text_columns=text_columns,
        tie=tie,
        tie_column=tie_column,
        on_recall=on_recall,
        apply=apply,
        stage=stage,
        notes=notes,
    )


# --- entries: who wrote the text decides ----------------------------------------------------


class EntryRecall(StrEnum):
    """What a recall does to one entry bound to the recalled message."""

    REDACT_AND_HIDE = "redact_and_hide"
    """A machine draft written only from recalled messages: its text goes and it is hidden."""
    REDACT = "redact"
    """A pin's entry (its title is the message): the text goes, the curators' decision stays."""
    FLAG = "flag"
    """A curator's text (written, edited or confirmed): kept, flagged for its curators."""


def entry_recall(
    *,
    source: EntrySource,
    status: EntryStatus,
    human_edited: bool,
    fingerprint: str | None,
    all_evidence_recalled: bool,
) -> EntryRecall:
    """The rule of docs/lifecycle.md ("What a recall and a hold do to each copy").

    A machine draft nobody touched whose every message is recalled has nothing left to stand
    on: an incident tool hides it (kept, not deleted, so its id and bindings stay traceable)
    with its text replaced. A draft with other live messages keeps its text, flagged: the next
    synthesis of its window rewrites it from what is left. A pin's entry quotes the message
    verbatim, so its text goes whatever its status; once a curator rewrote it, it is theirs.
    Any other entry is a person's words or decision: kept and flagged."""
    machine_draft = source in MACHINE_SOURCES and status == EntryStatus.DRAFT and not human_edited
    if machine_draft:
        return EntryRecall.REDACT_AND_HIDE if all_evidence_recalled else EntryRecall.FLAG
    is_pin = (
        source == EntrySource.HUMAN
        and fingerprint is not None
        and fingerprint.startswith(PIN_FINGERPRINT_PREFIX)
    )
    if is_pin and not human_edited:
        return EntryRecall.REDACT
    return EntryRecall.FLAG


def check_copies(copies: Sequence[ContentCopy]) -> list[str]:
    """Each declaration on its own: text columns named, a tie column where the tie needs one,
    unique keys. Pure; `live_check` checks the columns against the schema."""
    errors: list[str] = []
    seen: set[str] = set()
    for copy in copies:
        if copy.key in seen:
            errors.append(f"{copy.key}: declared twice")
        seen.add(copy.key)
        if not copy.text_columns:
            errors.append(f"{copy.key}: names no text column")
        if copy.tie in (Tie.EVIDENCE_ID, Tie.ENTRY) and copy.tie_column is None:
            errors.append(f"{copy.key}: tie {copy.tie} needs tie_column")
        acting = copy.on_recall not in (OnRecall.IDS_ONLY,) and copy.tie is not Tie.EVIDENCE
        if acting and copy.apply is None:
            errors.append(f"{copy.key}: on_recall {copy.on_recall} needs the store's apply")
    return errors
