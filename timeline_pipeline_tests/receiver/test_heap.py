"""The heap a server starts with is frozen: garbage collections no longer traverse it."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from timeline_pipeline.receiver.heap import freeze_startup_heap


@pytest.fixture
def unfreeze_after() -> Iterator[None]:
    yield
    gc.unfreeze()


@pytest.mark.usefixtures("unfreeze_after")
def test_objects_alive_at_startup_leave_the_generations_that_collections_traverse() -> None:
    startup_state = [{"binding": index} for index in range(1000)]
    assert any(obj is startup_state for obj in gc.get_objects())

    frozen = freeze_startup_heap()

    assert frozen >= len(startup_state) and gc.get_freeze_count() == frozen
    assert gc.is_tracked(startup_state)  # still a container, only out of the collector's way
    assert not any(obj is startup_state for obj in gc.get_objects())
    created_later: list[object] = []
    assert any(obj is created_later for obj in gc.get_objects(0))  # later objects are collected


@pytest.mark.usefixtures("unfreeze_after")
def test_garbage_left_by_startup_is_collected_before_the_freeze_not_kept_forever() -> None:
    cycle: list[object] = []
    cycle.append(cycle)
    marker = id(cycle)
    del cycle

    freeze_startup_heap()

    gc.unfreeze()
    assert all(id(obj) != marker for obj in gc.get_objects())
