"""How commands print: readable text by default, one JSON object with `--json`."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import asdict, is_dataclass
from datetime import UTC, datetime
from typing import Any, NoReturn

import click

from timeline_pipeline.cli.context import AppContext, pass_app
from timeline_pipeline.domain.errors import Refused

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_UNAVAILABLE = 3

json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
workspace_option = click.option("--workspace", "workspace_id", required=True)
"""The workspace a command acts on (`--workspace W`)."""


def workspace_options(command: Callable[[AppContext, str, bool], None]) -> Callable[..., None]:
    """The options of a command on one workspace and nothing else: `--workspace` and `--json`,
    with the app's context passed first."""
    return workspace_option(json_option(pass_app(command)))


def fail(message: str, code: int = EXIT_ERROR) -> NoReturn:
    """Every command's error exit: one `error: ...` line on stderr, then the exit code."""
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def refuse(message: str) -> NoReturn:
    """A usage error (exit 2): what was asked cannot be done as given."""
    fail(message, EXIT_USAGE)


class RefusalGroup(click.Group):
    """A command group whose refusals (`Refused`: a stale revision, no report yet, a time the
    report refuses) are one line on stderr and exit 1, as bad input is everywhere, never a
    traceback; an unknown workspace or a database that does not answer is the root group's to
    report."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except Refused as exc:
            fail(str(exc))


def jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if is_dataclass(value) and not isinstance(value, type):
        return {k: jsonable(v) for k, v in asdict(value).items()}
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    return value


def emit(as_json: bool, data: Any, human: Callable[[], None]) -> None:
    if as_json:
        click.echo(json.dumps(jsonable(data), sort_keys=True))
    else:
        human()


def parse_iso8601(value: str | None, option: str) -> datetime | None:
    """An option's ISO 8601 time; a time without a zone is refused, never guessed."""
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(f"not an ISO 8601 time: {value!r}", param_hint=option) from None
    if parsed.tzinfo is None:
        raise click.BadParameter("give a timezone, e.g. 2026-11-29T10:00:00Z", param_hint=option)
    try:
        parsed.astimezone(UTC)  # stored as UTC: 0001-01-01T00:00+01:00 has no UTC time
    except OverflowError:
        raise click.BadParameter(f"out of range in UTC: {value!r}", param_hint=option) from None
    return parsed
