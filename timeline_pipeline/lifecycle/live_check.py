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

from sqlalchemy import JSON, Connection, MetaData, String, Table, Text, inspect, text

from timeline_pipeline.db.schema import metadata
from timeline_pipeline.domain.content_lineage import ContentCopy, check_copies
from timeline_pipeline.domain.lifecycle import LifecycleDescriptor, RegistryError
from timeline_pipeline.lifecycle.registry import check_declarations, content_copies, declarations


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


FREE_TEXT_MIN_LENGTH: Final = 512
"""A string column this long or longer (or unbounded text, or JSON) can hold a message's words,
a title or a summary: its table must say what a recall does to it."""

NO_MESSAGE_TEXT: Final = {
    "workspaces": "the workspace's own title, set by an operator",
    "workspace_timeline_sync_states": "window and checkpoint states: keys, counts and errors",
    "audit_events": "who did what: ids, actors and field names, never a title or a body",
    "api_tokens": "credentials: hashes and scopes",
    "legal_holds": "a hold's reason, written by an operator",
    "lifecycle_runs": "counts per descriptor, an archive path and an error message",
    "lifecycle_retired_partitions": "window partition keys",
    "interaction_admissions": "a curator's decision on a card: the value is the curator's words",
    "incident_report_documents": "a report document's ids, link and title (the workspace's)",
    "follow_up_tasks": "a Lark task's ids and link; the task's words live in Lark",
}
"""Tables with free-text columns that hold no message text, each with its reason; any other
such table without a content declaration (`domain/content_lineage.declare_content` in its store
module) fails the check, so a new copy of a message's text cannot land without a recall rule."""


def text_columns(table: Table) -> list[str]:
    """The columns of `table` that can hold free text (`FREE_TEXT_MIN_LENGTH`, text, JSON)."""
    found: list[str] = []
    for column in table.columns:
        # A TypeDecorator (the JSON and UTC time types) is judged by what it stores.
        kind = getattr(column.type, "impl_instance", column.type)
        unbounded = isinstance(kind, Text | JSON)
        long = (
            isinstance(kind, String)
            and (kind.length or FREE_TEXT_MIN_LENGTH) >= FREE_TEXT_MIN_LENGTH
        )
        if unbounded or long:
            found.append(column.name)
    return found


def unlineaged(
    copies: list[ContentCopy],
    schema: MetaData = metadata,
    no_message_text: dict[str, str] = NO_MESSAGE_TEXT,
) -> list[RegistryError]:
    """Tables with free-text columns and neither a content declaration nor a reason for having
    none; declarations naming a table or text column the schema lacks; the declarations' own
    errors (`content_lineage.check_copies`)."""
    errors = [RegistryError("content", "declaration", reason) for reason in check_copies(copies)]
    declared = {c.table_name: c for c in copies}
    for name, table in sorted(schema.tables.items()):
        free = text_columns(table)
        copy = declared.get(name)
        if copy is None:
            if free and name not in no_message_text:
                errors.append(
                    RegistryError(
                        name,
                        "content",
                        f"free-text columns {free} and no content declaration: declare what a "
                        "recall does to them (domain/content_lineage.declare_content in the "
                        "table's store module) or state why they hold no message text "
                        "(lifecycle/live_check.py NO_MESSAGE_TEXT)",
                    )
                )
            continue
        missing = [c for c in copy.text_columns if c not in table.columns]
        if missing:
            errors.append(RegistryError(copy.key, "text_columns", f"not in {name}: {missing}"))
    for copy in copies:
        if copy.table_name not in schema.tables:
            errors.append(RegistryError(copy.key, "table_name", "no such table in the schema"))
    return errors


def registry_check(conn: Connection) -> tuple[int, list[RegistryError]]:
    """(descriptors checked, every error) for the registry as declared by the store modules,
    the content lineage included."""
    found = declarations()
    errors = check_declarations(found)
    errors.extend(unregistered(found))
    errors.extend(unlineaged(content_copies()))
    for _, d in found:
        errors.extend(check_live(conn, d))
    return len(found), errors
