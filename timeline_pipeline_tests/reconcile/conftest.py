"""Fixtures for reconciliation tests: a harness over a real simulator and the real database."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from sqlalchemy import Engine

from timeline_pipeline.lark.simulator import ChatStore
from timeline_pipeline_tests.reconcile.harness import Harness, reconcile_settings, start_simulator

MakeHarness = Callable[..., Harness]


@pytest.fixture
def make_harness(engine: Engine) -> Iterator[MakeHarness]:
    """`make_harness(messages, **setting_overrides)`: a running local Lark holding `messages`."""
    with ExitStack() as exits:

        def make(items: list[dict[str, Any]] | None = None, **settings: Any) -> Harness:
            sim = start_simulator(ChatStore(items or []), exits)
            return Harness(engine, sim, reconcile_settings(**settings), exits)

        yield make
