"""The synthesis window the tests assume: the default of the `synthesisWindow` setting, read
from the settings model, so that changing the default changes every test that builds windows
with it (docs/changing.md, "A 15-minute window")."""

from __future__ import annotations

from datetime import timedelta

from timeline_pipeline.settings import LarkTimelineSettings

__all__ = ["WINDOW"]


def _default_window() -> timedelta:
    default = LarkTimelineSettings.model_fields["synthesis_window"].default
    assert isinstance(default, timedelta)
    return default


WINDOW: timedelta = _default_window()
"""The default window size, as the settings declare it (environment and files not read)."""
