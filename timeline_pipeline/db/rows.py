"""What stores share to read rows: a JSON column as a dict, and the lookup by source key.

A store builds its record from a row by field name with `domain.records.record_of`: its record
names its fields after its table's columns, so only what differs from the column is spelled out
(a JSON column decoded with `json_object`, an integer flag made a bool, a value parsed into an
enum).

A store's statement and its row-to-record function meet here, so that a store does not repeat
the fetch and the mapping each time: `first_record` (the record or None), `record_where` (the
lookup by a key), `records` (a listing, in the statement's order) and `workspace_records` (a
workspace's rows in the order they were made).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Connection, Executable, Table, select
from sqlalchemy.engine import Row

__all__ = [
    "by_source_key",
    "first_record",
    "json_object",
    "record_where",
    "records",
    "workspace_records",
]

R = TypeVar("R")


def first_record(
    conn: Connection, statement: Executable, to_record: Callable[[Row[Any]], R]
) -> R | None:
    """The first row `statement` returns, as the store's record; None when it returns none."""
    row = conn.execute(statement).first()
    return None if row is None else to_record(row)


def record_where(
    conn: Connection,
    table: Table,
    to_record: Callable[[Row[Any]], R],
    *where: ColumnElement[bool],
) -> R | None:
    """The row of `table` that `where` names (its id or another unique key), as the store's
    record; None when there is none."""
    return first_record(conn, select(table).where(*where), to_record)


def records(conn: Connection, statement: Executable, to_record: Callable[[Row[Any]], R]) -> list[R]:
    """Every row `statement` returns, as the store's records, in the statement's order."""
    return [to_record(row) for row in conn.execute(statement)]


def workspace_records(
    conn: Connection,
    table: Table,
    workspace_id: str,
    to_record: Callable[[Row[Any]], R],
    *,
    limit: int | None = None,
) -> list[R]:
    """A workspace's rows of `table` in the order they were made (`created_at`, then `id`), at
    most `limit` of them when it is given."""
    statement = (
        select(table)
        .where(table.c.workspace_id == workspace_id)
        .order_by(table.c.created_at, table.c.id)
        .limit(limit)
    )
    return records(conn, statement, to_record)


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
