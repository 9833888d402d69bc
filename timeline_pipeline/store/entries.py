"""Timeline entries and their evidence bindings (docs/design.md §7): the SQL only.

Machine drafts are stored by (workspace_id, fingerprint). Which stored entry a new draft
restates, and what storing it should do, is the pure duplicate-draft policy of
`synthesis_run.draft_matching`, applied by `synthesis_run.draft_writes`; this module reads the
candidates it decides among (`restated_candidates`, `same_evidence_candidates`) and writes its
plans as compare-and-sets (INSERT ... ON CONFLICT, or UPDATE on id and revision) so two writers
cannot lose each other's changes.

The only module with SQL on `workspace_timeline_entries` and
`workspace_timeline_entry_evidence`, curation's reads and edits included (README, "Package
layout").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, false, func, select, tuple_
from sqlalchemy.engine import Row

from timeline_pipeline.db.cas import compare_and_set
from timeline_pipeline.db.rows import json_object
from timeline_pipeline.db.schema import workspace_timeline_entries as en
from timeline_pipeline.db.schema import workspace_timeline_entry_evidence as ee
from timeline_pipeline.db.schema import workspace_timeline_evidence as ev
from timeline_pipeline.db.upsert import insert_for, insert_new
from timeline_pipeline.domain.content_lineage import (
    RECALLED_TEXT,
    EntryRecall,
    OnRecall,
    RecallEffect,
    RecallScope,
    Tie,
    declare_content,
    entry_recall,
)
from timeline_pipeline.domain.entries import (
    ENTRY_STATUSES,
    MACHINE_SOURCES,
    VISIBLE_STATUSES,
    DraftWrite,
    EntryRow,
    EntrySource,
    EntryStatus,
)
from timeline_pipeline.domain.lifecycle import ChildLink, ParentLink, RequiredIndex, RetentionClass
from timeline_pipeline.domain.lifecycle_declare import archive_on_request, declare
from timeline_pipeline.domain.records import record_of
from timeline_pipeline.store.window_states import SummaryWindow

__all__ = [
    "BoundEvidence",
    "ForeignEvidence",
    "bind",
    "bound_evidence",
    "bound_to_evidence",
    "check_evidence",
    "create_human_entry",
    "drafts_of_window",
    "edit_entry",
    "evidence_ids_of",
    "get",
    "get_by_fingerprint",
    "get_entry",
    "insert_draft",
    "list_for_workspace",
    "restated_candidates",
    "same_evidence_candidates",
    "set_status",
    "update_draft",
    "visible_entries",
    "visible_entry_counts",
]


class ForeignEvidence(ValueError):
    """A draft cited evidence of another workspace (or none at all); nothing was written."""


_SAME_EVIDENCE_SCAN = 50
"""Entries bound to one evidence row that a draft is compared with, at most."""


# --- reads -----------------------------------------------------------------------------------


def _to_entry(row: Row[Any], evidence_ids: Sequence[int] = ()) -> EntryRow:
    return record_of(
        EntryRow,
        row,
        source=EntrySource(row.source),
        status=EntryStatus(row.status),
        human_edited=bool(row.human_edited),
        recalled_evidence=bool(row.recalled_evidence),
        metadata=json_object(row.metadata_json),
        evidence_ids=tuple(evidence_ids),
    )


def evidence_ids_of(conn: Connection, entry_ids: Sequence[int]) -> dict[int, list[int]]:
    found: dict[int, list[int]] = {entry_id: [] for entry_id in entry_ids}
    if not entry_ids:
        return found
    rows = conn.execute(
        select(ee.c.entry_id, ee.c.evidence_id)
        .where(ee.c.entry_id.in_(list(entry_ids)))
        .order_by(ee.c.entry_id, ee.c.evidence_id)
    )
    for row in rows:
        found[row.entry_id].append(row.evidence_id)
    return found


def get(conn: Connection, entry_id: int) -> EntryRow | None:
    row = conn.execute(select(en).where(en.c.id == entry_id)).first()
    if row is None:
        return None
    return _to_entry(row, evidence_ids_of(conn, [row.id])[row.id])


def get_by_fingerprint(conn: Connection, workspace_id: str, fingerprint: str) -> EntryRow | None:
    row = conn.execute(
        select(en).where(en.c.workspace_id == workspace_id, en.c.fingerprint == fingerprint)
    ).first()
    if row is None:
        return None
    return _to_entry(row, evidence_ids_of(conn, [row.id])[row.id])


def restated_candidates(conn: Connection, draft: DraftWrite) -> list[EntryRow]:
    """Every stored entry under `draft`'s fingerprint or a nearby one, with bound evidence ids
    (`nearest_entry` picks among them; the rerun preview adds its own scratch images first)."""
    keys = sorted({draft.fingerprint, *draft.nearby_fingerprints})
    rows = conn.execute(
        select(en).where(en.c.workspace_id == draft.workspace_id, en.c.fingerprint.in_(keys))
    ).all()
    bound = evidence_ids_of(conn, [row.id for row in rows])
    return [_to_entry(row, bound[row.id]) for row in rows]


def bound_to_evidence(
    conn: Connection, workspace_id: str, evidence_ids: Sequence[int]
) -> list[EntryRow]:
    """The entries bound to any of these evidence rows, in (occurred_at, id) order, with their
    bound evidence ids: what a window's evidence supports (read by the rerun preview)."""
    if not evidence_ids:
        return []
    ids = select(ee.c.entry_id).where(
        ee.c.workspace_id == workspace_id, ee.c.evidence_id.in_(sorted(set(evidence_ids)))
    )
    rows = conn.execute(
        select(en)
        .where(en.c.workspace_id == workspace_id, en.c.id.in_(ids))
        .order_by(en.c.occurred_at, en.c.id)
    ).all()
    bound = evidence_ids_of(conn, [row.id for row in rows])
    return [_to_entry(row, bound[row.id]) for row in rows]


