"""The one legal-hold gate (docs/lifecycle.md, "What a hold stops").

Every path that deletes or redacts rows asks this module before it touches a row and again
after its batch, in the batch's own transaction: the purge engine (and its recall sweep), a
live recall and a recall read from history, the maintenance processors that rewrite content,
and the delegated purges. A hold reaches a descriptor when it is workspace-wide or names any
link of the descriptor's chain (docs/lifecycle.md, "Legal holds"); the descriptor's own `legal_hold`
field
is never read. A hold that appears while a batch runs is seen by the check after it, which
rolls the batch (or its savepoint) back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from functools import cache
from typing import Final, TypeVar

from sqlalchemy import Connection

from timeline_pipeline.domain.errors import LegalHoldActive
from timeline_pipeline.domain.evidence import EvidenceRecord, UpsertOutcome, UpsertSummary
from timeline_pipeline.lifecycle.registry import Registry, load_registry
from timeline_pipeline.store import evidence
from timeline_pipeline.store import legal_holds as store

T = TypeVar("T")

EVIDENCE: Final = "evidence.workspace_timeline_evidence"
"""The descriptor a recall or a redaction touches."""
THREAD_LISTINGS: Final = "reconcile_threads.workspace_timeline_reconcile_threads"
"""The delegated purge reconciliation runs."""


@cache
def default_registry() -> Registry:
    """The validated registry of the store modules, loaded once per process."""
    return load_registry()


def held_workspaces(conn: Connection, chain_keys: Iterable[str]) -> dict[str, list[str]]:
    """Workspace -> ids of the active holds reaching any of `chain_keys`."""
    held: dict[str, list[str]] = {}
    for hold in store.active_for(conn, tuple(chain_keys)):
        held.setdefault(hold.workspace_id, []).append(hold.id)
    return held


def holds_on(
    conn: Connection, descriptor_key: str, workspace_id: str, registry: Registry | None = None
) -> list[str]:
    """Ids of the active holds reaching `descriptor_key`'s chain in one workspace."""
    reg = registry or default_registry()
    chain = reg.chain_keys(reg.get(descriptor_key))
    return [hold.id for hold in store.active_for(conn, chain, workspace_id)]


def require_free(
    conn: Connection,
    descriptor_key: str,
    workspace_id: str,
    *,
    what: str,
    registry: Registry | None = None,
) -> None:
    """LegalHoldActive naming the holds when any reaches the descriptor in the workspace."""
    holds = holds_on(conn, descriptor_key, workspace_id, registry)
    if holds:
        raise LegalHoldActive(
            f"{what}: workspace {workspace_id} is under legal hold {', '.join(holds)} "
            f"(reaching {descriptor_key}); nothing was changed"
        )


def unless_held(
    conn: Connection,
    descriptor_key: str,
    workspace_id: str,
    action: Callable[[], T],
    *,
    what: str,
    registry: Registry | None = None,
) -> T | None:
    """Run `action` in a savepoint of the caller's transaction unless a hold reaches the
    descriptor in the workspace, asking before and after it; None (and nothing changed) when
    held, whether the hold was there first or appeared meanwhile. For the delegated purges,
    which must not fail the run they are part of."""
    if holds_on(conn, descriptor_key, workspace_id, registry):
        return None
    try:
        with conn.begin_nested():
            result = action()
            require_free(conn, descriptor_key, workspace_id, what=what, registry=registry)
    except LegalHoldActive:
        return None
    return result


# --- recalls: evidence redacted while a hold may reach it -------------------------------------


def redact_evidence(
    conn: Connection,
    workspace_id: str,
    keys: Sequence[tuple[str, str, str]],
    redact: Callable[[], T],
    *,
    what: str,
    registry: Registry | None = None,
) -> tuple[T, bool]:
    """Run `redact` (a recall of the evidence rows `keys`: (source, source_type, source_key))
    through the gate, and whether a hold reached the workspace. Under a hold the rows' content
    is set aside first (docs/lifecycle.md: the row is marked recalled and hidden from every
    view, its content kept until the hold is released); otherwise the redaction runs in a
    savepoint and a hold that appeared meanwhile rolls it back and it runs again, set aside."""
    if holds_on(conn, EVIDENCE, workspace_id, registry):
        evidence.set_aside_for_hold(conn, workspace_id, keys)
        return redact(), True
    try:
        with conn.begin_nested():
            result = redact()
            require_free(conn, EVIDENCE, workspace_id, what=what, registry=registry)
    except LegalHoldActive:
        evidence.set_aside_for_hold(conn, workspace_id, keys)
        return redact(), True
    return result, False


# --- every evidence write: what a hold keeps of an edit ---------------------------------------


def write_evidence(
    conn: Connection,
    records: Sequence[EvidenceRecord],
    *,
    now: datetime,
    what: str,
    registry: Registry | None = None,
) -> UpsertSummary:
    """Upsert a batch of evidence records through the gate (docs/lifecycle.md, "What a hold
    does to an edit"): in a workspace a hold reaches, every version a record replaces (an edit
    or a recall) is set aside before the new one is written (`evidence.upsert_keeping_versions`);
    elsewhere the batch is written as usual. Holds are read once for the batch; the workspaces
    are written in key order, as every writer locks rows. A hold that appeared on a workspace
    found free while its rows were rewritten rolls the caller's transaction back
    (LegalHoldActive), and the message is written again, set aside, on its next delivery."""
    reg = registry or default_registry()
    held = held_workspaces(conn, reg.chain_keys(reg.get(EVIDENCE)))
    by_workspace: dict[str, list[EvidenceRecord]] = {}
    for record in records:
        by_workspace.setdefault(record.workspace_id, []).append(record)
    total = UpsertSummary()
    rewritten: list[str] = []
    for workspace_id in sorted(by_workspace):
        batch = by_workspace[workspace_id]
        if workspace_id in held:
            total = total + evidence.upsert_keeping_versions(conn, batch, now=now)
            continue
        written = _upsert(conn, batch, now)
        if written.updated:
            rewritten.append(workspace_id)
        total = total + written
    for workspace_id in rewritten:
        require_free(conn, EVIDENCE, workspace_id, what=what, registry=reg)
    return total


def _upsert(conn: Connection, batch: Sequence[EvidenceRecord], now: datetime) -> UpsertSummary:
    if len(batch) == 1:
        outcome = evidence.upsert(conn, batch[0], now=now)
        return UpsertSummary(
            inserted=int(outcome is UpsertOutcome.INSERTED),
            updated=int(outcome is UpsertOutcome.UPDATED),
            duplicate=int(outcome is UpsertOutcome.DUPLICATE),
        )
    return evidence.upsert_many(conn, batch, now=now)
