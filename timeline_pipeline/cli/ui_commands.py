"""`timeline-pipeline ui {link,sessions,revoke}`: sign-in to the timeline page
(docs/timeline-page.md).

A link is printed once, alone on the last line, so a script can take it with `tail -n 1`; it is
valid for 10 minutes and works once, and only its hash is stored.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Final
from urllib.parse import urlencode, urlsplit

import click

from timeline_pipeline.cli.context import AppContext, pass_app
from timeline_pipeline.cli.output import emit, json_option, workspace_option, workspace_options
from timeline_pipeline.db.engine import connection, transaction
from timeline_pipeline.store import ui_sessions

LINK_TTL: Final = timedelta(minutes=10)
DEFAULT_BASE_URL: Final = "http://127.0.0.1:8080"


def sign_in_url(base_url: str, token: str) -> str:
    return f"{base_url.rstrip('/')}/ui/sign-in?{urlencode({'token': token})}"


def _check_base_url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise click.BadParameter(
            "give the address `serve` is reached at, e.g. http://127.0.0.1:8080",
            param_hint="--base-url",
        )
    return value.rstrip("/")


@click.group("ui")
def ui_group() -> None:
    """The timeline page served by `serve` under /ui: sign-in links and sessions."""


@ui_group.command("link")
@workspace_option
@click.option(
    "--base-url",
    default=DEFAULT_BASE_URL,
    show_default=True,
    help="Where browsers reach `serve` (the link's scheme, host and port).",
)
@json_option
@pass_app
def ui_link(app: AppContext, workspace_id: str, base_url: str, as_json: bool) -> None:
    """Print a one-time sign-in link to the workspace's timeline page (valid 10 minutes)."""
    base = _check_base_url(base_url)
    with transaction(app.engine) as conn:
        issued = ui_sessions.create_link(conn, workspace_id, now=datetime.now(UTC), ttl=LINK_TTL)
    url = sign_in_url(base, issued.token)

    def human() -> None:
        click.echo(
            f"sign-in link for workspace {workspace_id}, valid until "
            f"{issued.expires_at.strftime('%H:%M UTC')}, works once:"
        )
        click.echo(url)

    emit(
        as_json,
        {"workspace": workspace_id, "expires_at": issued.expires_at, "url": url},
        human,
    )


@ui_group.command("sessions")
@workspace_options
def ui_sessions_list(app: AppContext, workspace_id: str, as_json: bool) -> None:
    """List the workspace's page sessions (ids and dates; never a secret)."""
    with connection(app.engine) as conn:
        items = ui_sessions.sessions_of(conn, workspace_id)
    now = datetime.now(UTC)

    def human() -> None:
        for item in items:
            state = (
                "revoked"
                if item.revoked_at
                else ("expired" if item.expires_at <= now else "active")
            )
            click.echo(f"{item.id}  {state}  {item.created_at.isoformat()}")

    emit(as_json, {"sessions": items}, human)


@ui_group.command("revoke")
@workspace_options
def ui_revoke(app: AppContext, workspace_id: str, as_json: bool) -> None:
    """End every page session of the workspace and void its unused sign-in links."""
    with transaction(app.engine) as conn:
        ended = ui_sessions.revoke_for_workspace(conn, workspace_id, now=datetime.now(UTC))
    emit(
        as_json,
        {"workspace": workspace_id, "sessions_revoked": ended},
        lambda: click.echo(f"{ended} session(s) of workspace {workspace_id} revoked"),
    )
