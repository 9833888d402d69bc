"""`timeline-pipeline config reference`: the configuration reference, from the settings models.

It needs no database and no valid configuration: it documents the models, not this process's
values, so it also works on a machine that is not set up yet.
"""

from __future__ import annotations

from pathlib import Path

import click

from timeline_pipeline.cli.output import fail
from timeline_pipeline.settings_reference import (
    ReferenceIncomplete,
    render_reference,
    replace_block,
)


@click.group("config")
def config_group() -> None:
    """Configuration: the reference of every key."""


@config_group.command("reference")
@click.option(
    "--write",
    "target",
    type=click.Path(dir_okay=False, path_type=Path),
    help=(
        "Replace the reference block of this Markdown file (e.g. docs/configuration.md) "
        "instead of printing."
    ),
)
def config_reference(target: Path | None) -> None:
    """Print every setting as Markdown tables: YAML key, variable, type, default, bounds."""
    rendered = render_reference()
    if target is None:
        click.echo(rendered, nl=False)
        return
    try:
        document = target.read_text(encoding="utf-8")
        target.write_text(replace_block(document, rendered), encoding="utf-8")
    except OSError as exc:
        fail(f"cannot update {target}: {exc.strerror or exc}")
    except ReferenceIncomplete as exc:
        fail(f"cannot update {target}: {exc}")
    click.echo(f"updated the configuration reference in {target}")
