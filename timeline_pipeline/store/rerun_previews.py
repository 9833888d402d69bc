"""Scratch rows of rerun previews (`window_rerun_previews`; docs/maintenance.md, "Preview a
rerun").

A `window_rerun` dry-run records here, keyed by its maintenance job, what the new processor
version would propose in each window (`proposal` rows, with the outcome the entries store
would reach: added, changed, unchanged, supported, untouched) and which stored entries the
window's evidence already supports (`prior` rows: the machine drafts that may be dropped and
the entries a person confirmed, edited, hid or wrote). Proposals that create or change an entry
are also the preview's own images of those entries, so a later window of the same preview plans
against what the rerun would have written by then, not against the timeline as it is.

Nothing but the preview reads this table, and nothing of it is an entry: no view, API, summary,
card or health read touches it, and the apply (the versioned rerun) never looks at it. The
lifecycle purges it after a short retention. The only module with its SQL.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from sqlalchemy import Connection, case, func, select

from timeline_pipeline.db.rows import first_record, json_object, records
from timeline_pipeline.db.schema import window_rerun_previews as pv
from timeline_pipeline.domain.content_lineage import (
    RECALLED_TEXT,
    OnRecall,
    RecallEffect,
    RecallScope,
    Tie,
    declare_content,
)
from timeline_pipeline.domain.lifecycle import RetentionClass
from timeline_pipeline.domain.lifecycle_declare import declare
from timeline_pipeline.domain.records import record_of

__all__ = [
    "DESCRIPTOR",
    "PRIOR",
    "PROPOSAL",
    "PreviewRow",
    "add",
    "count_for_job",
    "has_prior",
    "images",
    "latest_change",
    "proposal_entry_ids",
    "rows_for_job",
    "texts",
]

PROPOSAL: Final = "proposal"
PRIOR: Final = "prior"
CHANGED: Final = "changed"
ADDED: Final = "added"


@dataclass(frozen=True, slots=True)
class PreviewRow:
    id: int
    workspace_id: str
    job_id: str
    chat_id: str
    window_start: datetime
    kind: str
    outcome: str
    entry_id: int | None
    image_id: int | None
    fingerprint: str | None
    occurred_at: datetime
    title: str
    category: str
    detail: str | None
    old_title: str | None
    old_category: str | None
    status: str | None
    source: str | None
    reason: str | None
    evidence: Mapping[str, Any]
    created_at: datetime


def _row(row: Any) -> PreviewRow:
    return record_of(PreviewRow, row, evidence=json_object(row.evidence_json))


def add(conn: Connection, values: Mapping[str, Any]) -> int:
    """One scratch row in the caller's transaction (the preview's batch); its id."""
    row = conn.execute(pv.insert().values(**values).returning(pv.c.id)).one()
    return int(row.id)


def has_prior(conn: Connection, job_id: str, entry_id: int) -> bool:
    """Whether this preview already listed the entry (under an earlier window)."""
    found = conn.execute(
        select(pv.c.id)
        .where(pv.c.job_id == job_id, pv.c.kind == PRIOR, pv.c.entry_id == entry_id)
        .limit(1)
    ).first()
    return found is not None


def images(conn: Connection, job_id: str, fingerprints: Iterable[str]) -> list[PreviewRow]:
    """The entries this preview would create, stored under one of `fingerprints`."""
    keys = sorted(set(fingerprints))
    if not keys:
        return []
    return records(
        conn,
        select(pv)
        .where(
            pv.c.job_id == job_id,
            pv.c.kind == PROPOSAL,
            pv.c.outcome == ADDED,
            pv.c.fingerprint.in_(keys),
        )
        .order_by(pv.c.id),
        _row,
    )


def images_of_job(conn: Connection, job_id: str) -> list[PreviewRow]:
    """Every entry this preview would create, in the order it would create them: the candidates
    a draft is re-found among by its evidence when no fingerprint matches
    (`synthesis_run.draft_writes.find_same_evidence`)."""
    return records(
        conn,
        select(pv)
        .where(pv.c.job_id == job_id, pv.c.kind == PROPOSAL, pv.c.outcome == ADDED)
        .order_by(pv.c.id),
        _row,
    )


def latest_change(
    conn: Connection, job_id: str, *, entry_id: int | None = None, image_id: int | None = None
) -> PreviewRow | None:
    """The last proposal of this preview that changed a stored entry (`entry_id`) or an entry
    the preview creates (`image_id`): that entry as the rerun would have left it."""
    stmt = select(pv).where(pv.c.job_id == job_id, pv.c.kind == PROPOSAL, pv.c.outcome == CHANGED)
    if entry_id is not None:
        stmt = stmt.where(pv.c.entry_id == entry_id, pv.c.image_id.is_(None))
    elif image_id is not None:
        stmt = stmt.where(pv.c.image_id == image_id)
    else:
        return None
    return first_record(conn, stmt.order_by(pv.c.id.desc()).limit(1), _row)


def rows_for_job(conn: Connection, job_id: str, *, limit: int) -> list[PreviewRow]:
    """The preview's rows in window order, at most `limit` (the report lists that many)."""
    return records(
        conn,
        select(pv)
        .where(pv.c.job_id == job_id)
        .order_by(pv.c.chat_id, pv.c.window_start, pv.c.id)
        .limit(limit),
        _row,
    )


