"""The one compare-and-set transition of a state row (DESIGN: every state change that two
workers could race on is one conditional UPDATE on status and revision).

The caller passes the revision it read, optionally the status it expects (or any further guard
on the row), and the new values; the UPDATE bumps the revision and returns the new row, or None
when another writer moved the row first or the guard no longer holds. Nothing else is touched
then, so the loser can re-read and decide again. Serves every table with `id` and `revision`
columns: window states, chat checkpoints, cards, decisions, holds and maintenance jobs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol, Required, TypedDict, TypeVar, Unpack

from sqlalchemy import ColumnElement, Connection, Executable, Table
from sqlalchemy.engine import Row

R = TypeVar("R")


def compare_and_set(
    conn: Connection,
    table: Table,
    *,
    row_id: int | str,
    revision: int,
    values: Mapping[str, Any],
    expected_status: str | None = None,
    where: ColumnElement[bool] | None = None,
) -> Row[Any] | None:
    """Apply `values` to row `row_id` if it is still at `revision` (and `expected_status`, and
    `where`); the new row with `revision + 1`, or None when the row had moved on."""
    if "revision" in values:
        raise ValueError("compare_and_set owns the revision: do not pass it in values")
    conditions: list[ColumnElement[bool]] = [
        table.c.id == row_id,
        table.c.revision == revision,
    ]
    if expected_status is not None:
        conditions.append(table.c.status == expected_status)
    if where is not None:
        conditions.append(where)
    stmt = (
        table.update()
        .where(*conditions)
        .values(revision=table.c.revision + 1, **values)
        .returning(*table.c)
    )
    return conn.execute(stmt).first()


class Read(Protocol):
    """A record as a store read it: its row's id and the revision it was at."""

    @property
    def id(self) -> int | str: ...

    @property
    def revision(self) -> int: ...


class Guards(TypedDict, total=False):
    """What a transition writes and what it requires besides the revision (`compare_and_set`)."""

    values: Required[Mapping[str, Any]]
    expected_status: str | None
    where: ColumnElement[bool] | None


def compare_and_set_from(
    conn: Connection, table: Table, read: Read, **guards: Unpack[Guards]
) -> Row[Any] | None:
    """`compare_and_set` from the revision the record `read` was read at: how a store moves a
    record it returned (a window state, a job, a hold, a pin, a decision)."""
    return compare_and_set(conn, table, row_id=read.id, revision=read.revision, **guards)


def compare_and_set_record(
    conn: Connection,
    table: Table,
    read: Read,
    to_record: Callable[[Row[Any]], R],
    **guards: Unpack[Guards],
) -> R | None:
    """`compare_and_set_from`, the moved row as the store's record (`to_record`); None when the
    row had moved on."""
    row = compare_and_set_from(conn, table, read, **guards)
    return None if row is None else to_record(row)


def compare_and_set_each(
    conn: Connection,
    table: Table,
    rows: Iterable[Row[Any]],
    *,
    values: Callable[[Row[Any]], Mapping[str, Any]],
    expected_status: str | None = None,
    where: ColumnElement[bool] | None = None,
) -> list[Row[Any]]:
    """The same transition tried on each row read (a batch claimed or expired): the rows won,
    in the order given; a row another writer moved first is skipped, not retried."""
    won: list[Row[Any]] = []
    for row in rows:
        moved = compare_and_set_from(
            conn, table, row, values=values(row), expected_status=expected_status, where=where
        )
        if moved is not None:
            won.append(moved)
    return won


def compare_and_set_selected(
    conn: Connection,
    table: Table,
    candidates: Executable,
    to_record: Callable[[Row[Any]], R],
    *,
    values: Callable[[Row[Any]], Mapping[str, Any]],
    expected_status: str | None = None,
    where: ColumnElement[bool] | None = None,
) -> list[R]:
    """`compare_and_set_each` on the rows `candidates` selects (a batch to claim or to expire):
    the rows won, as the store's records, in the order selected."""
    rows = conn.execute(candidates).all()
    won = compare_and_set_each(
        conn, table, rows, values=values, expected_status=expected_status, where=where
    )
    return [to_record(row) for row in won]
