"""Timeline entries and their evidence bindings (docs/design.md §7).

Machine drafts are stored by (workspace_id, fingerprint): the fingerprint is the first
deduplication layer, so a replayed window re-finds the drafts it wrote before instead of adding
copies. It is scoped in time: a draft also carries the keys the same fact has when stated
nearby (`nearby_fingerprints`), and merges into an entry holding one of them only if that entry
was first proposed within `merge_within` of the draft (`nearest_entry`); a repeat of the event
further apart is an entry of its own. The fingerprint follows the wording, which a model may
change on a restart or a replay, so a draft that matches no fingerprint is also re-found by its
evidence: an entry of the same category bound to exactly the evidence the draft cites (or that
the entry's first draft cited) is the same fact (`find_same_evidence`).

What a curator owns is never rewritten: confirmed, hidden, human-created and human-edited
entries keep their text. A confirmed (or human-edited) entry still gains the new
evidence that supports it, because "who said this" stays useful after review; a hidden or
human-created entry is left exactly as it is.

Every state change is a compare-and-set (INSERT ... ON CONFLICT, or UPDATE on id and
revision) so two writers cannot lose each other's changes; the decision itself is the pure
`plan_draft_write`, tested as a table.

The only module with SQL on `workspace_timeline_entries` and
`workspace_timeline_entry_evidence`, curation's reads and edits included (README, "Package
layout").
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from sqlalchemy import Connection, false, func, select, tuple_
from sqlalchemy.engine import Row

from timeline_pipeline.db.schema import workspace_timeline_entries as en
from timeline_pipeline.db.schema import workspace_timeline_entry_evidence as ee
from timeline_pipeline.db.schema import workspace_timeline_evidence as ev
from timeline_pipeline.db.upsert import insert_for
from timeline_pipeline.domain.lifecycle import ChildLink, ParentLink, RequiredIndex, RetentionClass
from timeline_pipeline.domain.lifecycle_declare import archive_on_request, declare
from timeline_pipeline.store.window_states import SummaryWindow

__all__ = [
    "MACHINE_SOURCES",
    "MAX_METADATA_EVIDENCE",
    "VISIBLE",
    "BoundEvidence",
    "DraftOutcome",
    "DraftPlan",
    "DraftWrite",
    "EntryRow",
    "EvidenceRef",
    "ForeignEvidence",
    "UpsertResult",
    "bound_evidence",
    "bound_to_evidence",
    "create_human_entry",
    "drafts_of_window",
    "edit_entry",
    "edit_text",
    "evidence_ids_of",
    "find_restated",
    "find_same_evidence",
    "get",
    "get_by_fingerprint",
    "get_entry",
    "list_for_workspace",
    "nearest_entry",
    "plan_draft_write",
    "restated_candidates",
    "same_evidence",
    "set_status",
    "upsert_draft",
    "upsert_drafts",
    "visible_entries",
    "visible_entry_counts",
]

MACHINE_SOURCES = ("ai", "rule")
MAX_METADATA_EVIDENCE = 200
"""Evidence listed in an entry's metadata; bindings are complete, the metadata is a bounded
audit copy (ids with the content hashes the synthesizer read)."""
_MAX_WRITE_ATTEMPTS = 4


class ForeignEvidence(ValueError):
    """A draft cited evidence of another workspace (or none at all); nothing was written."""


@dataclass(frozen=True, slots=True)
class EvidenceRef:
    id: int
    content_hash: str


@dataclass(frozen=True, slots=True)
class DraftWrite:
    """A machine draft to store, with the provenance of docs/design.md §7.

    `provenance` holds processor, prompt version, model, chat/thread/root ids, batch id and
    window key; the evidence list (ids and the content hashes that were read) is kept apart
    because it is merged, not replaced, when the draft is seen again.
    """

    workspace_id: str
    fingerprint: str
    occurred_at: datetime
    title: str
    category: str
    evidence: Sequence[EvidenceRef]
    detail: str | None = None
    provenance: Mapping[str, Any] = field(default_factory=dict)
    source: str = "ai"
    nearby_fingerprints: Sequence[str] = ()
    """Other keys the same fact may be stored under when it was first proposed nearby."""
    merge_within: timedelta | None = None
    """How near an entry under `nearby_fingerprints` must have been first proposed to merge;
    None: only an entry holding `fingerprint` itself is the same fact."""


@dataclass(frozen=True, slots=True)
class EntryRow:
    id: int
    workspace_id: str
    occurred_at: datetime
    title: str
    detail: str | None
    category: str
    source: str
    status: str
    fingerprint: str | None
    human_edited: bool
    revision: int
    window_state_id: int | None
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    evidence_ids: tuple[int, ...] = ()

    @property
    def curator_owned(self) -> bool:
        """Text a person decided on: never rewritten by synthesis."""
        return self.source not in MACHINE_SOURCES or self.status != "draft" or self.human_edited


class DraftOutcome(StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    SUPPORTED = "supported"  # curator-owned text kept; new evidence attached as support
    UNTOUCHED = "untouched"  # hidden or human-created: left exactly as it is


@dataclass(frozen=True, slots=True)
class DraftPlan:
    outcome: DraftOutcome
    values: Mapping[str, Any] = field(default_factory=dict)
    bind: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class UpsertResult:
    entry_id: int | None
    outcome: DraftOutcome
    bound: int
    fingerprint: str

    @property
    def changed(self) -> bool:
        return self.outcome in (DraftOutcome.CREATED, DraftOutcome.UPDATED)


# --- the decision (pure) ---------------------------------------------------------------------


def _merge_evidence(
    held: Iterable[Mapping[str, Any]], new: Iterable[EvidenceRef]
) -> tuple[list[dict[str, Any]], int]:
    """Union by id (the newest content hash wins), ordered by id, bounded."""
    merged: dict[int, str] = {}
    for item in held:
        merged[int(item["id"])] = str(item["content_hash"])
    for ref in new:
        merged[ref.id] = ref.content_hash
    ordered = [{"id": i, "content_hash": merged[i]} for i in sorted(merged)]
    return ordered[:MAX_METADATA_EVIDENCE], max(0, len(ordered) - MAX_METADATA_EVIDENCE)


def _metadata(existing: Mapping[str, Any] | None, draft: DraftWrite) -> dict[str, Any]:
    held = dict(existing or {})
    listed, omitted = _merge_evidence(held.get("evidence", []), draft.evidence)
    merged: dict[str, Any] = {**held, **draft.provenance}
    for key in ("thread_ids", "root_ids"):
        values = set(held.get(key, [])) | set(draft.provenance.get(key, []))
        merged[key] = sorted(values)
    merged["evidence"] = listed
    merged["evidence_omitted"] = omitted + int(held.get("evidence_omitted", 0) or 0)
    if "batch_id" in draft.provenance:
        merged.setdefault("first_batch_id", held.get("batch_id", draft.provenance["batch_id"]))
    return merged


FIRST_PROPOSED_AT = "fingerprint_at"
"""Metadata key: when the entry's fact was first proposed, the anchor of its fingerprint scope."""

