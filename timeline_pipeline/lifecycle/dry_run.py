"""The dry-run: per descriptor and workspace, rows eligible, held and purgeable (read-only).

Holds are read first: a workspace an active hold reaches (workspace-wide, or naming any link of
the descriptor's chain) reports every eligible row as held and none purgeable, whatever the
override, before any query that could count a row purgeable runs. The descriptor's
`legal_hold` field is never read. Only SELECTs run, in one read-only transaction, so two calls
with the same input (`as_of` included) answer the same and change nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, func, select, text

from timeline_pipeline.db.engine import connection
from timeline_pipeline.domain.lifecycle import LifecycleDescriptor
from timeline_pipeline.lifecycle.hold_gate import held_workspaces
from timeline_pipeline.lifecycle.plan import RetentionPlan, build_plan
from timeline_pipeline.lifecycle.queries import col, in_scope, purge_scope, table_of
from timeline_pipeline.lifecycle.registry import Registry


@dataclass(frozen=True)
class WorkspaceCounts:
    workspace: str | None
    eligible: int
    held: int
    purgeable: int
    blocked: int
    """Eligible, not held, but kept: a live child still references the row, or its parent has
    not aged out (the chain ages as a whole)."""
    oldest_cursor: str | None
    holds: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class DescriptorReport:
    descriptor: str
    execution_mode: str
    retention_days: int
    cutoff: str
    eligible: int
    held: int
    purgeable: int
    blocked: int
    workspaces: list[WorkspaceCounts]


@dataclass(frozen=True)
class DryRunReport:
    as_of: str
    workspace: str | None
    retention_days_override: int | None
    descriptors: list[DescriptorReport]

    def as_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return asdict(self)


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _ws_expr(d: LifecycleDescriptor) -> Any:
    if d.workspace_column is None:
        return None
    return col(table_of(d), d.workspace_column)


def report_descriptor(
    conn: Connection,
    registry: Registry,
    d: LifecycleDescriptor,
    plan: RetentionPlan,
    workspace_id: str | None,
) -> DescriptorReport:
    # Holds first: nothing below may report a held workspace's rows purgeable.
    holds = held_workspaces(conn, registry.chain_keys(d))
    t = table_of(d)
    ws = _ws_expr(d)
    cursor = col(t, d.cursor_column)
    scope = in_scope(d, plan, workspace_id)
    group = [ws] if ws is not None else []
    counted = conn.execute(
        select(*group, func.count(), func.min(cursor)).where(*scope).group_by(*group)
    ).all()
    purgeable: dict[str | None, int] = {}
    free = purge_scope(d, registry, plan, workspace_id, holds)
    for row in conn.execute(select(*group, func.count()).where(*free).group_by(*group)).all():
        purgeable[row[0] if group else None] = int(row[-1])
    rows: list[WorkspaceCounts] = []
    for row in counted:
        name = row[0] if group else None
        n, oldest = int(row[-2]), row[-1]
        if isinstance(oldest, str):  # SQLite aggregates lose the column type
            oldest = datetime.fromisoformat(oldest)
        hold_ids = holds.get(name, []) if name is not None else []
        held = n if hold_ids else 0
        can = 0 if hold_ids else purgeable.get(name, 0)
        rows.append(WorkspaceCounts(name, n, held, can, n - held - can, _iso(oldest), hold_ids))
    if not rows:
        rows.append(
            WorkspaceCounts(workspace_id, 0, 0, 0, 0, None, holds.get(workspace_id or "", []))
        )
    rows.sort(key=lambda r: (r.workspace is None, r.workspace or ""))
    return DescriptorReport(
        descriptor=d.key,
        execution_mode=d.execution_mode,
        retention_days=plan.days[d.key],
        cutoff=plan.cutoff(d.key).isoformat(),
        eligible=sum(r.eligible for r in rows),
        held=sum(r.held for r in rows),
        purgeable=sum(r.purgeable for r in rows),
        blocked=sum(r.blocked for r in rows),
        workspaces=rows,
    )


def dry_run(
    conn: Connection,
    registry: Registry,
    *,
    workspace_id: str | None = None,
    descriptor_key: str | None = None,
    as_of: datetime | None = None,
    retention_days_override: int | None = None,
) -> DryRunReport:
    selected = registry.select(descriptor_key)
    plan = build_plan(
        registry.descriptors.values(),
        [d.key for d in selected],
        as_of=as_of,
        override=retention_days_override,
    )
    return DryRunReport(
        as_of=plan.as_of.isoformat(),
        workspace=workspace_id,
        retention_days_override=retention_days_override,
        descriptors=[report_descriptor(conn, registry, d, plan, workspace_id) for d in selected],
    )


@contextmanager
def read_only(engine: Engine) -> Iterator[Connection]:
    """One transaction that cannot write (PostgreSQL enforces it), rolled back at the end."""
    with connection(engine) as conn, conn.begin() as tx:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SET TRANSACTION READ ONLY"))
        try:
            yield conn
        finally:
            tx.rollback()
