"""The one dialect switch for `INSERT ... ON CONFLICT`.

SQLAlchemy's generic `insert()` has no `on_conflict_do_update` / `on_conflict_do_nothing`;
each dialect's own construct does, with the same spelling on SQLite and PostgreSQL. Every store
that upserts takes its statement from here, so choosing the dialect is written once (README,
"Package layout"). A store that inserts a row only if its unique key is free uses `insert_new`,
which tells a new row from one already there; one that inserts or updates the row under a key
uses `upsert`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection, Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Row

__all__ = ["insert_for", "insert_for_dialect", "insert_new", "upsert"]


def insert_for_dialect(dialect: str, table: Table) -> Any:
    """An insert on `table` that supports `on_conflict_do_*` for the named dialect."""
    return (postgresql.insert if dialect == "postgresql" else sqlite.insert)(table)


def insert_for(conn: Connection, table: Table) -> Any:
    """`insert_for_dialect` for the dialect of `conn`."""
    return insert_for_dialect(conn.dialect.name, table)


def insert_new(
    conn: Connection,
    table: Table,
    values: Mapping[str, Any],
    *,
    returning: Sequence[ColumnElement[Any]] = (),
    conflict: Sequence[Any] | None = None,
) -> Row[Any] | None:
    """`INSERT ... ON CONFLICT DO NOTHING`: the new row (its `returning` columns, all of them by
    default), or None when a unique key (`conflict`, any of them by default) already held a row
    and nothing was written. RETURNING, not rowcount, tells the two apart: psycopg reports -1
    for an INSERT ... ON CONFLICT DO NOTHING."""
    statement = (
        insert_for(conn, table)
        .values(**values)
        .on_conflict_do_nothing(index_elements=conflict)
        .returning(*(returning or table.c))
    )
    row: Row[Any] | None = conn.execute(statement).first()
    return row


def upsert(
    conn: Connection,
    table: Table,
    values: Mapping[str, Any],
    *,
    key: Sequence[Any],
    update: Sequence[str],
    also: Mapping[str, Any] | None = None,
    where: Callable[[Any], ColumnElement[bool]] | None = None,
) -> Row[Any] | None:
    """`INSERT ... ON CONFLICT (key) DO UPDATE`: a new row of `values`, or the row already under
    `key` with its `update` columns set from `values` and its `also` columns set as given, where
    `where(new)` holds (`new`: the values the insert proposed). The row as written, or None when
    `where` kept the stored row as it was."""
    statement = insert_for(conn, table).values(**values)
    new = statement.excluded
    statement = statement.on_conflict_do_update(
        index_elements=key,
        set_={**{column: new[column] for column in update}, **(also or {})},
        where=None if where is None else where(new),
    ).returning(*table.c)
    row: Row[Any] | None = conn.execute(statement).first()
    return row