CITED_EVIDENCE = "cited_evidence_ids"
"""Metadata key: the evidence ids the entry's first draft cited, by which a reworded restatement
of the same fact is re-found (`find_same_evidence`) after later drafts bound more evidence."""

_SAME_EVIDENCE_SCAN = 50
"""Entries bound to one evidence row that a draft is compared with, at most."""


def first_proposed_at(entry: EntryRow) -> datetime:
    """The entry's scope anchor; entries stored before it was recorded use their time."""
    value = entry.metadata.get(FIRST_PROPOSED_AT)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            parsed = None
        if parsed is not None and parsed.tzinfo is not None:
            return parsed.astimezone(UTC)
    return entry.occurred_at


def nearest_entry(candidates: Iterable[EntryRow], draft: DraftWrite) -> EntryRow | None:
    """The entry `draft` restates, among those holding its fingerprint or a nearby one.

    An entry with the draft's own fingerprint always is (same scope bucket, so nearby by
    construction, and the unique key would refuse a second one); one under a nearby key only
    when first proposed within `merge_within` of the draft. The nearest in time wins.
    """

    def distance(entry: EntryRow) -> timedelta:
        return abs(first_proposed_at(entry) - draft.occurred_at)

    matching = [
        entry
        for entry in candidates
        if entry.fingerprint == draft.fingerprint
        or (
            draft.merge_within is not None
            and entry.fingerprint in draft.nearby_fingerprints
            and distance(entry) < draft.merge_within
        )
    ]
    return min(
        matching,
        key=lambda e: (distance(e), e.fingerprint != draft.fingerprint, e.id),
        default=None,
    )


