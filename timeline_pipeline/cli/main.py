"""The `timeline-pipeline` command line.

Every failure an operator can cause (bad input, a database that does not answer, a schema from
newer code) ends as one line on stderr and a non-zero exit code, never a traceback.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

import click
import psycopg
from sqlalchemy.exc import DBAPIError, StatementError

from timeline_pipeline.cli.context import AppContext, pass_app
from timeline_pipeline.cli.output import (
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    emit,
    fail,
    json_option,
    jsonable,
    parse_iso8601,
    workspace_option,
)
from timeline_pipeline.curation.curators import CuratorService
from timeline_pipeline.db.engine import (
    DatabaseConfigError,
    DatabaseUnavailable,
    NotADatabase,
    SchemaMissing,
    classify,
    connection,
    redacted_url,
    transaction,
)
from timeline_pipeline.db.migrate import MigrationError, current_revision, head_revision, upgrade
from timeline_pipeline.domain.errors import Refused
from timeline_pipeline.domain.keys import InvalidKey
from timeline_pipeline.domain.lifecycle import UnsafeIdentifier
from timeline_pipeline.i18n.locales import LOCALE_CHOICES
from timeline_pipeline.maintenance.endpoint import cli_actor
from timeline_pipeline.settings import SettingsError
from timeline_pipeline.store import workspaces as workspace_store
from timeline_pipeline.store.api_tokens import TokenNotFound
from timeline_pipeline.store.workspaces import WorkspaceError

USER_ERRORS: tuple[type[Exception], ...] = (
    SettingsError,
    DatabaseConfigError,
    MigrationError,
    WorkspaceError,
    InvalidKey,
    TokenNotFound,
    Refused,
    UnsafeIdentifier,
)


def _database_failure(exc: DatabaseUnavailable) -> NoReturn:
    # A missing schema or a file that is no database is the operator's to fix (1); a database
    # that does not answer may come back by itself (3).
    if isinstance(exc, SchemaMissing | NotADatabase):
        fail(str(exc))
    fail(str(exc), EXIT_UNAVAILABLE)


class GuardedGroup(click.Group):
    """Turns the errors an operator can cause into one line and an exit code.

    The text of a SQLAlchemy error holds the statement and its parameters (a title, a token
    hash): it is never printed, only the driver's classification of it.
    """

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:  # a subcommand's options: one line, like every mistake
            fail(exc.format_message(), EXIT_USAGE)
        except DatabaseUnavailable as exc:
            _database_failure(exc)
        except (DBAPIError, psycopg.Error) as exc:
            mapped = classify(exc)
            if mapped is not None:
                _database_failure(mapped)
            orig = getattr(exc, "orig", None) or exc
            fail(f"the database refused the command ({type(orig).__name__})")
        except StatementError as exc:  # a value the driver could not even send
            fail(f"the database refused a value ({type(exc.orig).__name__})")
        except USER_ERRORS as exc:
            fail(str(exc))

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # Arguments that are not UTF-8 reach Python as lone surrogates, which no database
        # driver can encode; refuse them here, naming the option but never echoing the bytes.
        for index, arg in enumerate(args):
            if not _is_utf8(arg):
                fail(f"{_argument_name(args, index)}: not UTF-8 text", EXIT_USAGE)
        return super().parse_args(ctx, args)


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _argument_name(args: list[str], index: int) -> str:
    """The option a bad value belongs to (`--title X` or `--title=X`), else its position."""
    arg = args[index]
    candidates = [arg.split("=", 1)[0]] if arg.startswith("--") and "=" in arg else []
    if index:
        candidates.append(args[index - 1])
    for name in candidates:
        if name.startswith("-") and _is_utf8(name):
            return name
    return f"argument {index + 1}"


@click.group(cls=GuardedGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Turn incident group chats in Lark into a curated, traceable workspace timeline."""
    ctx.obj = AppContext()


@cli.group(cls=GuardedGroup)
def db() -> None:
    """Product database schema."""


