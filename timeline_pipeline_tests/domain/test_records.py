"""Values built from other values by field name (`domain/records.py`): a view from a stored
record by attribute, a pydantic body from a view, given values winning and missing ones
defaulting."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from pydantic import BaseModel

from timeline_pipeline.domain.records import record_of


@dataclass(frozen=True, slots=True)
class _Stored:
    id: int
    title: str
    secret: str


@dataclass(frozen=True, slots=True)
class _View:
    id: int
    title: str
    etag: str
    note: str = "none"


class _Body(BaseModel):
    id: int
    title: str
    etag: str


def test_a_view_takes_the_records_fields_of_its_names_and_the_given_rest() -> None:
    view = record_of(_View, _Stored(1, "Rollback", "s3cret"), etag='"1"')
    assert view == _View(id=1, title="Rollback", etag='"1"', note="none")


def test_a_pydantic_body_is_built_from_a_view_by_its_fields_only() -> None:
    view = _View(id=1, title="Rollback", etag='"1"', note="internal")
    assert record_of(_Body, view).model_dump() == {"id": 1, "title": "Rollback", "etag": '"1"'}


def test_a_given_name_that_is_no_field_and_a_class_of_no_fields_are_refused() -> None:
    with pytest.raises(TypeError):
        record_of(_View, _Stored(1, "Rollback", "s"), etag="e", nonsense=1)
    with pytest.raises(TypeError):
        record_of(int, _Stored(1, "Rollback", "s"))
