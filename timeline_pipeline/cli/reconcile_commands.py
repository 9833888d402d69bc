"""`timeline-pipeline reconcile`: an operator's manual "Refresh from sources" (docs/design.md §1).

It reconciles the named workspace even when automatic scans no longer pick it up (recovered,
archived, older than the lookback), still bounded by its creation time and the ingestion
lookback. Counts go to stdout; any chat that failed (a Lark error, a chat the bot cannot read)
ends the command with one line on stderr and a non-zero exit, after the counts of the chats that
did succeed, so a partial run is never mistaken for a clean one.

lark-oapi takes seconds to import, so the reconciliation code is imported only when the command
runs: `timeline-pipeline --help` stays fast.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final

import click

from timeline_pipeline.cli.context import AppContext, pass_app
from timeline_pipeline.cli.output import emit, fail, json_option
from timeline_pipeline.db.migrate import current_revision, head_revision

LOG_LEVELS: Final = ("debug", "info", "warning", "error")


def _print_human(report: dict[str, Any]) -> None:
    click.echo(
        f"reconciled {report['chats']} chat(s): {report['pages']} page(s), "
        f"{report['messages']} message(s), {report['inserted']} inserted, "
        f"{report['updated']} updated, {report['duplicate']} duplicate"
    )
    for chat in report["per_chat"]:
        status = "ok" if chat["failure"] is None else f"FAILED ({chat['failure']})"
        lag = chat["lag_seconds"]
        click.echo(
            f"  {chat['workspace_id']} {chat['chat_id']} {chat['kind'] or 'nothing to do'} "
            f"{chat['range_start'] or '-'} .. {chat['range_end'] or '-'}: "
            f"{chat['pages']} page(s), {chat['messages']} message(s), "
            f"lag {'-' if lag is None else f'{lag:.0f}s'}, {status}"
        )
    if report["skipped"]:
        skipped = ", ".join(f"{reason}={count}" for reason, count in report["skipped"].items())
        click.echo(f"  skipped: {skipped}")


@click.command("reconcile")
@click.option("--workspace", "workspace_id", required=True, help="Workspace to refresh.")
@click.option("--chat", "chat_id", default=None, help="Only this bound chat (default: all).")
@click.option(
    "--refresh",
    is_flag=True,
    help="Re-read the evidence refresh lookback too, to pick up edits and recalls.",
)
@json_option
@click.option(
    "--log-level",
    default="error",
    show_default=True,
    type=click.Choice(LOG_LEVELS),
    help="Structured logs (JSON lines on stderr, ids only) at this level and above.",
)
@pass_app
def reconcile(
    app: AppContext,
    workspace_id: str,
    chat_id: str | None,
    refresh: bool,
    as_json: bool,
    log_level: str,
) -> None:
    """Reconcile a workspace's Lark chats from history now (manual refresh).

    Reads LARK_APP_ID, LARK_APP_SECRET and LARK_BASE_URL; needs the timeline `enabled` flag
    (the automatic `reconciliationEnabled` flag is not required for a manual refresh).
    """
    from timeline_pipeline.db.engine import connection
    from timeline_pipeline.ingest.eligibility import MANUAL
    from timeline_pipeline.lark.client_factory import LarkNotConfigured, build_client
    from timeline_pipeline.observability.logs import configure_logging
    from timeline_pipeline.reconcile.planning import Mode
    from timeline_pipeline.reconcile.runner import Reconciler
    from timeline_pipeline.reconcile.targets import (
        ReconcileRefused,
        manual_refusal,
        manual_targets,
    )

    # Also takes over the Lark SDK's own stdout handler, which would corrupt --json output.
    configure_logging(json=True, level=log_level.upper())
    settings = app.settings
    refusal = manual_refusal(settings.timeline)
    if refusal is not None:
        fail(refusal)
    head = head_revision()
    current = current_revision(app.engine)
    if current != head:
        fail(f"schema is at {current or 'empty'}, code expects {head}: run `db upgrade` first")
    now = datetime.now(UTC)
    try:
        with connection(app.engine) as conn:
            targets = manual_targets(conn, settings.timeline, now, workspace_id, chat_id)
        client = build_client(settings.timeline, settings.runtime)
    except (ReconcileRefused, LarkNotConfigured) as exc:
        fail(str(exc))
    reconciler = Reconciler(
        app.engine, client, settings.timeline, app_id=settings.runtime.lark_app_id
    )
    report = reconciler.run(
        targets, mode=Mode.REFRESH if refresh else Mode.INCREMENTAL, scope=MANUAL, now=now
    )
    data = report.as_dict()
    emit(as_json, data, lambda: _print_human(data))
    if report.failures:
        fail(report.failure_summary())