def plan_draft_write(existing: EntryRow | None, draft: DraftWrite) -> DraftPlan:
    """What storing `draft` should do, given the entry that holds its fingerprint (if any)."""
    cited = tuple(sorted({ref.id for ref in draft.evidence}))
    if existing is None:
        return DraftPlan(
            DraftOutcome.CREATED,
            values={
                "occurred_at": draft.occurred_at,
                "title": draft.title,
                "detail": draft.detail,
                "category": draft.category,
                "metadata_json": {
                    **_metadata(None, draft),
                    FIRST_PROPOSED_AT: draft.occurred_at.astimezone(UTC).isoformat(),
                    CITED_EVIDENCE: list(cited)[:MAX_METADATA_EVIDENCE],
                },
            },
            bind=cited,
        )
    new_ids = tuple(i for i in cited if i not in set(existing.evidence_ids))
    if existing.source not in MACHINE_SOURCES or existing.status == "hidden":
        return DraftPlan(DraftOutcome.UNTOUCHED)
    if existing.curator_owned:
        return DraftPlan(DraftOutcome.SUPPORTED, bind=new_ids)
    values: dict[str, Any] = {}
    occurred_at = min(existing.occurred_at, draft.occurred_at)
    if occurred_at != existing.occurred_at:
        values["occurred_at"] = occurred_at
    if draft.title != existing.title:
        values["title"] = draft.title
    detail = draft.detail if draft.detail is not None else existing.detail
    if detail != existing.detail:
        values["detail"] = detail
    if draft.category != existing.category:
        values["category"] = draft.category
    if not values and not new_ids:
        return DraftPlan(DraftOutcome.UNCHANGED)
    values["metadata_json"] = _metadata(existing.metadata, draft)
    values["source"] = draft.source
    return DraftPlan(DraftOutcome.UPDATED, values=values, bind=new_ids)


# --- reads -----------------------------------------------------------------------------------