@db.command("upgrade")
@json_option
@pass_app
def db_upgrade(app: AppContext, as_json: bool) -> None:
    """Create or migrate the schema to this code's head (SQLite or PostgreSQL)."""
    before, after = upgrade(app.engine)
    data = {"database": redacted_url(app.database_url), "from": before, "to": after}
    emit(
        as_json,
        data,
        lambda: click.echo(f"database {data['database']}: schema {before or 'empty'} -> {after}"),
    )


@db.command("status")
@json_option
@pass_app
def db_status(app: AppContext, as_json: bool) -> None:
    """Show the schema revision of the database and of this code."""
    current = current_revision(app.engine)
    head = head_revision()
    data = {
        "database": redacted_url(app.database_url),
        "current": current,
        "head": head,
        "up_to_date": current == head,
    }
    emit(as_json, data, lambda: click.echo(f"schema {current or 'empty'} (code head {head})"))


@cli.command("status")
@json_option
@pass_app
def status(app: AppContext, as_json: bool) -> None:
    """Show the database, schema, workspaces and their bound chats."""
    head = head_revision()
    current = current_revision(app.engine)
    if current != head:
        fail(f"schema is at {current or 'empty'}, code expects {head}: run `db upgrade` first")
    with connection(app.engine) as conn:
        items = [
            {**jsonable(w), "chats": workspace_store.chats_of(conn, w.id)}
            for w in workspace_store.list_all(conn)
        ]
    data = {"database": redacted_url(app.database_url), "schema": current, "workspaces": items}

    def human() -> None:
        click.echo(f"database {data['database']} schema {current}")
        click.echo(f"{len(items)} workspace(s)")
        for item in items:
            chats = ", ".join(item["chats"]) or "no chats"
            click.echo(f"  {item['id']}  {item['type']}  {item['status']}  {chats}")

    emit(as_json, data, human)


@cli.group(cls=GuardedGroup)
def workspace() -> None:
    """Workspaces and their Lark chat bindings."""


@workspace.command("create")
@click.option("--id", "workspace_id", required=True, help="Workspace id (letters, digits, . _ -).")
@click.option("--type", "type_", default="incident", show_default=True, help="Workspace type.")
@click.option(
    "--status",
    type=click.Choice(["firing", "recovered", "archived"]),
    default="firing",
    show_default=True,
)
@click.option("--created-at", help="ISO 8601 creation time (default: now).")
@click.option("--title", help="Human-readable title.")
@click.option(
    "--locale",
    type=click.Choice(LOCALE_CHOICES),
    help="Language of its summary, cards, replies, page and export (default: the locale setting).",
)
@click.option(
    "--time-zone",
    "time_zone",
    help="IANA time zone its times are shown in, e.g. Asia/Shanghai (default: the timeZone "
    "setting); stored times stay UTC.",
)
@json_option
@pass_app
def workspace_create(
    app: AppContext,
    workspace_id: str,
    type_: str,
    status: str,
    created_at: str | None,
    title: str | None,
    locale: str | None,
    time_zone: str | None,
    as_json: bool,
) -> None:
    """Create a workspace."""
    created = parse_iso8601(created_at, "--created-at")
    with transaction(app.engine) as conn:
        made = workspace_store.create(
            conn,
            workspace_id,
            type_=type_,
            status=status,
            created_at=created,
            title=title,
            locale=locale,
            time_zone=time_zone,
        )
    emit(as_json, made, lambda: click.echo(f"created workspace {made.id} ({made.status})"))


@workspace.command("bind-chat")
@workspace_option
@click.option("--chat", "chat_id", required=True, help="Lark chat id (oc_...).")
@json_option
@pass_app
def workspace_bind_chat(app: AppContext, workspace_id: str, chat_id: str, as_json: bool) -> None:
    """Bind a Lark chat to a workspace (a chat may be bound to several workspaces)."""
    with transaction(app.engine) as conn:
        new = workspace_store.bind_chat(conn, workspace_id, chat_id)
    data = {"workspace": workspace_id, "chat": chat_id, "created": new}
    verb = "bound" if new else "already bound:"
    emit(as_json, data, lambda: click.echo(f"{verb} chat {chat_id} to workspace {workspace_id}"))


