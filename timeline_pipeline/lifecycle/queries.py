"""The SQL of the dry-run and the engine, built from validated descriptors only.

Tables come from the product's schema (`db/schema.py`): a descriptor naming a table or column
that is not there, or whose name fails the identifier allowlist, is refused before any SQL text
exists. Every value (cutoffs, workspace ids, statuses) is a bound parameter.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Table, exists, false, not_, or_

from timeline_pipeline.db.schema import metadata
from timeline_pipeline.domain.errors import InvalidInput
from timeline_pipeline.domain.lifecycle import LifecycleDescriptor, safe_identifier
from timeline_pipeline.lifecycle.plan import RetentionPlan
from timeline_pipeline.lifecycle.registry import Registry


def table_of(d: LifecycleDescriptor) -> Table:
    name = safe_identifier(d.table_name)
    table = metadata.tables.get(name)
    if table is None:
        raise InvalidInput(f"{d.key}: table_name: {name!r} is not a table of the schema")
    return table


def col(table: Table, name: str) -> Any:
    safe_identifier(name)
    if name not in table.c:
        raise InvalidInput(f"{table.name}: no column {name!r}")
    return table.c[name]


def eligible(d: LifecycleDescriptor, plan: RetentionPlan) -> list[ColumnElement[bool]]:
    """Aged out: the cursor before the cutoff, and the row in a state that may go."""
    t = table_of(d)
    conds: list[ColumnElement[bool]] = [col(t, d.cursor_column) < plan.cutoff(d.key)]
    conds.extend(col(t, w.column).in_(list(w.values)) for w in d.only_where)
    return conds


def in_workspace(d: LifecycleDescriptor, workspace_id: str | None) -> list[ColumnElement[bool]]:
    if workspace_id is None:
        return []
    if d.workspace_column is None:
        return [false()]  # rows of no workspace are never selected by one
    return [col(table_of(d), d.workspace_column) == workspace_id]


def not_held(d: LifecycleDescriptor, held: Collection[str]) -> list[ColumnElement[bool]]:
    if not held or d.workspace_column is None:
        return []
    ws = col(table_of(d), d.workspace_column)
    return [or_(ws.is_(None), ws.not_in(sorted(held)))]


def chain_free(
    d: LifecycleDescriptor, registry: Registry, plan: RetentionPlan
) -> list[ColumnElement[bool]]:
    """No live child references the row, and every parent it references has aged out too."""
    t = table_of(d)
    conds: list[ColumnElement[bool]] = []
    for child in d.children:
        ct = table_of(registry.get(child.descriptor_key))
        conds.append(not_(exists().where(col(ct, child.column) == col(t, d.id_column))))
    for parent in d.parents:
        pd = registry.get(parent.descriptor_key)
        pt = table_of(pd)
        conds.append(
            exists().where(
                col(pt, pd.id_column) == col(t, parent.column),
                *eligible(pd, plan),
            )
        )
    return conds


def in_scope(
    d: LifecycleDescriptor, plan: RetentionPlan, workspace_id: str | None
) -> list[ColumnElement[bool]]:
    """Aged out, and of the run's workspace when it names one: the rows a run looks at."""
    return [*eligible(d, plan), *in_workspace(d, workspace_id)]


def purge_scope(
    d: LifecycleDescriptor,
    registry: Registry,
    plan: RetentionPlan,
    workspace_id: str | None,
    held: Collection[str],
) -> list[ColumnElement[bool]]:
    """In scope, of no held workspace and, for a table the engine purges, free of its chain:
    the rows a purge deletes and the ones a dry-run reports purgeable (docs/lifecycle.md,
    "Dry-run"), one rule for both."""
    conds = [*in_scope(d, plan, workspace_id), *not_held(d, held)]
    if d.is_generic:
        conds.extend(chain_free(d, registry, plan))
    return conds


@dataclass(frozen=True)
class CascadeParent:
    """The registered table whose rows take `column`'s rows with them (ON DELETE CASCADE)."""

    descriptor: LifecycleDescriptor
    column: str


def cascade_parent(d: LifecycleDescriptor, registry: Registry) -> CascadeParent | None:
    """For a table with no workspace column whose rows go by ON DELETE CASCADE with a
    registered parent that has one (`interaction_tokens` with its card): the parent, read from
    the schema's own foreign key. Such rows belong to their parent's workspace and are purged
    exactly when it is, so the dry-run reports them by the parent's rule (docs/lifecycle.md,
    "Dry-run"); None for any other table."""
    if d.workspace_column is not None:
        return None
    by_table = {p.table_name: p for p in registry.descriptors.values()}
    for fk in sorted(table_of(d).foreign_keys, key=lambda fk: fk.parent.name):
        parent = by_table.get(fk.column.table.name)
        if (
            (fk.ondelete or "").upper() == "CASCADE"
            and parent is not None
            and parent.workspace_column is not None
            and fk.column.name == parent.id_column
        ):
            return CascadeParent(parent, col(table_of(d), fk.parent.name).name)
    return None
