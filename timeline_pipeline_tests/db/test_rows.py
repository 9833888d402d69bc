"""Records built from result rows by field name (`domain/records.py`, as the stores use it): a
column of a field's name is copied, a converted value wins, a field with no column keeps its
default, and a converted name that is no field is refused."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from timeline_pipeline.db.rows import json_object
from timeline_pipeline.domain.records import record_of


@dataclass(frozen=True, slots=True)
class _Record:
    id: int
    name: str
    flag: bool
    metadata: dict[str, Any]
    note: str = "none"


def _row() -> Any:
    with create_engine("sqlite://").connect() as conn:
        return conn.execute(
            text("SELECT 7 AS id, 'x' AS name, 1 AS flag, NULL AS metadata_json, 'extra' AS other")
        ).one()


def test_columns_are_copied_by_field_name_and_converted_values_win() -> None:
    row = _row()
    record = record_of(_Record, row, flag=bool(row.flag), metadata=json_object(row.metadata_json))
    assert record == _Record(id=7, name="x", flag=True, metadata={})


def test_a_converted_name_that_is_no_field_is_refused() -> None:
    row = _row()
    with pytest.raises(TypeError):
        record_of(_Record, row, flag=True, metadata={}, nonsense=1)


def test_json_object_copies_the_mapping() -> None:
    stored = {"a": 1}
    copied = json_object(stored)
    assert copied == stored and copied is not stored
    assert json_object(None) == {}


@dataclass(frozen=True, slots=True)
class _Counted:
    id: int
    count: int = 0
    """A field named like a method of a result row (`Row.count`)."""


def test_a_row_is_read_by_column_so_a_row_method_never_stands_in_for_one() -> None:
    assert record_of(_Counted, _row()) == _Counted(id=7, count=0)
