"""Lazily loaded settings and engine shared by the CLI commands.

`--help` must work without a database or a valid configuration, so nothing is loaded until a
command asks for it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from functools import cached_property
from typing import Concatenate, ParamSpec, TypeVar

import click
from sqlalchemy import Engine

from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.settings import Settings, load_settings

P = ParamSpec("P")
R = TypeVar("R")


class AppContext:
    @cached_property
    def settings(self) -> Settings:
        return load_settings()

    @property
    def database_url(self) -> str:
        return self.settings.runtime.database_url

    @cached_property
    def engine(self) -> Engine:
        return make_engine(self.database_url)


def pass_app(func: Callable[Concatenate[AppContext, P], R]) -> Callable[P, R]:
    """Like click.pass_obj, typed for AppContext."""

    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        app = click.get_current_context().find_object(AppContext)
        if app is None:  # invoked outside the root group (tests calling a subcommand directly)
            app = AppContext()
        return func(app, *args, **kwargs)

    return functools.update_wrapper(wrapper, func)
