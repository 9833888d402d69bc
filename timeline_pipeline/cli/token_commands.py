"""`timeline-pipeline token {create,revoke,list}`: bearer tokens for the workspace API."""

from __future__ import annotations

from datetime import UTC, datetime

import click

from timeline_pipeline.cli.context import AppContext, pass_app
from timeline_pipeline.cli.output import emit, json_option, workspace_option, workspace_options
from timeline_pipeline.db.engine import connection, transaction
from timeline_pipeline.store import api_tokens, ui_sessions


@click.group("token")
def token_group() -> None:
    """Workspace-scoped bearer tokens for the HTTP API (stored hashed)."""


@token_group.command("create")
@workspace_option
@click.option(
    "--scope",
    "scopes",
    multiple=True,
    type=click.Choice(api_tokens.SCOPES),
    help="A scope to grant (repeat for several); default: timeline:read and timeline:curate. "
    "lifecycle:hold:create and lifecycle:hold:release are separate and never granted by default.",
)
@json_option
@pass_app
def token_create(
    app: AppContext, workspace_id: str, scopes: tuple[str, ...], as_json: bool
) -> None:
    """Mint a token for one workspace; it is printed once, alone on the last line."""
    with transaction(app.engine) as conn:
        issued = api_tokens.create(conn, workspace_id, scopes or api_tokens.DEFAULT_SCOPES)

    def human() -> None:
        granted = " ".join(issued.scopes)
        click.echo(
            f"token {issued.id} for workspace {workspace_id}, scopes {granted} "
            "(shown once, store it now):"
        )
        click.echo(issued.token)

    emit(as_json, issued, human)


@token_group.command("revoke")
@click.option("--id", "token_id", help="Token id (tok_...), as `token create` printed.")
@click.option(
    "--workspace",
    "workspace_id",
    help="With --all: the workspace whose every token and timeline page session ends.",
)
@click.option("--all", "revoke_all", is_flag=True, help="Revoke all of --workspace's credentials.")
@json_option
@pass_app
def token_revoke(
    app: AppContext, token_id: str | None, workspace_id: str | None, revoke_all: bool, as_json: bool
) -> None:
    """Revoke a token (requests carrying it get 401 from then on), or with `--workspace W --all`
    every token of the workspace and every session of its timeline page."""
    if revoke_all:
        if token_id is not None or workspace_id is None:
            raise click.UsageError("give either --id, or --workspace with --all")
        with transaction(app.engine) as conn:
            tokens = api_tokens.revoke_all(conn, workspace_id)
            sessions = ui_sessions.revoke_for_workspace(conn, workspace_id, now=datetime.now(UTC))
        data = {"workspace": workspace_id, "tokens_revoked": tokens, "sessions_revoked": sessions}
        emit(
            as_json,
            data,
            lambda: click.echo(
                f"workspace {workspace_id}: {tokens} token(s) and {sessions} page session(s) "
                "revoked"
            ),
        )
        return
    if token_id is None or workspace_id is not None:
        raise click.UsageError("give either --id, or --workspace with --all")
    with transaction(app.engine) as conn:
        info = api_tokens.revoke(conn, token_id)
    emit(as_json, info, lambda: click.echo(f"token {info.id} revoked"))


@token_group.command("list")
@workspace_options
def token_list(app: AppContext, workspace_id: str, as_json: bool) -> None:
    """List a workspace's tokens (ids and dates; never the secrets)."""
    with connection(app.engine) as conn:
        items = api_tokens.list_for(conn, workspace_id)

    def human() -> None:
        for item in items:
            state = "revoked" if item.revoked_at else "active"
            click.echo(f"{item.id}  {state}  {item.created_at.isoformat()}")

    emit(as_json, {"tokens": items}, human)
