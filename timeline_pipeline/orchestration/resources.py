"""Dagster resources: the product database and the validated settings.

The code location declares them once, in `definitions.py`, with `dg.EnvVar` fields: Dagster
reads the variable when a run starts (and shows where the value came from), not this module at
import. They are the same variables the CLI and the receiver read, so a Dagster run, the
`serve` process and an operator's command always agree on the database and the bounds.
"""

from __future__ import annotations

from typing import Any

import dagster as dg
from pydantic import PrivateAttr
from sqlalchemy import Engine

from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.llm.setup import ClaudeSetup, claude_setup
from timeline_pipeline.settings import (
    DEFAULT_DATABASE_URL,
    LarkTimelineSettings,
    Settings,
    load_settings,
)

__all__ = [
    "ClaudeSetup",
    "DatabaseResource",
    "TimelineSettingsResource",
    "claude_setup",
]


class DatabaseResource(dg.ConfigurableResource):  # type: ignore[type-arg]
    """The product database (not Dagster's own storage); `url` from TIMELINE_DATABASE_URL in
    production (`dg.EnvVar`), the local default otherwise."""

    url: str = DEFAULT_DATABASE_URL
    pool_size: int = 5

    _engine: Engine | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self._engine = make_engine(self.url, pool_size=self.pool_size)

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    @property
    def engine(self) -> Engine:
        if self._engine is None:  # used outside a run (sensors call it directly)
            self._engine = make_engine(self.url, pool_size=self.pool_size)
        return self._engine


class TimelineSettingsResource(dg.ConfigurableResource):  # type: ignore[type-arg]
    """The validated timeline settings; overrides are for tests and launchpad experiments."""

    overrides: dict[str, Any] = {}

    _settings: Settings | None = PrivateAttr(default=None)

    def load(self) -> Settings:
        if self._settings is None:
            self._settings = load_settings(**self.overrides)
        return self._settings

    @property
    def timeline(self) -> LarkTimelineSettings:
        return self.load().timeline
