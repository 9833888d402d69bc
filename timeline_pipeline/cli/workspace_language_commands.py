"""`workspace show`, `workspace set-locale` and `workspace set-time-zone`: how a person reads a
workspace (docs/i18n.md, docs/cli.md)."""

from __future__ import annotations

from typing import Any

import click

from timeline_pipeline.cli.context import AppContext, pass_app
from timeline_pipeline.cli.output import emit, json_option, workspace_option
from timeline_pipeline.curation.presentation import presentation_for
from timeline_pipeline.db.engine import connection, transaction
from timeline_pipeline.i18n.locales import LOCALE_CHOICES
from timeline_pipeline.store import workspaces as workspace_store

__all__ = ["register"]

_FOLLOW = "default"
"""The value that clears a workspace's own choice, so that it follows the setting again."""


def register(group: click.Group) -> None:
    """Add the commands to the `workspace` group (kept out of cli/main.py)."""
    group.add_command(workspace_show)
    group.add_command(workspace_set_locale)
    group.add_command(workspace_set_time_zone)


@click.command("show")
@click.argument("workspace_id")
@json_option
@pass_app
def workspace_show(app: AppContext, workspace_id: str, as_json: bool) -> None:
    """A workspace: status, chats, curators, and its language and time zone (its own choice,
    or the setting's, and what they resolve to)."""
    settings = app.settings.timeline
    with connection(app.engine) as conn:
        found = workspace_store.require(conn, workspace_id)
        shown = presentation_for(conn, found, settings)
        chats = workspace_store.chats_of(conn, workspace_id)
        curators = workspace_store.curators_of(conn, workspace_id)
    data: dict[str, Any] = {
        "id": found.id,
        "type": found.type,
        "status": found.status,
        "title": found.title,
        "created_at": found.created_at,
        "chats": chats,
        "curators": curators,
        "locale": found.locale or settings.locale,
        "locale_from": "workspace" if found.locale else "setting",
        "effective_locale": shown.locale.value,
        "time_zone": shown.time_zone.key,
        "time_zone_from": "workspace" if found.time_zone else "setting",
    }

    def human() -> None:
        click.echo(f"{found.id}  {found.type}  {found.status}  {found.created_at.isoformat()}")
        if found.title:
            click.echo(f"  title: {found.title}")
        click.echo(
            f"  locale: {data['locale']} ({data['locale_from']}) -> {data['effective_locale']}"
        )
        click.echo(f"  time zone: {data['time_zone']} ({data['time_zone_from']})")
        click.echo(f"  chats: {', '.join(chats) or '-'}")
        click.echo(f"  curators: {', '.join(curators) or '-'}")

    emit(as_json, data, human)


@click.command("set-locale")
@workspace_option
@click.option(
    "--locale",
    required=True,
    type=click.Choice((*LOCALE_CHOICES, _FOLLOW)),
    help=f"`auto` reads the chat's majority script; `{_FOLLOW}` follows the locale setting.",
)
@json_option
@pass_app
def workspace_set_locale(app: AppContext, workspace_id: str, locale: str, as_json: bool) -> None:
    """Set the language of the workspace's summary, cards, replies, page and export."""
    with transaction(app.engine) as conn:
        changed = workspace_store.set_language(
            conn, workspace_id, locale=None if locale == _FOLLOW else locale
        )
    emit(as_json, changed, lambda: click.echo(f"workspace {workspace_id} locale: {locale}"))


@click.command("set-time-zone")
@workspace_option
@click.option(
    "--time-zone",
    "time_zone",
    required=True,
    help=f"An IANA name (Asia/Shanghai, UTC); `{_FOLLOW}` follows the timeZone setting.",
)
@json_option
@pass_app
def workspace_set_time_zone(
    app: AppContext, workspace_id: str, time_zone: str, as_json: bool
) -> None:
    """Set the zone the workspace's times are shown in (stored times stay UTC)."""
    with transaction(app.engine) as conn:
        changed = workspace_store.set_language(
            conn, workspace_id, time_zone=None if time_zone == _FOLLOW else time_zone
        )
    emit(as_json, changed, lambda: click.echo(f"workspace {workspace_id} time zone: {time_zone}"))
