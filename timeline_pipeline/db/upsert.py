"""The one dialect switch for `INSERT ... ON CONFLICT`.

SQLAlchemy's generic `insert()` has no `on_conflict_do_update` / `on_conflict_do_nothing`;
each dialect's own construct does, with the same spelling on SQLite and PostgreSQL. Every store
that upserts takes its statement from here, so choosing the dialect is written once (README,
"Package layout").
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Table
from sqlalchemy.dialects import postgresql, sqlite

__all__ = ["insert_for", "insert_for_dialect"]


def insert_for_dialect(dialect: str, table: Table) -> Any:
    """An insert on `table` that supports `on_conflict_do_*` for the named dialect."""
    return (postgresql.insert if dialect == "postgresql" else sqlite.insert)(table)


def insert_for(conn: Connection, table: Table) -> Any:
    """`insert_for_dialect` for the dialect of `conn`."""
    return insert_for_dialect(conn.dialect.name, table)
