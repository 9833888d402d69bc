"""What stores share to read rows: a JSON column as a dict, and the lookup by source key.

A store builds its record from a row by field name with `domain.records.record_of`: its record
names its fields after its table's columns, so only what differs from the column is spelled out
(a JSON column decoded with `json_object`, an integer flag made a bool, a value parsed into an
enum).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Table, select
from sqlalchemy.engine import Row

__all__ = ["by_source_key", "json_object"]


def json_object(value: Any) -> dict[str, Any]:
    """A JSON object column as a dict of its own (`{}` for NULL), never the driver's object."""
    return dict(value or {})


def by_source_key(
    conn: Connection, table: Table, workspace_id: str, source: str, source_type: str, key: str
) -> Row[Any] | None:
    """The row a source names: evidence and window states (with checkpoints) share the natural
    key (workspace_id, source, source_type, source_key), unique on both tables."""
    return conn.execute(
        select(table).where(
            table.c.workspace_id == workspace_id,
            table.c.source == source,
            table.c.source_type == source_type,
            table.c.source_key == key,
        )
    ).first()
