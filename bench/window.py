"""The synthesis window the benchmarks build their data with: the default of the
`synthesisWindow` setting, read from the settings model rather than written again here, so that
a change of the default reaches the benchmarks (docs/changing.md, "A 15-minute window")."""

from __future__ import annotations

from datetime import timedelta

from timeline_pipeline.settings import LarkTimelineSettings

__all__ = ["WINDOW"]


def _default_window() -> timedelta:
    default = LarkTimelineSettings.model_fields["synthesis_window"].default
    if not isinstance(default, timedelta):
        raise TypeError("the synthesisWindow default is not a duration")
    return default


WINDOW: timedelta = _default_window()
