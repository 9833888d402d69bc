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

from collections.abc import Mapping
from typing import Any, Final

from sqlalchemy import Connection

from timeline_pipeline.domain.keys import SOURCE_TYPE_LARK_MESSAGE
from timeline_pipeline.domain.maintenance import MaintenancePhase
from timeline_pipeline.maintenance.errors import ProcessorRefused
from timeline_pipeline.maintenance.processor import (
    StepOutcome,
    StepRequest,
    ValidatedInput,
    check_keys,
    counters,
    int_field,
    require_object,
    state_version,
    workspace_scope,
)
from timeline_pipeline.maintenance.processors.evidence_rows import current_hash
from timeline_pipeline.store import evidence, workspaces

STATE_VERSION: Final = 1
COUNTERS: Final = ("scanned", "would_update", "updated", "verified")


class ContentHashBackfill:
    type = "content_hash_backfill"
    version = "1"
    rewrites: tuple[str, ...] = ()

    def validate(self, parameters: Mapping[str, Any]) -> ValidatedInput:
        params = require_object(parameters)
        check_keys(params, {"workspace_id"})
        workspace_id = workspace_scope(params)
        return ValidatedInput({"workspace_id": workspace_id}, workspace_id)

    def preflight(self, conn: Connection, parameters: Mapping[str, Any]) -> None:
        if workspaces.get(conn, str(parameters["workspace_id"])) is None:
            raise ProcessorRefused("unknown_workspace", "the workspace does not exist")

    def step(self, conn: Connection, request: StepRequest) -> StepOutcome:
        state_version(request.checkpoint, STATE_VERSION, "checkpoint")
        after = int_field(request.checkpoint, "after_id", "checkpoint")
        progress = counters(request.progress, COUNTERS)
        rows = evidence.hash_input_page(
            conn,
            str(request.parameters["workspace_id"]),
            after_id=after,
            limit=request.batch_size,
            source_type=SOURCE_TYPE_LARK_MESSAGE,
        )
        recomputed = ((row.id, row.content_hash, current_hash(row)) for row in rows)
        stale = [(row_id, old, new) for row_id, old, new in recomputed if old != new]
        done = len(rows) < request.batch_size
        checkpoint = {"v": STATE_VERSION, "after_id": rows[-1].id if rows else after}
        if request.phase is MaintenancePhase.VERIFY:
            if stale:
                return StepOutcome(
                    dict(request.checkpoint),
                    {"v": STATE_VERSION, **progress},
                    done=False,
                    violation={"code": "residual_stale_hash", "evidence_id": stale[0][0]},
                )
            progress["verified"] += len(rows)
        else:
            progress["scanned"] += len(rows)
            progress["would_update"] += len(stale)
            if request.apply:
                progress["updated"] += evidence.replace_content_hashes(conn, stale, now=request.now)
        result = None
        if done:
            result = {"v": STATE_VERSION, "scanned": progress["scanned"]}
            if request.apply:
                result.update(
                    updated=progress["updated"], verified=progress["verified"], remaining_stale=0
                )
            else:
                result.update(would_update=progress["would_update"])
        return StepOutcome(checkpoint, {"v": STATE_VERSION, **progress}, done=done, result=result)