def same_evidence_candidates(conn: Connection, draft: DraftWrite) -> list[EntryRow]:
    """The entries of `draft`'s category bound to its first cited evidence row, oldest first,
    with bound evidence ids: where a reworded restatement of the same fact is looked for
    (`synthesis_run.draft_matching.first_same_evidence`). The binding table's evidence index
    narrows the scan; at most `_SAME_EVIDENCE_SCAN` of them."""
    cited = sorted({ref.id for ref in draft.evidence})
    if not cited:
        return []
    rows = conn.execute(
        select(en)
        .join(ee, ee.c.entry_id == en.c.id)
        .where(
            ee.c.evidence_id == cited[0],
            en.c.workspace_id == draft.workspace_id,
            en.c.category == draft.category,
        )
        .order_by(en.c.id)
        .limit(_SAME_EVIDENCE_SCAN)
    ).all()
    bound = evidence_ids_of(conn, [row.id for row in rows])
    return [_to_entry(row, bound[row.id]) for row in rows]


def list_for_workspace(
    conn: Connection,
    workspace_id: str,
    *,
    statuses: Sequence[EntryStatus] = VISIBLE_STATUSES,
    after: tuple[datetime, int] | None = None,
    limit: int = 200,
) -> list[EntryRow]:
    """A page of a workspace's timeline in (occurred_at, id) order, with bound evidence ids.

    Keyset paging (`after` = the last row's (occurred_at, id)) keeps every page one index range
    however long the timeline grows. Hidden entries are left out unless asked for.
    """
    stmt = select(en).where(en.c.workspace_id == workspace_id, en.c.status.in_(list(statuses)))
    if after is not None:
        stmt = stmt.where(tuple_(en.c.occurred_at, en.c.id) > tuple_(after[0], after[1]))
    rows = conn.execute(stmt.order_by(en.c.occurred_at, en.c.id).limit(limit)).all()
    bound = evidence_ids_of(conn, [row.id for row in rows])
    return [_to_entry(row, bound[row.id]) for row in rows]


def drafts_of_window(conn: Connection, window_state_id: int, *, limit: int) -> list[EntryRow]:
    """The drafts a window last created or changed, in time order, with bound evidence ids
    (what its review card offers)."""
    rows = conn.execute(
        select(en)
        .where(en.c.window_state_id == window_state_id, en.c.status == EntryStatus.DRAFT)
        .order_by(en.c.occurred_at, en.c.id)
        .limit(limit)
    ).all()
    bound = evidence_ids_of(conn, [row.id for row in rows])
    return [_to_entry(row, bound[row.id]) for row in rows]


# --- writes ----------------------------------------------------------------------------------


def check_evidence(conn: Connection, workspace_id: str, ids: set[int]) -> None:
    """Refuse (`ForeignEvidence`) a citation of no evidence or of another workspace's."""
    if not ids:
        raise ForeignEvidence("a draft must cite at least one evidence row")
    known = {
        row.id
        for row in conn.execute(
            select(ev.c.id).where(ev.c.workspace_id == workspace_id, ev.c.id.in_(sorted(ids)))
        )
    }
    missing = sorted(ids - known)
    if missing:
        raise ForeignEvidence(
            f"evidence ids {missing[:10]} are not evidence of workspace {workspace_id!r}"
        )


