"""One retry for both card writers: a card that moved between read and write is read again.

The callback admission and the card worker each read a card and write it back under its
revision (a compare-and-set); when another replica wrote first, the write raises `CardMoved`
and `while_moved` runs the whole transaction again, a bounded number of times.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, TypeVar

from sqlalchemy import Connection, Engine

from timeline_pipeline.db.engine import transaction

CAS_ATTEMPTS: Final = 5

_T = TypeVar("_T")


class CardMoved(Exception):
    """The card changed between read and write: read it again."""


def while_moved(engine: Engine, once: Callable[[Connection], _T]) -> _T:
    """`once` in a transaction of its own, again while it raises `CardMoved` (its writes
    rolled back), at most `CAS_ATTEMPTS` times; then `CardMoved` is raised to the caller."""
    for _ in range(CAS_ATTEMPTS):
        try:
            with transaction(engine) as conn:
                return once(conn)
        except CardMoved:
            continue
    raise CardMoved
