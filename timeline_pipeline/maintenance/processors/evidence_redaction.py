"""`evidence_redaction`: apply the deletion policy to evidence that still carries content.

Two scopes. `recalled` (the default): rows already marked deleted (a recalled message) whose
text, eligibility or content metadata survived, e.g. stored before the policy dropped them.
`workspace`: every message row of the workspace, for a workspace whose data must be forgotten;
its preflight refuses a workspace that still ingests (status `firing`), whose new messages a
pass could never catch up with. Each row becomes exactly what a recall makes of it
(`lark.normalize.redact`), and only if it is still at the revision it was read at. Verification:
a fresh id pass that rejects any residual unredacted row in scope, naming its evidence id.

Parameters: `{"workspace_id": W, "mode": "recalled" | "workspace"}`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from sqlalchemy import Connection

from timeline_pipeline.domain.errors import InvalidInput
from timeline_pipeline.domain.keys import SOURCE_TYPE_LARK_MESSAGE
from timeline_pipeline.domain.maintenance import MaintenancePhase
from timeline_pipeline.lifecycle.hold_gate import EVIDENCE
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
from timeline_pipeline.maintenance.processors.evidence_rows import needs_redaction, redacted_record
from timeline_pipeline.store import evidence, workspaces

STATE_VERSION: Final = 1
MODES: Final = ("recalled", "workspace")
COUNTERS: Final = ("scanned", "would_redact", "redacted", "verified")


class EvidenceRedaction:
    type = "evidence_redaction"
    version = "1"
    rewrites: tuple[str, ...] = (EVIDENCE,)

    def validate(self, parameters: Mapping[str, Any]) -> ValidatedInput:
        params = require_object(parameters)
        check_keys(params, {"workspace_id", "mode"})
        workspace_id = workspace_scope(params)
        mode = params.get("mode", "recalled")
        if mode not in MODES:
            raise InvalidInput(f"parameters.mode must be one of {', '.join(MODES)}")
        return ValidatedInput({"workspace_id": workspace_id, "mode": mode}, workspace_id)

    def preflight(self, conn: Connection, parameters: Mapping[str, Any]) -> None:
        workspace = workspaces.get(conn, str(parameters["workspace_id"]))
        if workspace is None:
            raise ProcessorRefused("unknown_workspace", "the workspace does not exist")
        if parameters["mode"] == "workspace" and workspace.status == "firing":
            raise ProcessorRefused(
                "workspace_ingesting",
                "the workspace is still firing: set it recovered or archived before redacting it",
            )

    def step(self, conn: Connection, request: StepRequest) -> StepOutcome:
        state_version(request.checkpoint, STATE_VERSION, "checkpoint")
        after = int_field(request.checkpoint, "after_id", "checkpoint")
        progress = counters(request.progress, COUNTERS)
        rows = evidence.id_page(
            conn,
            str(request.parameters["workspace_id"]),
            after_id=after,
            limit=request.batch_size,
            source_type=SOURCE_TYPE_LARK_MESSAGE,
            deleted=True if request.parameters["mode"] == "recalled" else None,
        )
        residual = [row for row in rows if needs_redaction(row, now=request.now)]
        done = len(rows) < request.batch_size
        checkpoint = {"v": STATE_VERSION, "after_id": rows[-1].id if rows else after}
        if request.phase is MaintenancePhase.VERIFY:
            if residual:
                return StepOutcome(
                    dict(request.checkpoint),
                    {"v": STATE_VERSION, **progress},
                    done=False,
                    violation={"code": "residual_unredacted_row", "evidence_id": residual[0].id},
                )
            progress["verified"] += len(rows)
        else:
            progress["scanned"] += len(rows)
            progress["would_redact"] += len(residual)
            if request.apply and residual:
                records = [redacted_record(row, recalled_at=request.now) for row in residual]
                progress["redacted"] += evidence.redact_rows(
                    conn,
                    records,
                    [(row.id, row.revision) for row in residual],
                    now=request.now,
                )
        result = None
        if done:
            result = {"v": STATE_VERSION, "mode": request.parameters["mode"]}
            if request.apply:
                result.update(
                    redacted=progress["redacted"], verified=progress["verified"], remaining=0
                )
            else:
                result.update(scanned=progress["scanned"], would_redact=progress["would_redact"])
        return StepOutcome(checkpoint, {"v": STATE_VERSION, **progress}, done=done, result=result)