def bind(
    conn: Connection,
    workspace_id: str,
    entry_id: int,
    evidence_ids: Sequence[int],
    now: datetime,
) -> int:
    """Bind evidence rows to an entry; how many bindings were new."""
    if not evidence_ids:
        return 0
    stmt = insert_for(conn, ee).on_conflict_do_nothing().returning(ee.c.evidence_id)
    rows = conn.execute(
        stmt,
        [
            {
                "workspace_id": workspace_id,
                "entry_id": entry_id,
                "evidence_id": i,
                "created_at": now,
            }
            for i in evidence_ids
        ],
    ).all()
    return len(rows)


def insert_draft(
    conn: Connection,
    draft: DraftWrite,
    values: Mapping[str, Any],
    *,
    window_state_id: int | None,
    now: datetime,
) -> int | None:
    """Insert a new machine draft under its fingerprint with the planned `values`; None when
    someone stored the same fingerprint meanwhile (nothing was written)."""
    row = insert_new(
        conn,
        en,
        {
            "workspace_id": draft.workspace_id,
            "source": draft.source,
            "status": EntryStatus.DRAFT,
            "fingerprint": draft.fingerprint,
            "human_edited": False,
            "revision": 1,
            "window_state_id": window_state_id,
            "created_at": now,
            "updated_at": now,
            **values,
        },
        returning=[en.c.id],
    )
    return None if row is None else int(row.id)


def update_draft(
    conn: Connection,
    existing: EntryRow,
    values: Mapping[str, Any],
    *,
    window_state_id: int | None,
    now: datetime,
) -> bool:
    """Rewrite a machine draft with the planned `values`, only if it is still the machine draft
    at the revision read; False when it changed meanwhile (nothing was written)."""
    result = conn.execute(
        en.update()
        .where(
            en.c.id == existing.id,
            en.c.revision == existing.revision,
            en.c.status == EntryStatus.DRAFT,
            en.c.source.in_(MACHINE_SOURCES),
            en.c.human_edited == false(),
        )
        .values(
            revision=en.c.revision + 1,
            updated_at=now,
            window_state_id=window_state_id
            if window_state_id is not None
            else existing.window_state_id,
            **values,
        )
    )
    return result.rowcount == 1


def create_human_entry(
    conn: Connection,
    workspace_id: str,
    *,
    occurred_at: datetime,
    title: str,
    category: str,
    detail: str | None = None,
    fingerprint: str | None = None,
    evidence_ids: Sequence[int] = (),
    now: datetime | None = None,
) -> EntryRow:
    """A curator's own entry (`source=human`, confirmed): synthesis never touches it."""
    stamp = now or datetime.now(UTC)
    row = conn.execute(
        en.insert()
        .values(
            workspace_id=workspace_id,
            occurred_at=occurred_at,
            title=title,
            detail=detail,
            category=category,
            source=EntrySource.HUMAN,
            status=EntryStatus.CONFIRMED,
            fingerprint=fingerprint,
            human_edited=False,
            revision=1,
            metadata_json={},
            created_at=stamp,
            updated_at=stamp,
        )
        .returning(en.c.id)
    ).one()
    if evidence_ids:
        check_evidence(conn, workspace_id, set(evidence_ids))
        bind(conn, workspace_id, row.id, sorted(set(evidence_ids)), stamp)
    entry = get(conn, row.id)
    assert entry is not None
    return entry


def set_status(
    conn: Connection, entry: EntryRow, status: EntryStatus, *, now: datetime | None = None
) -> EntryRow | None:
    """A curator confirms, hides or re-opens an entry; None when it changed meanwhile."""
    if status not in ENTRY_STATUSES:
        raise ValueError(f"invalid entry status {status!r}")
    result = conn.execute(
        en.update()
        .where(en.c.id == entry.id, en.c.revision == entry.revision)
        .values(status=status, revision=en.c.revision + 1, updated_at=now or datetime.now(UTC))
    )
    return get(conn, entry.id) if result.rowcount == 1 else None


# --- curation: a curator's view and edits ------------------------------------------------


@dataclass(frozen=True, slots=True)
class BoundEvidence:
    entry_id: int
    evidence_id: int
    source: str
    source_type: str
    source_key: str
    occurred_at: datetime
    deleted: bool


