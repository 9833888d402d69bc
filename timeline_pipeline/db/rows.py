"""Result rows to the frozen records the stores return, and the lookups stores share.

A store's record names its fields after its table's columns, so a record is built from a row by
field name: only what differs from the column is spelled out (a JSON column decoded to a dict,
an integer flag made a bool, a value parsed into an enum). One mapping rule for every store, so a
column added to a table and its record reaches callers without a hand-written copy to update
(README, "Package layout").
"""

from __future__ import annotations

import dataclasses
from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import Connection, Table, select
from sqlalchemy.engine import Row

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ["by_source_key", "json_object", "record_of"]

R = TypeVar("R", bound="DataclassInstance")


@cache
def _field_names(cls: type[DataclassInstance]) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if f.init)


def record_of(cls: type[R], row: Any, **converted: Any) -> R:
    """`cls` built from `row`: each field takes the column of its name, unless `converted`
    gives its value. A field with no column and no converted value keeps its default; a
    converted name that is no field of `cls` is a TypeError."""
    columns = row._mapping
    copied = {
        name: columns[name]
        for name in _field_names(cls)
        if name not in converted and name in columns
    }
    return cls(**copied, **converted)


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
