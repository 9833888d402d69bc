"""The dry-run: per descriptor and workspace, rows eligible, held and purgeable (read-only).

Holds are read first: a workspace an active hold reaches (workspace-wide, or naming any link of
the descriptor's chain) reports every eligible row as held and none purgeable, whatever the
override, before any query that could count a row purgeable runs. The descriptor's
`legal_hold` field is never read. Rows of a table with no workspace column that go with a
registered parent by ON DELETE CASCADE (`queries.cascade_parent`: a review card's callback
tokens) are counted in the parent's workspace, held and purgeable by the parent's rule, as the
purge keeps or takes them (docs/lifecycle.md, "Dry-run"). Only SELECTs run, in one read-only
transaction, so two calls with the same input (`as_of` included) answer the same and change
nothing.
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
from timeline_pipeline.lifecycle.queries import (
    CascadeParent,
    cascade_parent,
    col,
    eligible,
    in_scope,
    in_workspace,
    purge_scope,
    table_of,
)
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
    parent = cascade_parent(d, registry)
    if parent is not None:
        counted, purgeable, holds = _cascaded_counts(conn, registry, d, parent, plan, workspace_id)
    else:
        counted, purgeable, holds = _own_counts(conn, registry, d, plan, workspace_id)
    return _report(d, plan, workspace_id, counted, purgeable, holds)


Counts = tuple[list[tuple[str | None, Any, Any]], dict[str | None, int], dict[str, list[str]]]
"""Per workspace (None for rows of no workspace): eligible count and oldest cursor; purgeable
count; and the holds reaching each held workspace."""


def _own_counts(
    conn: Connection,
    registry: Registry,
    d: LifecycleDescriptor,
    plan: RetentionPlan,
    workspace_id: str | None,
) -> Counts:
    # Holds first: nothing below may report a held workspace's rows purgeable.
    holds = held_workspaces(conn, registry.chain_keys(d))
    t = table_of(d)
    ws = _ws_expr(d)
    cursor = col(t, d.cursor_column)
    scope = in_scope(d, plan, workspace_id)
    group = [ws] if ws is not None else []
    counted = [
        (row[0] if group else None, row[-2], row[-1])
        for row in conn.execute(
            select(*group, func.count(), func.min(cursor)).where(*scope).group_by(*group)
        ).all()
    ]
    purgeable: dict[str | None, int] = {}
    free = purge_scope(d, registry, plan, workspace_id, holds)
    for row in conn.execute(select(*group, func.count()).where(*free).group_by(*group)).all():
        purgeable[row[0] if group else None] = int(row[-1])
    return counted, purgeable, holds


def _cascaded_counts(
    conn: Connection,
    registry: Registry,
    d: LifecycleDescriptor,
    parent: CascadeParent,
    plan: RetentionPlan,
    workspace_id: str | None,
) -> Counts:
    """Rows that go with their parent (ON DELETE CASCADE) and have no workspace of their own:
    counted in their parent's workspace, held where a hold reaches the parent (the purge keeps
    the parent, so it keeps them), purgeable only where the purge takes the parent (its own
    `purge_scope`): the purge's rule, not a guess of it."""
    pd = parent.descriptor
    holds = held_workspaces(conn, registry.chain_keys(pd))
    t, pt = table_of(d), table_of(pd)
    ws = col(pt, pd.workspace_column or "")
    cursor = col(t, d.cursor_column)
    joined = t.join(pt, col(t, parent.column) == col(pt, pd.id_column))
    scope = [*eligible(d, plan), *in_workspace(pd, workspace_id)]
    counted = conn.execute(
        select(ws, func.count(), func.min(cursor)).select_from(joined).where(*scope).group_by(ws)
    ).all()
    free = purge_scope(pd, registry, plan, workspace_id, holds)
    purgeable = {
        row[0]: int(row[1])
        for row in conn.execute(
            select(ws, func.count()).select_from(joined).where(*scope, *free).group_by(ws)
        ).all()
    }
    return [(row[0], row[1], row[2]) for row in counted], purgeable, holds


def _report(
    d: LifecycleDescriptor,
    plan: RetentionPlan,
    workspace_id: str | None,
    counted: list[tuple[str | None, Any, Any]],
    purgeable: dict[str | None, int],
    holds: dict[str, list[str]],
) -> DescriptorReport:
    rows: list[WorkspaceCounts] = []
    for name, count, oldest in counted:
        n = int(count)
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
