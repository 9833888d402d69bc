"""The pass both evidence processors make (docs/maintenance.md, "Adding a processor").

`content_hash_backfill` and `evidence_redaction` differ only in which rows they read, which of
them are wrong and how a wrong row is fixed. The rest is one skeleton, kept here so the two
cannot drift: page the workspace's message evidence by id from the checkpoint; in the scan
phase count the rows read and the offending ones, fixing those when the job applies; in
verification refuse the first offending row left, naming its evidence id, with the checkpoint
unchanged so the job pauses where it found it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol, TypeVar

from sqlalchemy import Connection

from timeline_pipeline.domain.keys import SOURCE_TYPE_LARK_MESSAGE
from timeline_pipeline.domain.maintenance import MaintenancePhase
from timeline_pipeline.domain.workspaces import Workspace
from timeline_pipeline.maintenance.errors import ProcessorRefused
from timeline_pipeline.maintenance.processor import (
    StepOutcome,
    StepRequest,
    counters,
    int_field,
    state_version,
)
from timeline_pipeline.store import workspaces

STATE_VERSION: Final = 1


def existing_workspace(conn: Connection, parameters: Mapping[str, Any]) -> Workspace:
    """The job's workspace; a workspace that does not exist refuses the job."""
    workspace = workspaces.get(conn, str(parameters["workspace_id"]))
    if workspace is None:
        raise ProcessorRefused("unknown_workspace", "the workspace does not exist")
    return workspace


class _Row(Protocol):
    @property
    def id(self) -> int: ...


Row = TypeVar("Row", bound=_Row)
Row_co = TypeVar("Row_co", bound=_Row, covariant=True)
Offender = TypeVar("Offender")


class PageReader(Protocol[Row_co]):
    """A store read of a workspace's evidence by id (`evidence.id_page` and its kin)."""

    def __call__(
        self, conn: Connection, workspace_id: str, *, after_id: int, limit: int, source_type: str
    ) -> Sequence[Row_co]: ...


@dataclass(frozen=True)
class EvidencePass:
    """The counter a scan adds offending rows to (`found`), the one an apply adds fixed rows
    to (`fixed`), and the violation code verification reports."""

    found: str
    fixed: str
    violation: str

    @property
    def counters(self) -> tuple[str, ...]:
        return ("scanned", self.found, self.fixed, "verified")

    def step(
        self,
        conn: Connection,
        request: StepRequest,
        *,
        read: PageReader[Row],
        offenders_in: Callable[[Sequence[Row]], list[Offender]],
        evidence_id: Callable[[Offender], int],
        fix: Callable[[list[Offender]], int],
        result: Callable[[dict[str, int]], dict[str, Any]],
    ) -> StepOutcome:
        """One batch: `read` pages the workspace's message evidence, `offenders_in` picks the
        page's offending rows, `fix` repairs them and counts what it changed, `result(progress)`
        is the job's result once the pass is done."""
        state_version(request.checkpoint, STATE_VERSION, "checkpoint")
        after = int_field(request.checkpoint, "after_id", "checkpoint")
        progress = counters(request.progress, self.counters)
        rows = read(
            conn,
            str(request.parameters["workspace_id"]),
            after_id=after,
            limit=request.batch_size,
            source_type=SOURCE_TYPE_LARK_MESSAGE,
        )
        offenders = offenders_in(rows)
        done = len(rows) < request.batch_size
        checkpoint = {"v": STATE_VERSION, "after_id": rows[-1].id if rows else after}
        if request.phase is MaintenancePhase.VERIFY:
            if offenders:
                first = evidence_id(offenders[0])
                return StepOutcome(
                    dict(request.checkpoint),
                    {"v": STATE_VERSION, **progress},
                    done=False,
                    violation={"code": self.violation, "evidence_id": first},
                )
            progress["verified"] += len(rows)
        else:
            progress["scanned"] += len(rows)
            progress[self.found] += len(offenders)
            if request.apply and offenders:
                progress[self.fixed] += fix(offenders)
        final = {"v": STATE_VERSION, **result(progress)} if done else None
        return StepOutcome(checkpoint, {"v": STATE_VERSION, **progress}, done=done, result=final)