def proposal_entry_ids(conn: Connection, job_id: str) -> set[int]:
    """Stored entries some proposal of this preview restates (kept, changed or supported)."""
    rows = conn.execute(
        select(pv.c.entry_id)
        .where(pv.c.job_id == job_id, pv.c.kind == PROPOSAL, pv.c.entry_id.is_not(None))
        .distinct()
    )
    return {int(row.entry_id) for row in rows}


def count_for_job(conn: Connection, job_id: str) -> int:
    return int(
        conn.execute(select(func.count()).select_from(pv).where(pv.c.job_id == job_id)).scalar()
        or 0
    )


TEXT_PAGE: Final = 1_000


def texts(
    conn: Connection, job_id: str, row_ids: Iterable[int]
) -> dict[int, tuple[str, str, str | None]]:
    """The kind, title and old title of this preview's rows among `row_ids`, as they are now:
    the report a curator reads takes its titles from here at read time, never from the job's
    stored result, so a recall or the purge of these rows takes the text out of the report
    too (docs/maintenance.md, "Preview a rerun")."""
    wanted = sorted(set(row_ids))
    found: dict[int, tuple[str, str, str | None]] = {}
    for start in range(0, len(wanted), TEXT_PAGE):
        page = wanted[start : start + TEXT_PAGE]
        rows = conn.execute(
            select(pv.c.id, pv.c.kind, pv.c.title, pv.c.old_title).where(
                pv.c.job_id == job_id, pv.c.id.in_(page)
            )
        )
        for row in rows:
            found[int(row.id)] = (str(row.kind), str(row.title), row.old_title)
    return found


# --- lifecycle -------------------------------------------------------------------------------

DESCRIPTOR = declare(
    __name__,
    "window_rerun_previews",
    RetentionClass.OPERATIONAL_QUEUE,
    cursor_column="created_at",
    default_days=2,
    max_days=14,
    batch_limit=10_000,
    notes="Scratch rows of rerun previews, the only place a preview keeps proposed titles (the "
    "job's report keeps ids and counts and reads them from here); purged two days after they "
    "were written.",
)


# --- a recall's copies (docs/lifecycle.md, "What a recall and a hold do to each copy") ---------


def recall_copies(conn: Connection, scope: RecallScope, changed: Iterable[int]) -> RecallEffect:
    """Scratch rows quoting a recalled message (its evidence id in `evidence_json`) or an entry
    the recall changed lose their titles and detail: a preview never keeps text a recall took
    back (the rows live two days; the held message itself stays in its evidence row)."""
    recalled = set(scope.evidence_ids)
    entries = set(changed)
    ids = [
        row.id
        for row in conn.execute(
            select(pv.c.id, pv.c.entry_id, pv.c.evidence_json, pv.c.title).where(
                pv.c.workspace_id == scope.workspace_id
            )
        )
        if row.title != RECALLED_TEXT
        and (row.entry_id in entries or recalled & _evidence_ids(json_object(row.evidence_json)))
    ]
    if ids:
        conn.execute(
            pv.update()
            .where(pv.c.id.in_(ids))
            .values(
                title=RECALLED_TEXT,
                detail=None,
                old_title=case((pv.c.old_title.is_(None), None), else_=RECALLED_TEXT),
            )
        )
    return RecallEffect(rows=len(ids))


def _evidence_ids(evidence: Mapping[str, Any]) -> set[int]:
    return {i for value in evidence.values() if isinstance(value, list) for i in value}


CONTENT = declare_content(
    __name__,
    "window_rerun_previews",
    text_columns=("title", "detail", "old_title"),
    tie=Tie.EVIDENCE_ID,
    tie_column="evidence_json",
    on_recall=OnRecall.REDACT,
    apply=recall_copies,
    stage=1,
)
