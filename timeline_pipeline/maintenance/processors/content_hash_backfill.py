"""`content_hash_backfill`: recompute evidence content hashes after a normalization change.

A change to what `lark.normalize.semantic_content` hashes leaves stored rows with hashes the
new code would not produce, so the next upsert of an unchanged message would look like an edit
and a window's aggregate hash would move for no new fact. Scan: page the workspace's message
evidence by id; dry-run counts the stale rows (`would_update`), apply replaces each stale hash,
only where the row still holds the hash it was read with. Verification: a fresh id pass that
rejects any residual stale hash, naming the first offending evidence id.

Parameters: `{"workspace_id": W}`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from sqlalchemy import Connection

from timeline_pipeline.domain.evidence import HashInput
from timeline_pipeline.lifecycle.hold_gate import EVIDENCE
from timeline_pipeline.maintenance.processor import (
    StepOutcome,
    StepRequest,
    ValidatedInput,
    scoped_parameters,
)
from timeline_pipeline.maintenance.processors.evidence_pass import EvidencePass, existing_workspace
from timeline_pipeline.maintenance.processors.evidence_rows import current_hash
from timeline_pipeline.store import evidence

PASS: Final = EvidencePass(found="would_update", fixed="updated", violation="residual_stale_hash")

Change = tuple[int, str, str]
"""A stale row: its id, the hash it holds and the hash this code gives it."""


class ContentHashBackfill:
    type = "content_hash_backfill"
    version = "1"
    rewrites: tuple[str, ...] = (EVIDENCE,)
    """A held row's hash is part of what the hold keeps (docs/lifecycle.md, "What a hold
    stops"): the job service asks the gate for it before and after every apply batch."""

    def validate(self, parameters: Mapping[str, Any]) -> ValidatedInput:
        _, workspace_id = scoped_parameters(parameters, {"workspace_id"})
        return ValidatedInput({"workspace_id": workspace_id}, workspace_id)

    def preflight(self, conn: Connection, parameters: Mapping[str, Any]) -> None:
        existing_workspace(conn, parameters)

    def step(self, conn: Connection, request: StepRequest) -> StepOutcome:
        def stale_in(rows: Sequence[HashInput]) -> list[Change]:
            recomputed = ((row.id, row.content_hash, current_hash(row)) for row in rows)
            return [(row_id, old, new) for row_id, old, new in recomputed if old != new]

        def result(progress: dict[str, int]) -> dict[str, Any]:
            if request.apply:
                return {
                    "scanned": progress["scanned"],
                    "updated": progress["updated"],
                    "verified": progress["verified"],
                    "remaining_stale": 0,
                }
            return {"scanned": progress["scanned"], "would_update": progress["would_update"]}

        return PASS.step(
            conn,
            request,
            read=evidence.hash_input_page,
            offenders_in=stale_in,
            evidence_id=lambda change: change[0],
            fix=lambda stale: evidence.replace_content_hashes(conn, stale, now=request.now),
            result=result,
        )