def get_entry(conn: Connection, workspace_id: str, entry_id: int) -> EntryRow | None:
    """The entry if it belongs to `workspace_id`; another workspace's entry is not found."""
    entry = get(conn, entry_id)
    return entry if entry is not None and entry.workspace_id == workspace_id else None


def edit_entry(
    conn: Connection, entry: EntryRow, values: Mapping[str, Any], *, now: datetime
) -> EntryRow | None:
    """A curator's rewrite, applied only if the entry is still at the revision they saw.

    Sets `human_edited`, which is what keeps synthesis from ever rewriting the text again.
    None when the entry changed meanwhile.
    """
    allowed = {"title", "detail", "category", "occurred_at"}
    unknown = set(values) - allowed
    if unknown:
        raise ValueError(f"not editable: {sorted(unknown)}")
    result = conn.execute(
        en.update()
        .where(en.c.id == entry.id, en.c.revision == entry.revision)
        .values(**values, human_edited=True, revision=en.c.revision + 1, updated_at=now)
    )
    return get(conn, entry.id) if result.rowcount == 1 else None


def bound_evidence(
    conn: Connection, workspace_id: str, entry_ids: Sequence[int]
) -> dict[int, list[BoundEvidence]]:
    """Each entry's evidence (id, source identity) in (occurred_at, id) order, in one query."""
    found: dict[int, list[BoundEvidence]] = {entry_id: [] for entry_id in entry_ids}
    if not entry_ids:
        return found
    rows = conn.execute(
        select(
            ee.c.entry_id,
            ev.c.id,
            ev.c.source,
            ev.c.source_type,
            ev.c.source_key,
            ev.c.occurred_at,
            ev.c.deleted,
        )
        .join(ev, ev.c.id == ee.c.evidence_id)
        .where(ee.c.entry_id.in_(list(entry_ids)), ev.c.workspace_id == workspace_id)
        .order_by(ee.c.entry_id, ev.c.occurred_at, ev.c.id)
    )
    for row in rows:
        found[row.entry_id].append(
            BoundEvidence(
                row.entry_id,
                row.id,
                row.source,
                row.source_type,
                row.source_key,
                row.occurred_at,
                bool(row.deleted),
            )
        )
    return found


def visible_entries(conn: Connection, workspace_id: str, *, limit: int) -> list[EntryRow]:
    """Draft and confirmed entries in time order, at most `limit` (never a hidden one)."""
    found: list[EntryRow] = []
    after: tuple[datetime, int] | None = None
    while len(found) < limit:
        want = min(500, limit - len(found))
        page = list_for_workspace(
            conn, workspace_id, statuses=VISIBLE_STATUSES, after=after, limit=want
        )
        found.extend(page)
        if len(page) < want:
            break
        after = (page[-1].occurred_at, page[-1].id)
    return found


def status_counts(conn: Connection, workspace_id: str) -> dict[str, int]:
    """How many of the workspace's entries stand in each status (the report's counts)."""
    rows = conn.execute(
        select(en.c.status, func.count())
        .where(en.c.workspace_id == workspace_id)
        .group_by(en.c.status)
    )
    return {str(status): int(count) for status, count in rows}


def confirmed_versions(conn: Connection, workspace_id: str) -> list[tuple[int, int, bool]]:
    """(id, revision, recalled_evidence) of every confirmed entry: what the report sensor
    digests to tell whether the confirmed timeline changed since the report was built
    (docs/report.md, "When it is built")."""
    rows = conn.execute(
        select(en.c.id, en.c.revision, en.c.recalled_evidence)
        .where(en.c.workspace_id == workspace_id, en.c.status == EntryStatus.CONFIRMED)
        .order_by(en.c.id)
    )
    return [(int(i), int(r), bool(flag)) for i, r, flag in rows]


def visible_entry_counts(conn: Connection, windows: Sequence[SummaryWindow]) -> dict[int, int]:
    """How many visible entries each window state last created or changed.

    Filtered by the windows' workspaces too, so the (workspace_id, occurred_at, id) index
    narrows the scan to those workspaces' entries.
    """
    counts = {w.state_id: 0 for w in windows}
    if not windows:
        return counts
    rows = conn.execute(
        select(en.c.window_state_id, func.count().label("n"))
        .where(
            en.c.workspace_id.in_(sorted({w.workspace_id for w in windows})),
            en.c.window_state_id.in_(sorted(counts)),
            en.c.status.in_(VISIBLE_STATUSES),
        )
        .group_by(en.c.window_state_id)
    )
    for row in rows:
        counts[row.window_state_id] = int(row.n)
    return counts