def _to_entry(row: Row[Any], evidence_ids: Sequence[int] = ()) -> EntryRow:
    return EntryRow(
        id=row.id,
        workspace_id=row.workspace_id,
        occurred_at=row.occurred_at,
        title=row.title,
        detail=row.detail,
        category=row.category,
        source=row.source,
        status=row.status,
        fingerprint=row.fingerprint,
        human_edited=bool(row.human_edited),
        revision=row.revision,
        window_state_id=row.window_state_id,
        metadata=dict(row.metadata_json or {}),
        created_at=row.created_at,
        updated_at=row.updated_at,
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


def find_restated(
    conn: Connection, draft: DraftWrite, *, exclude: Collection[int] = ()
) -> EntryRow | None:
    """The stored entry `draft` restates, if any: by fingerprint first (one unique-key lookup per
    candidate key), else by its evidence (`find_same_evidence`, never one of `exclude`)."""
    keys = sorted({draft.fingerprint, *draft.nearby_fingerprints})
    rows = conn.execute(
        select(en).where(en.c.workspace_id == draft.workspace_id, en.c.fingerprint.in_(keys))
    ).all()
    chosen = nearest_entry((_to_entry(row) for row in rows), draft)
    if chosen is None:
        return find_same_evidence(conn, draft, exclude=exclude)
    return _to_entry(
        next(row for row in rows if row.id == chosen.id),
        evidence_ids_of(conn, [chosen.id])[chosen.id],
    )


def _cited_ids(entry: EntryRow) -> frozenset[int]:
    """The evidence the entry's first draft cited (recorded since `CITED_EVIDENCE` exists)."""
    value = entry.metadata.get(CITED_EVIDENCE)
    if not isinstance(value, list):
        return frozenset()
    return frozenset(int(i) for i in value if isinstance(i, int) and not isinstance(i, bool))


def same_evidence(entry: EntryRow, draft: DraftWrite) -> bool:
    """Pure: whether `draft` states the same fact as `entry` by what supports it: the same
    category and exactly the evidence the entry is bound to, or that its first draft cited."""
    cited = frozenset(ref.id for ref in draft.evidence)
    if not cited or entry.category != draft.category:
        return False
    return cited in (frozenset(entry.evidence_ids), _cited_ids(entry))


def find_same_evidence(
    conn: Connection, draft: DraftWrite, *, exclude: Collection[int] = ()
) -> EntryRow | None:
    """The entry of the same category bound to the same supporting evidence as `draft`.

    A model may word the same fact differently on a restart or a replay, and the fingerprint
    follows the wording; the evidence does not. Candidates are the entries bound to the draft's
    first cited row (the binding table's evidence index), at most `_SAME_EVIDENCE_SCAN` of them;
    the earliest matching one wins. `exclude` holds the entries the same answer already wrote:
    two drafts of one answer citing the same message are two facts, not one restated.
    """
    cited = sorted({ref.id for ref in draft.evidence})
    if not cited:
        return None
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
    if not rows:
        return None
    bound = evidence_ids_of(conn, [row.id for row in rows])
    for row in rows:
        entry = _to_entry(row, bound[row.id])
        if entry.id not in exclude and same_evidence(entry, draft):
            return entry
    return None


def list_for_workspace(
    conn: Connection,
    workspace_id: str,
    *,
    statuses: Sequence[str] = ("draft", "confirmed"),
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
        .where(en.c.window_state_id == window_state_id, en.c.status == "draft")
        .order_by(en.c.occurred_at, en.c.id)
        .limit(limit)
    ).all()
    bound = evidence_ids_of(conn, [row.id for row in rows])
    return [_to_entry(row, bound[row.id]) for row in rows]


# --- writes ----------------------------------------------------------------------------------


def _check_evidence(conn: Connection, workspace_id: str, ids: set[int]) -> None:
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


def _bind(
    conn: Connection,
    workspace_id: str,
    entry_id: int,
    evidence_ids: Sequence[int],
    now: datetime,
) -> int:
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


def upsert_draft(
    conn: Connection,
    draft: DraftWrite,
    *,
    window_state_id: int | None = None,
    now: datetime | None = None,
    written: Collection[int] = (),
) -> UpsertResult:
    """Store one machine draft and bind its evidence; see the module docstring for the rules.

    `written`: entries the same answer stored before this draft, never re-found by evidence."""
    if draft.source not in MACHINE_SOURCES:
        raise ValueError(f"upsert_draft stores machine drafts only, not {draft.source!r}")
    stamp = now or datetime.now(UTC)
    _check_evidence(conn, draft.workspace_id, {ref.id for ref in draft.evidence})
    for _ in range(_MAX_WRITE_ATTEMPTS):
        existing = find_restated(conn, draft, exclude=written)
        plan = plan_draft_write(existing, draft)
        if plan.outcome is DraftOutcome.CREATED:
            row = conn.execute(
                insert_for(conn, en)
                .values(
                    workspace_id=draft.workspace_id,
                    source=draft.source,
                    status="draft",
                    fingerprint=draft.fingerprint,
                    human_edited=False,
                    revision=1,
                    window_state_id=window_state_id,
                    created_at=stamp,
                    updated_at=stamp,
                    **plan.values,
                )
                .on_conflict_do_nothing()
                .returning(en.c.id)
            ).first()
            if row is None:
                continue  # someone stored the same fingerprint meanwhile: decide again
            bound = _bind(conn, draft.workspace_id, row.id, plan.bind, stamp)
            return UpsertResult(row.id, plan.outcome, bound, draft.fingerprint)
        assert existing is not None  # only a missing entry plans CREATED
        if plan.outcome is DraftOutcome.UPDATED:
            result = conn.execute(
                en.update()
                .where(
                    en.c.id == existing.id,
                    en.c.revision == existing.revision,
                    en.c.status == "draft",
                    en.c.source.in_(MACHINE_SOURCES),
                    en.c.human_edited == false(),
                )
                .values(
                    revision=en.c.revision + 1,
                    updated_at=stamp,
                    window_state_id=window_state_id
                    if window_state_id is not None
                    else existing.window_state_id,
                    **plan.values,
                )
            )
            if result.rowcount != 1:
                continue  # a curator edited it meanwhile: decide again
        bound = _bind(conn, draft.workspace_id, existing.id, plan.bind, stamp)
        return UpsertResult(existing.id, plan.outcome, bound, draft.fingerprint)
    raise RuntimeError(f"draft {draft.fingerprint[:12]} kept changing under concurrent writers")


def upsert_drafts(
    conn: Connection,
    drafts: Sequence[DraftWrite],
    *,
    window_state_id: int | None = None,
    now: datetime | None = None,
) -> list[UpsertResult]:
    """Store a chunk's drafts in the caller's transaction (with the window cursor)."""
    results: list[UpsertResult] = []
    written: set[int] = set()
    for draft in drafts:
        result = upsert_draft(
            conn, draft, window_state_id=window_state_id, now=now, written=written
        )
        if result.entry_id is not None:
            written.add(result.entry_id)
        results.append(result)
    return results


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
            source="human",
            status="confirmed",
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
        _check_evidence(conn, workspace_id, set(evidence_ids))
        _bind(conn, workspace_id, row.id, sorted(set(evidence_ids)), stamp)
    entry = get(conn, row.id)
    assert entry is not None
    return entry


def set_status(
    conn: Connection, entry: EntryRow, status: str, *, now: datetime | None = None
) -> EntryRow | None:
    """A curator confirms, hides or re-opens an entry; None when it changed meanwhile."""
    if status not in ("draft", "confirmed", "hidden"):
        raise ValueError(f"invalid entry status {status!r}")
    result = conn.execute(
        en.update()
        .where(en.c.id == entry.id, en.c.revision == entry.revision)
        .values(status=status, revision=en.c.revision + 1, updated_at=now or datetime.now(UTC))
    )
    return get(conn, entry.id) if result.rowcount == 1 else None


def edit_text(
    conn: Connection,
    entry: EntryRow,
    *,
    title: str,
    detail: str | None,
    now: datetime | None = None,
) -> EntryRow | None:
    """A curator rewrites an entry; from now on synthesis keeps its hands off the text."""
    return edit_entry(conn, entry, {"title": title, "detail": detail}, now=now or datetime.now(UTC))


# --- curation: a curator's view and edits ------------------------------------------------

VISIBLE = ("draft", "confirmed")
"""The statuses a reader of the timeline sees (a hidden entry is never shown)."""


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
        page = list_for_workspace(conn, workspace_id, statuses=VISIBLE, after=after, limit=want)
        found.extend(page)
        if len(page) < want:
            break
        after = (page[-1].occurred_at, page[-1].id)
    return found


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
            en.c.status.in_(VISIBLE),
        )
        .group_by(en.c.window_state_id)
    )
    for row in rows:
        counts[row.window_state_id] = int(row.n)
    return counts


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
