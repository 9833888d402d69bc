"""One value built from another by field name: a store's record from its result row
(`db/rows.py`), a service's view from a stored record (`curation/timeline.py`), an API body from
a view (`api/presenters.py`).

Each names its fields after the one it is built from, so only what differs is spelled out (a
JSON column decoded to a dict, an integer flag made a bool, a value the source does not hold).
One rule for every layer, so a field added to both sides reaches callers without a hand-written
copy to update (README, "Package layout"). Pure.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

__all__ = ["record_of"]

R = TypeVar("R")
_MISSING: Any = object()


_FIELDS: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    """The fields a dataclass or a pydantic model is built with (read once per class)."""
    names = _FIELDS.get(cls)
    if names is None:
        if dataclasses.is_dataclass(cls):
            names = tuple(f.name for f in dataclasses.fields(cls) if f.init)
        elif isinstance(model_fields := getattr(cls, "model_fields", None), Mapping):
            names = tuple(model_fields)
        else:
            raise TypeError(f"{cls.__name__} is neither a dataclass nor a pydantic model")
        _FIELDS[cls] = names
    return names


def record_of(cls: type[R], source: Any, /, **given: Any) -> R:
    """`cls` built from `source`: each field takes the value of its name, unless `given` gives
    it. A result row is read by column (its `_mapping`, so no row method can stand in for a
    column); anything else by attribute. A field `source` does not hold keeps its default; a
    given name that is no field of `cls` is a TypeError."""
    mapping = getattr(source, "_mapping", None)
    values: Mapping[str, Any] | None = mapping if isinstance(mapping, Mapping) else None
    copied = {}
    for name in _field_names(cls):
        if name in given:
            continue
        value = (
            values.get(name, _MISSING) if values is not None else getattr(source, name, _MISSING)
        )
        if value is not _MISSING:
            copied[name] = value
    return cls(**copied, **given)
