"""Storing machine drafts: the duplicate-draft policy (`synthesis_run.draft_matching`) applied
over the entries store's reads and compare-and-set writes (docs/design.md §7).

Every state change is a compare-and-set (INSERT ... ON CONFLICT, or UPDATE on id and revision)
so two writers cannot lose each other's changes: when a write finds the entry changed
meanwhile, the decision is taken again on what is stored now.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Connection

from timeline_pipeline.domain.entries import MACHINE_SOURCES, DraftWrite, EntryRow
from timeline_pipeline.store import entries
from timeline_pipeline.synthesis_run.draft_matching import (
    DraftOutcome,
    first_same_evidence,
    nearest_entry,
    plan_draft_write,
)

__all__ = ["UpsertResult", "find_restated", "find_same_evidence", "upsert_draft", "upsert_drafts"]

_MAX_WRITE_ATTEMPTS = 4


@dataclass(frozen=True, slots=True)
class UpsertResult:
    entry_id: int | None
    outcome: DraftOutcome
    bound: int
    fingerprint: str

    @property
    def changed(self) -> bool:
        return self.outcome in (DraftOutcome.CREATED, DraftOutcome.UPDATED)


def find_same_evidence(
    conn: Connection, draft: DraftWrite, *, exclude: Collection[int] = ()
) -> EntryRow | None:
    """The stored entry of the same category bound to the same supporting evidence as `draft`:
    the earliest matching one among those the store scans (`entries.same_evidence_candidates`),
    never one of `exclude`."""
    return first_same_evidence(
        entries.same_evidence_candidates(conn, draft), draft, exclude=exclude
    )


def find_restated(
    conn: Connection, draft: DraftWrite, *, exclude: Collection[int] = ()
) -> EntryRow | None:
    """The stored entry `draft` restates, if any: by fingerprint first, else by its evidence
    (`find_same_evidence`, never one of `exclude`)."""
    chosen = nearest_entry(entries.restated_candidates(conn, draft), draft)
    if chosen is None:
        return find_same_evidence(conn, draft, exclude=exclude)
    return chosen


def upsert_draft(
    conn: Connection,
    draft: DraftWrite,
    *,
    window_state_id: int | None = None,
    now: datetime | None = None,
    written: Collection[int] = (),
) -> UpsertResult:
    """Store one machine draft and bind its evidence; see `synthesis_run.draft_matching` for
    the rules.

    `written`: entries the same answer stored before this draft, never re-found by evidence."""
    if draft.source not in MACHINE_SOURCES:
        raise ValueError(f"upsert_draft stores machine drafts only, not {draft.source!r}")
    stamp = now or datetime.now(UTC)
    entries.check_evidence(conn, draft.workspace_id, {ref.id for ref in draft.evidence})
    for _ in range(_MAX_WRITE_ATTEMPTS):
        existing = find_restated(conn, draft, exclude=written)
        plan = plan_draft_write(existing, draft)
        if plan.outcome is DraftOutcome.CREATED:
            entry_id = entries.insert_draft(
                conn, draft, plan.values, window_state_id=window_state_id, now=stamp
            )
            if entry_id is None:
                continue  # someone stored the same fingerprint meanwhile: decide again
            bound = entries.bind(conn, draft.workspace_id, entry_id, plan.bind, stamp)
            return UpsertResult(entry_id, plan.outcome, bound, draft.fingerprint)
        assert existing is not None  # only a missing entry plans CREATED
        if plan.outcome is DraftOutcome.UPDATED and not entries.update_draft(
            conn, existing, plan.values, window_state_id=window_state_id, now=stamp
        ):
            continue  # a curator edited it meanwhile: decide again
        bound = entries.bind(conn, draft.workspace_id, existing.id, plan.bind, stamp)
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
