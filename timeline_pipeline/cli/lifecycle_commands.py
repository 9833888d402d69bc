"""`timeline-pipeline lifecycle ...`: the registry check, dry-run, purge runs and legal holds
(docs/lifecycle.md)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypedDict

import click

from timeline_pipeline.cli.context import AppContext, pass_app
from timeline_pipeline.cli.output import (
    emit,
    json_option,
    jsonable,
    parse_iso8601,
    workspace_option,
)
from timeline_pipeline.db.engine import connection, transaction
from timeline_pipeline.domain.lifecycle import MAX_BATCH_LIMIT
from timeline_pipeline.lifecycle.archive import LocalDirectoryArchive, verify_manifest
from timeline_pipeline.lifecycle.dry_run import dry_run, read_only
from timeline_pipeline.lifecycle.engine import PurgeEngine
from timeline_pipeline.lifecycle.holds import create_hold, release_hold
from timeline_pipeline.lifecycle.live_check import registry_check
from timeline_pipeline.lifecycle.registry import (
    Registry,
    RegistryInvalid,
    configured_defaults,
    load_registry,
)
from timeline_pipeline.maintenance.endpoint import cli_actor
from timeline_pipeline.observability.logs import configure_logging
from timeline_pipeline.store import legal_holds


def _registry(app: AppContext) -> Registry:
    """The registry with the defaults the settings give (`interactionRetention`)."""
    return load_registry(default_days=configured_defaults(app.settings.timeline))


class _ScopeArgs(TypedDict):
    workspace_id: str | None
    descriptor_key: str | None
    as_of: datetime | None
    retention_days_override: int | None


@dataclass(frozen=True, slots=True)
class _Scope:
    """What a dry-run or a run covers, as given; `args()` reads `--as-of` when it is called."""

    workspace_id: str | None
    descriptor_key: str | None
    as_of: str | None
    override: int | None

    def args(self) -> _ScopeArgs:
        return _ScopeArgs(
            workspace_id=self.workspace_id,
            descriptor_key=self.descriptor_key,
            as_of=parse_iso8601(self.as_of, "--as-of"),
            retention_days_override=self.override,
        )


def scope_options(command: Callable[..., None]) -> Callable[..., None]:
    """The scope options `dry-run` and `run` share, handed to the command as `scope`."""

    @functools.wraps(command)
    def run(
        *,
        workspace_id: str | None,
        descriptor_key: str | None,
        as_of: str | None,
        override: int | None,
        **rest: Any,
    ) -> None:
        command(scope=_Scope(workspace_id, descriptor_key, as_of, override), **rest)

    wrapped: Callable[..., None] = run
    for option in reversed(
        (
            click.option("--workspace", "workspace_id", help="Only this workspace."),
            click.option(
                "--descriptor",
                "descriptor_key",
                help="Only this descriptor (`<owner>.<table>`).",
            ),
            click.option(
                "--as-of",
                "as_of",
                help="Evaluate retention at this ISO 8601 instant (default: now).",
            ),
            click.option(
                "--retention-days-override",
                "override",
                type=int,
                help="Retention days instead of each descriptor's default (within its min/max).",
            ),
        )
    ):
        wrapped = option(wrapped)
    return wrapped


@click.group("lifecycle")
def lifecycle_group() -> None:
    """Retention registry, legal holds, dry-run and bounded archive/purge."""


@lifecycle_group.command("registry-check")
@json_option
@pass_app
def registry_check_command(app: AppContext, as_json: bool) -> None:
    """Validate every descriptor, against the live database too; exit 1 on any error."""
    with connection(app.engine) as conn:
        checked, errors = registry_check(conn)
    data = {"descriptors": checked, "errors": [str(e) for e in errors], "valid": not errors}

    def human() -> None:
        for error in errors:
            click.echo(f"  {error}")
        if not errors:
            click.echo(f"lifecycle registry valid: {checked} descriptors")

    emit(as_json, data, human)
    if errors:
        raise RegistryInvalid(errors)


@lifecycle_group.command("dry-run")
@scope_options
@json_option
@pass_app
def dry_run_command(app: AppContext, scope: _Scope, as_json: bool) -> None:
    """Count rows eligible, held and purgeable per descriptor and workspace; changes nothing."""
    args = scope.args()
    registry = _registry(app)
    with read_only(app.engine) as conn:
        report = dry_run(conn, registry, **args)

    def human() -> None:
        click.echo(f"as of {report.as_of}")
        for d in report.descriptors:
            click.echo(
                f"{d.descriptor}  {d.retention_days}d  eligible {d.eligible}  held {d.held}  "
                f"purgeable {d.purgeable}  blocked {d.blocked}"
            )
            for w in d.workspaces:
                if w.eligible:
                    holds = f"  holds {','.join(w.holds)}" if w.holds else ""
                    click.echo(
                        f"  {w.workspace or '-'}  eligible {w.eligible}  held {w.held}  "
                        f"purgeable {w.purgeable}  oldest {w.oldest_cursor}{holds}"
                    )

    emit(as_json, report.as_dict(), human)


@lifecycle_group.command("run")
@scope_options
@click.option(
    "--archive-dir",
    type=click.Path(path_type=Path),
    help="Archive purged rows of archivable tables here first (gzip JSON Lines + manifest).",
)
@click.option(
    "--batch-limit",
    type=click.IntRange(1, MAX_BATCH_LIMIT),
    help="Rows per batch, at most each descriptor's own limit.",
)
@click.option(
    "--batch-delay-ms",
    type=click.IntRange(0, 60_000),
    default=0,
    show_default=True,
    help="Pause between batches, to spare a busy database.",
)
@json_option
@click.option(
    "--log-level",
    default="error",
    show_default=True,
    type=click.Choice(["debug", "info", "warning", "error"]),
    help="Structured logs (JSON lines on stderr, ids and counts only) at this level and above.",
)
@pass_app
def run_command(
    app: AppContext,
    scope: _Scope,
    archive_dir: Path | None,
    batch_limit: int | None,
    batch_delay_ms: int,
    as_json: bool,
    log_level: str,
) -> None:
    """Archive (with --archive-dir) and purge aged-out rows in bounded batches; holds win."""
    configure_logging(json=True, level=log_level.upper())
    args = scope.args()
    engine = PurgeEngine(
        app.engine,
        _registry(app),
        archive=LocalDirectoryArchive(archive_dir) if archive_dir is not None else None,
        batch_limit=batch_limit,
        batch_delay_ms=batch_delay_ms,
        actor=cli_actor(),
    )
    outcome = engine.run(**args)

    def human() -> None:
        click.echo(f"run {outcome.run_id} ({outcome.run_key}) {outcome.status}")
        for d in outcome.descriptors:
            if d.skipped:
                click.echo(f"  {d.descriptor}  skipped ({d.skipped})")
                continue
            click.echo(
                f"  {d.descriptor}  purged {d.purged}  archived {d.archived}  held {d.held}  "
                f"redacted {d.redacted}  batches {d.batches}"
            )
        if outcome.manifest:
            click.echo(f"manifest {outcome.manifest}")

    emit(as_json, outcome.as_dict(), human)


@lifecycle_group.command("verify-archive")
@click.option("--manifest", "manifest", required=True, type=click.Path(path_type=Path))
@json_option
def verify_archive_command(manifest: Path, as_json: bool) -> None:
    """Check every part of an archive manifest (sha256, row counts); exit 1 if any fails."""
    checked = verify_manifest(manifest)
    data = {"manifest": str(manifest), "rows": checked.total_rows, "verified": True}
    emit(
        as_json,
        data,
        lambda: click.echo(f"manifest {manifest} verified: {checked.total_rows} rows"),
    )


@lifecycle_group.group("hold")
def hold_group() -> None:
    """Legal holds: they override every retention until explicitly released."""


@hold_group.command("create")
@workspace_option
@click.option("--descriptor", "descriptor_key", help="Hold one descriptor (and its chain) only.")
@click.option("--reason", required=True, help="Why (at least 10 characters).")
@click.option("--idempotency-key", "idempotency_key", required=True)
@click.option("--review-at", "review_at", help="ISO 8601 review date (never releases the hold).")
@json_option
@pass_app
def hold_create(
    app: AppContext,
    workspace_id: str,
    descriptor_key: str | None,
    reason: str,
    idempotency_key: str,
    review_at: str | None,
    as_json: bool,
) -> None:
    """Place a legal hold on a workspace (all tables, or one descriptor's chain)."""
    review = parse_iso8601(review_at, "--review-at")
    registry = load_registry()
    with transaction(app.engine) as conn:
        result = create_hold(
            conn,
            registry,
            workspace_id=workspace_id,
            descriptor_key=descriptor_key,
            reason=reason,
            idempotency_key=idempotency_key,
            actor=cli_actor(),
            review_at=review,
        )
    hold = result.hold
    data = {**jsonable(hold), "created": result.changed}
    verb = "created" if result.changed else "already created:"
    emit(as_json, data, lambda: click.echo(f"{verb} hold {hold.id} on workspace {workspace_id}"))


@hold_group.command("release")
@click.option("--hold", "hold_id", required=True)
@click.option("--reason", help="Why (at least 10 characters).")
@click.option("--idempotency-key", "idempotency_key")
@json_option
@pass_app
def hold_release(
    app: AppContext,
    hold_id: str,
    reason: str | None,
    idempotency_key: str | None,
    as_json: bool,
) -> None:
    """Release a legal hold (the only way a hold ends)."""
    with transaction(app.engine) as conn:
        result = release_hold(
            conn,
            hold_id=hold_id,
            reason=reason,
            idempotency_key=idempotency_key,
            actor=cli_actor(),
        )
    data = {**jsonable(result.hold), "released": result.changed}
    verb = "released" if result.changed else "already released:"
    emit(as_json, data, lambda: click.echo(f"{verb} hold {hold_id}"))


@hold_group.command("list")
@click.option("--active", "active_only", is_flag=True, help="Only active holds.")
@json_option
@pass_app
def hold_list(app: AppContext, active_only: bool, as_json: bool) -> None:
    """List legal holds, oldest first."""
    with connection(app.engine) as conn:
        holds = legal_holds.list_all(conn, active_only=active_only)

    def human() -> None:
        for h in holds:
            target = h.descriptor_key or "all tables"
            released = f"  released by {h.released_by}" if h.released_by else ""
            click.echo(
                f"{h.id}  {h.status}  {h.workspace_id}  {target}  {h.created_at.isoformat()}"
                f"  by {h.created_by}{released}"
            )

    emit(as_json, {"holds": holds}, human)