# --- a recall's copies (docs/lifecycle.md, "What a recall and a hold do to each copy") ---------

HELD_TEXT_KEY = "held_recalled_text"
"""Where a held workspace's entry keeps the text a recall replaced, until the hold is released
(as the evidence keeps its content in `held_content_json`); no view or API reads it."""


def recall_copies(
    conn: Connection, scope: RecallScope, _changed: Sequence[int] = ()
) -> RecallEffect:
    """Apply the recall of `scope.evidence_ids` to every entry of the workspace bound to them,
    each by who wrote it (`content_lineage.entry_recall`), one compare-and-set per entry in the
    recall's transaction. An entry already in its recalled state is left as it is, so a recall
    delivered twice changes nothing. Returns the entries whose text or flag moved."""
    if not scope.evidence_ids:
        return RecallEffect()
    entry_ids = sorted(
        {
            row.entry_id
            for row in conn.execute(
                select(ee.c.entry_id).where(
                    ee.c.workspace_id == scope.workspace_id,
                    ee.c.evidence_id.in_(list(scope.evidence_ids)),
                )
            )
        }
    )
    bound = bound_evidence(conn, scope.workspace_id, entry_ids)
    moved: list[int] = []
    for entry_id in entry_ids:
        entry = get_entry(conn, scope.workspace_id, entry_id)
        if entry is None:
            continue
        action = entry_recall(
            source=entry.source,
            status=entry.status,
            human_edited=entry.human_edited,
            fingerprint=entry.fingerprint,
            all_evidence_recalled=all(b.deleted for b in bound[entry_id]),
        )
        values = _recalled_values(entry, action, held=scope.held)
        if not values:
            continue
        values["updated_at"] = scope.now
        if compare_and_set(conn, en, row_id=entry.id, revision=entry.revision, values=values):
            moved.append(entry.id)
    return RecallEffect(rows=len(moved), entry_ids=tuple(moved))


def _recalled_values(entry: EntryRow, action: EntryRecall, *, held: bool) -> dict[str, Any]:
    """The columns a recall changes on `entry`; empty when it is already so."""
    values: dict[str, Any] = {}
    if not entry.recalled_evidence:
        values["recalled_evidence"] = True
    if action is EntryRecall.FLAG:
        return values
    if entry.title != RECALLED_TEXT or entry.detail is not None:
        values.update(title=RECALLED_TEXT, detail=None)
        if held and HELD_TEXT_KEY not in entry.metadata:
            kept = {"title": entry.title, "detail": entry.detail}
            values["metadata_json"] = {**entry.metadata, HELD_TEXT_KEY: kept}
    if action is EntryRecall.REDACT_AND_HIDE and entry.status != EntryStatus.HIDDEN:
        values["status"] = EntryStatus.HIDDEN
    return values


CONTENT = declare_content(
    __name__,
    "workspace_timeline_entries",
    text_columns=("title", "detail"),
    tie=Tie.ENTRY_EVIDENCE,
    on_recall=OnRecall.BY_AUTHOR,
    apply=recall_copies,
    stage=0,
    notes="A machine draft whose every message is recalled is redacted and hidden; a pin's "
    "entry is redacted; a curator's text is kept and flagged (`recalled_evidence`).",
)


# --- lifecycle -------------------------------------------------------------------------------

DESCRIPTORS = (
    declare(
        __name__,
        "workspace_timeline_entries",
        RetentionClass.COMMUNICATION_LOG,
        cursor_column="occurred_at",
        min_days=30,
        archive=archive_on_request("The curated timeline"),
        chain="timeline",
        children=(ChildLink("entries.workspace_timeline_entry_evidence", "entry_id"),),
    ),
    declare(
        __name__,
        "workspace_timeline_entry_evidence",
        RetentionClass.COMMUNICATION_LOG,
        cursor_column="created_at",
        default_days=30,
        indexes=(
            RequiredIndex(("evidence_id",), "evidence's live-child probe"),
            RequiredIndex(("entry_id", "evidence_id"), "entries' live-child probe"),
        ),
        batch_limit=10_000,
        archive=archive_on_request("Entry-to-evidence bindings"),
        chain="timeline",
        parents=(
            ParentLink("entries.workspace_timeline_entries", "entry_id"),
            ParentLink("evidence.workspace_timeline_evidence", "evidence_id"),
        ),
        notes="The leaves of the timeline chain: a binding goes only when its entry and its "
        "evidence have both aged out, and before them.",
    ),
)
