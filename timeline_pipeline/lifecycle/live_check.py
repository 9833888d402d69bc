"""The registry check against the live database (`timeline-pipeline lifecycle registry-check`).

On top of each descriptor's own validation: its table exists; a generic descriptor's table has
`id` as its primary key; every required index exists (an index, unique constraint or primary key
whose leading columns are the required ones); and nothing makes the table undeletable. Append-only
is not keep-forever: a trigger that raises on DELETE leaves retention impossible and a hold with
nothing to override, so a descriptor over such a table is compliance on paper only; on
PostgreSQL the connecting role must also hold the DELETE privilege.
"""

from __future__ import annotations

from typing import Final

from sqlalchemy import Connection, inspect, text

from timeline_pipeline.db.schema import metadata
from timeline_pipeline.domain.lifecycle import LifecycleDescriptor, RegistryError
from timeline_pipeline.lifecycle.registry import check_declarations, declarations


def _index_column_sets(conn: Connection, table: str) -> list[tuple[str, ...]]:
    inspector = inspect(conn)
    found: list[tuple[str, ...]] = []
    pk = inspector.get_pk_constraint(table).get("constrained_columns") or []
    if pk:
        found.append(tuple(pk))
    for index in inspector.get_indexes(table):
        found.append(tuple(c for c in index["column_names"] if c is not None))
    for unique in inspector.get_unique_constraints(table):
        found.append(tuple(unique["column_names"]))
    return found


def _delete_triggers(conn: Connection, table: str) -> list[str]:
    if conn.dialect.name == "postgresql":
        rows = conn.execute(
            text(
                "SELECT tgname, pg_get_triggerdef(oid) AS definition FROM pg_trigger "
                "WHERE tgrelid = CAST(:t AS regclass) AND NOT tgisinternal"
            ),
            {"t": table},
        ).all()
        return [r.tgname for r in rows if " DELETE " in f" {r.definition.upper()} "]
    rows = conn.execute(
        text("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = :t"),
        {"t": table},
    ).all()
    return [r.name for r in rows if "DELETE" in (r.sql or "").upper().split(" ON ")[0]]


def _can_delete(conn: Connection, table: str) -> bool:
    if conn.dialect.name != "postgresql":
        return True  # SQLite has no privileges
    return bool(
        conn.execute(
            text("SELECT has_table_privilege(current_user, CAST(:t AS regclass), 'DELETE')"),
            {"t": table},
        ).scalar_one()
    )


def check_live(conn: Connection, d: LifecycleDescriptor) -> list[RegistryError]:
    errors: list[RegistryError] = []

    def bad(field: str, reason: str) -> None:
        errors.append(RegistryError(d.key, field, reason))

    inspector = inspect(conn)
    if not inspector.has_table(d.table_name):
        bad("table_name", f"table {d.table_name!r} does not exist in the database")
        return errors
    columns = {c["name"] for c in inspector.get_columns(d.table_name)}
    for name in (d.cursor_column, d.id_column, d.workspace_column):
        if name is not None and name not in columns:
            bad("columns", f"column {name!r} does not exist in {d.table_name}")
    if d.is_generic:
        pk = inspector.get_pk_constraint(d.table_name).get("constrained_columns") or []
        if list(pk) != [d.id_column]:
            bad("id_column", f"a generic purge needs `id` as the primary key, found {pk}")
    existing = _index_column_sets(conn, d.table_name)
    for i, required in enumerate(d.required_indexes):
        if not any(cols[: len(required.columns)] == required.columns for cols in existing):
            bad(
                f"required_indexes[{i}]",
                f"no index on {d.table_name}({', '.join(required.columns)}) in the database",
            )
    for trigger in _delete_triggers(conn, d.table_name):
        bad("deletion", f"trigger {trigger!r} fires on DELETE: rows could never be purged")
    if not _can_delete(conn, d.table_name):
        bad("deletion", "the database role has no DELETE privilege on the table")
    return errors


NOT_REGISTERED: Final = {
    "workspaces": "the workspace itself: deleting one cascades to all its rows, an owner's act",
    "workspace_collaboration_resources": "chat bindings: one row per bound chat, no growth",
    "workspace_curators": "who may curate: one row per person and workspace, no growth",
    "api_tokens": "credentials: revoked, never aged out, one row per token",
    "legal_holds": "the record of what had to be preserved: never purged",
}
"""Tables of the schema that need no descriptor, each with its reason; any other table without
one fails the check, so a new table cannot land without a retention decision."""


def unregistered(found: list[tuple[str, LifecycleDescriptor]]) -> list[RegistryError]:
    registered = {d.table_name for _, d in found}
    return [
        RegistryError(
            table,
            "descriptor",
            "no lifecycle descriptor: declare one in the table's store module "
            "(or state why none is needed in lifecycle/live_check.py NOT_REGISTERED)",
        )
        for table in sorted(metadata.tables)
        if table not in registered and table not in NOT_REGISTERED
    ]


def registry_check(conn: Connection) -> tuple[int, list[RegistryError]]:
    """(descriptors checked, every error) for the registry as declared by the store modules."""
    found = declarations()
    errors = check_declarations(found)
    errors.extend(unregistered(found))
    for _, d in found:
        errors.extend(check_live(conn, d))
    return len(found), errors
