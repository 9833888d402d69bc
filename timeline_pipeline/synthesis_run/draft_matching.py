"""The duplicate-draft policy (pure; docs/design.md §7): which stored entry a new machine draft
restates, and what storing it should do.

The fingerprint is the first deduplication layer, so a replayed window re-finds the drafts it
wrote before instead of adding copies. It is scoped in time: a draft also carries the keys the
same fact has when stated nearby (`nearby_fingerprints`), and merges into an entry holding one
of them only if that entry was first proposed within `merge_within` of the draft
(`nearest_entry`); a repeat of the event further apart is an entry of its own. The fingerprint
follows the wording, which a model may change on a restart or a replay, so a draft that matches
no fingerprint is also re-found by its evidence: an entry of the same category bound to exactly
the evidence the draft cites (or that the entry's first draft cited) is the same fact
(`same_evidence`, `first_same_evidence`).

What a curator owns is never rewritten: confirmed, hidden, human-created and human-edited
entries keep their text. A confirmed (or human-edited) entry still gains the new evidence that
supports it, because "who said this" stays useful after review; a hidden or human-created entry
is left exactly as it is (`plan_draft_write`).

The write path (`synthesis_run.draft_writes`) and the rerun preview
(`maintenance.processors.rerun_preview`) both decide with these functions, over the candidates
the entries store reads; the store holds only the SQL.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from timeline_pipeline.domain.entries import (
    MACHINE_SOURCES,
    DraftWrite,
    EntryRow,
    EntryStatus,
    EvidenceRef,
)

__all__ = [
    "CITED_EVIDENCE",
    "FIRST_PROPOSED_AT",
    "MAX_METADATA_EVIDENCE",
    "DraftOutcome",
    "DraftPlan",
    "first_proposed_at",
    "first_same_evidence",
    "nearest_entry",
    "plan_draft_write",
    "same_evidence",
]

MAX_METADATA_EVIDENCE = 200
"""Evidence listed in an entry's metadata; bindings are complete, the metadata is a bounded
audit copy (ids with the content hashes the synthesizer read)."""

FIRST_PROPOSED_AT = "fingerprint_at"
"""Metadata key: when the entry's fact was first proposed, the anchor of its fingerprint scope."""

CITED_EVIDENCE = "cited_evidence_ids"
"""Metadata key: the evidence ids the entry's first draft cited, by which a reworded restatement
of the same fact is re-found (`same_evidence`) after later drafts bound more evidence."""


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


def _cited_ids(entry: EntryRow) -> frozenset[int]:
    """The evidence the entry's first draft cited (recorded since `CITED_EVIDENCE` exists)."""
    value = entry.metadata.get(CITED_EVIDENCE)
    if not isinstance(value, list):
        return frozenset()
    return frozenset(int(i) for i in value if isinstance(i, int) and not isinstance(i, bool))


def same_evidence(entry: EntryRow, draft: DraftWrite) -> bool:
    """Whether `draft` states the same fact as `entry` by what supports it: the same category
    and exactly the evidence the entry is bound to, or that its first draft cited."""
    cited = frozenset(ref.id for ref in draft.evidence)
    if not cited or entry.category != draft.category:
        return False
    return cited in (frozenset(entry.evidence_ids), _cited_ids(entry))


def first_same_evidence(
    candidates: Iterable[EntryRow], draft: DraftWrite, *, exclude: Collection[int] = ()
) -> EntryRow | None:
    """The first of `candidates` (in the caller's order) that `draft` restates by its evidence.

    `exclude` holds the entries the same answer already wrote: two drafts of one answer citing
    the same message are two facts, not one restated. Candidates are consumed lazily, so a
    caller may build them one by one.
    """
    for entry in candidates:
        if entry.id not in exclude and same_evidence(entry, draft):
            return entry
    return None


def plan_draft_write(existing: EntryRow | None, draft: DraftWrite) -> DraftPlan:
    """What storing `draft` should do, given the entry it restates (if any)."""
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
    if existing.source not in MACHINE_SOURCES or existing.status == EntryStatus.HIDDEN:
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
