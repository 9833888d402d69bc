"""The lineage of a window run: which evidence, in which version, a run covered.

The aggregate hash, the resume check a retry must pass before it trusts the cursor, late evidence
and the evidence ids a materialization lists; kept apart from the runner so that what ends up in
the database and in Dagster's metadata can be tested without either.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from timeline_pipeline.domain.window_keys import decode_window_cursor
from timeline_pipeline.synthesis.contract import EvidenceItem

__all__ = [
    "MAX_LISTED_EVIDENCE_IDS",
    "Resume",
    "aggregate_hash",
    "evidence_lineage",
    "in_order",
    "late_evidence",
    "late_lineage",
    "plan_resume",
]

MAX_LISTED_EVIDENCE_IDS = 200
"""A materialization lists evidence ids up to this many; beyond it, the range and count."""


def aggregate_hash(items: Sequence[EvidenceItem]) -> str:
    """sha256 over the ordered (evidence_id, content_hash) pairs.

    Order matters and is (occurred_at, id), the order the window was read in; the hash says
    exactly which evidence, in which version, a finished window covered.
    """
    digest = hashlib.sha256()
    for item in items:
        digest.update(f"{item.id}:{item.content_hash}\n".encode())
    return digest.hexdigest()


def in_order(items: Iterable[EvidenceItem]) -> list[EvidenceItem]:
    """One version per evidence id (the last given wins), in the window's (occurred_at, id)
    order: the order the aggregate hash is taken in, whatever order chunks ran in."""
    latest = {item.id: item for item in items}
    return sorted(latest.values(), key=lambda item: (item.occurred_at, item.id))


def late_evidence(
    read: Sequence[EvidenceItem], processed: Iterable[EvidenceItem]
) -> list[EvidenceItem]:
    """Evidence of the window as read now that no committed chunk sent to the synthesizer in
    this version: rows delivered (or edited) after the chunk covering their time was read."""
    seen = {(item.id, item.content_hash) for item in processed}
    return [item for item in read if (item.id, item.content_hash) not in seen]


@dataclass(frozen=True, slots=True)
class Resume:
    """Where a run picks a window up: the evidence earlier attempts already processed, what is
    left to send, and whether the earlier work had to be discarded."""

    done: list[EvidenceItem]
    todo: list[EvidenceItem]
    restarted: bool


def plan_resume(
    items: Sequence[EvidenceItem], cursor: str | None, held: Mapping[str, Any]
) -> Resume:
    """Resume after the last committed chunk only if the evidence up to the cursor is exactly
    what those chunks processed.

    Each chunk commit records the count and aggregate hash of everything processed so far
    (`processed_count`, `processed_hash`). A message delivered late before the cursor, or an
    edit of one, changes that range; resuming after the cursor would then leave it out of the
    synthesis while counting it as covered. The run starts the window over instead (drafts of
    the earlier chunks are re-found by their fingerprint, not duplicated). A state written
    before these fields existed cannot be checked, so it starts over as well.
    """
    if cursor is None:
        return Resume([], list(items), False)
    position = decode_window_cursor(cursor)
    done = [item for item in items if (item.occurred_at, item.id) <= position]
    todo = [item for item in items if (item.occurred_at, item.id) > position]
    count, digest = held.get("processed_count"), held.get("processed_hash")
    if count == len(done) and digest == aggregate_hash(done):
        return Resume(done, todo, False)
    return Resume([], list(items), True)


def evidence_lineage(items: Sequence[EvidenceItem]) -> dict[str, Any]:
    """Evidence ids for the materialization: all of them when few, else range and count."""
    ids = [item.id for item in items]
    lineage: dict[str, Any] = {"evidence_count": len(ids)}
    if ids:
        lineage["evidence_first_id"] = min(ids)
        lineage["evidence_last_id"] = max(ids)
    if len(ids) <= MAX_LISTED_EVIDENCE_IDS:
        lineage["evidence_ids"] = ids
    return lineage


def late_lineage(items: Sequence[EvidenceItem]) -> dict[str, Any]:
    """Evidence seen in the window that this run did not process: counted apart, never as
    covered (the aggregate hash and `evidence_ids` leave it out)."""
    ids = [item.id for item in items]
    return {"late_evidence": len(ids), "late_evidence_ids": ids[:MAX_LISTED_EVIDENCE_IDS]}