def _curator_options(
    command: Callable[[AppContext, str, str, bool], None],
) -> Callable[..., None]:
    """The options of a command on one curator of one workspace, the same for adding and
    removing: `--workspace`, `--open-id`, `--json`."""
    with_app = json_option(pass_app(command))
    with_open_id = click.option(
        "--open-id", "open_id", required=True, help="Lark open_id of the reviewer."
    )(with_app)
    return workspace_option(with_open_id)


@workspace.command("add-curator")
@_curator_options
def workspace_add_curator(app: AppContext, workspace_id: str, open_id: str, as_json: bool) -> None:
    """Allow a Lark user to confirm or hide this workspace's drafts."""
    new = CuratorService(app.engine).add(workspace_id, open_id, actor=cli_actor())
    data = {"workspace": workspace_id, "open_id": open_id, "created": new}
    emit(as_json, data, lambda: click.echo(f"curator {open_id} on workspace {workspace_id}"))


@workspace.command("remove-curator")
@_curator_options
def workspace_remove_curator(
    app: AppContext, workspace_id: str, open_id: str, as_json: bool
) -> None:
    """Stop counting a Lark user's actions on this workspace's review cards."""
    removed = CuratorService(app.engine).remove(workspace_id, open_id, actor=cli_actor())
    if not removed:
        fail(f"{open_id} is not a curator of workspace {workspace_id}")
    data = {"workspace": workspace_id, "open_id": open_id, "removed": True}
    emit(as_json, data, lambda: click.echo(f"{open_id} is no longer a curator of {workspace_id}"))


@workspace.command("set-status")
@workspace_option
@click.option("--status", type=click.Choice(["firing", "recovered", "archived"]), required=True)
@json_option
@pass_app
def workspace_set_status(app: AppContext, workspace_id: str, status: str, as_json: bool) -> None:
    """Change a workspace's status (ingestion stops when it leaves `firing`)."""
    with transaction(app.engine) as conn:
        changed = workspace_store.set_status(conn, workspace_id, status, actor=cli_actor())
    emit(as_json, changed, lambda: click.echo(f"workspace {workspace_id} is {status}"))


@workspace.command("list")
@json_option
@pass_app
def workspace_list(app: AppContext, as_json: bool) -> None:
    """List workspaces."""
    with connection(app.engine) as conn:
        items = workspace_store.list_all(conn)

    def human() -> None:
        for item in items:
            click.echo(f"{item.id}  {item.type}  {item.status}  {item.created_at.isoformat()}")

    emit(as_json, {"workspaces": items}, human)


def main() -> None:
    cli()


def _register_subcommands() -> None:
    """Command groups that live in their own modules."""
    from timeline_pipeline.cli.config_commands import config_group
    from timeline_pipeline.cli.demo_commands import demo
    from timeline_pipeline.cli.lark_commands import lark_group
    from timeline_pipeline.cli.lifecycle_commands import lifecycle_group
    from timeline_pipeline.cli.maintenance_commands import maintenance_group
    from timeline_pipeline.cli.reconcile_commands import reconcile
    from timeline_pipeline.cli.report_commands import report_group
    from timeline_pipeline.cli.review_card_commands import interactions_alias, review_cards_group
    from timeline_pipeline.cli.serve_commands import serve
    from timeline_pipeline.cli.timeline_commands import timeline_group
    from timeline_pipeline.cli.token_commands import token_group
    from timeline_pipeline.cli.ui_commands import ui_group
    from timeline_pipeline.cli.workspace_language_commands import register

    register(workspace)

    cli.add_command(config_group)
    cli.add_command(demo)
    cli.add_command(review_cards_group)
    cli.add_command(interactions_alias)
    cli.add_command(lark_group)
    cli.add_command(lifecycle_group)
    cli.add_command(maintenance_group)
    cli.add_command(token_group)
    cli.add_command(reconcile)
    cli.add_command(report_group)
    cli.add_command(serve)
    cli.add_command(timeline_group)
    cli.add_command(ui_group)


_register_subcommands()
