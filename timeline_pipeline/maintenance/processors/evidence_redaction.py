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

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, Final

from sqlalchemy import Connection

from timeline_pipeline.domain.errors import InvalidInput
from timeline_pipeline.domain.evidence import EvidenceRow
from timeline_pipeline.lifecycle.hold_gate import EVIDENCE
from timeline_pipeline.maintenance.errors import ProcessorRefused
from timeline_pipeline.maintenance.processor import (
    StepOutcome,
    StepRequest,
    ValidatedInput,
    scoped_parameters,
)
from timeline_pipeline.maintenance.processors.evidence_pass import EvidencePass, existing_workspace
from timeline_pipeline.maintenance.processors.evidence_rows import needs_redaction, redacted_record
from timeline_pipeline.store import evidence

MODES: Final = ("recalled", "workspace")
PASS: Final = EvidencePass(
    found="would_redact", fixed="redacted", violation="residual_unredacted_row"
)


class EvidenceRedaction:
    type = "evidence_redaction"
    version = "1"
    rewrites: tuple[str, ...] = (EVIDENCE,)

    def validate(self, parameters: Mapping[str, Any]) -> ValidatedInput:
        params, workspace_id = scoped_parameters(parameters, {"workspace_id", "mode"})
        mode = params.get("mode", "recalled")
        if mode not in MODES:
            raise InvalidInput(f"parameters.mode must be one of {', '.join(MODES)}")
        return ValidatedInput({"workspace_id": workspace_id, "mode": mode}, workspace_id)

    def preflight(self, conn: Connection, parameters: Mapping[str, Any]) -> None:
        workspace = existing_workspace(conn, parameters)
        if parameters["mode"] == "workspace" and workspace.status == "firing":
            raise ProcessorRefused(
                "workspace_ingesting",
                "the workspace is still firing: set it recovered or archived before redacting it",
            )

    def step(self, conn: Connection, request: StepRequest) -> StepOutcome:
        mode = request.parameters["mode"]

        def residual_in(rows: Sequence[EvidenceRow]) -> list[EvidenceRow]:
            return [row for row in rows if needs_redaction(row, now=request.now)]

        def redact(residual: list[EvidenceRow]) -> int:
            records = [redacted_record(row, recalled_at=request.now) for row in residual]
            ids = [(row.id, row.revision) for row in residual]
            return evidence.redact_rows(conn, records, ids, now=request.now)

        def result(progress: dict[str, int]) -> dict[str, Any]:
            if request.apply:
                counts = {"redacted": progress["redacted"], "verified": progress["verified"]}
                return {"mode": mode, **counts, "remaining": 0}
            return {
                "mode": mode,
                "scanned": progress["scanned"],
                "would_redact": progress["would_redact"],
            }

        return PASS.step(
            conn,
            request,
            read=partial(evidence.id_page, deleted=True if mode == "recalled" else None),
            offenders_in=residual_in,
            evidence_id=lambda row: row.id,
            fix=redact,
            result=result,
        )
