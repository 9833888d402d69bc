"""`timeline-pipeline report ...`: build, read and correct a workspace's incident report
(docs/report.md).

    report build --workspace W [--json]                      a new revision when it changed
    report show W [--format markdown|json] [--revision N]    the stored report
    report set-milestone --workspace W --milestone M --at ISO [--json]
    report clear-milestone --workspace W --milestone M [--json]

`report build` is what the Dagster asset does for one workspace: the revision, then, when
`reportLarkDocEnabled`, its Lark document (planned, then written as far as Lark lets it; a
failed write is taken up again from the recorded step by the next build or the report sensor).
`report show --format json` prints exactly what `GET /api/workspaces/{id}/report` answers (one
presenter, `api/presenters.report_out`). Changes are recorded as `cli:<user>`.

Exit codes as every command's (docs/http.md): 1 for bad input (an unknown workspace,
no report yet, a time the report refuses: after `resolved`, in the future, outside 2000..2100)
and for a Lark error (the revision stays built); 2 for usage (an unknown milestone, a time that
is not ISO 8601 with its offset). One line on stderr each, never a traceback, nothing written.
lark-oapi takes seconds to import, so it is imported only when a document is written.
"""

from __future__ import annotations

import json
from typing import Any

import click

from timeline_pipeline.cli.context import AppContext, pass_app
from timeline_pipeline.cli.output import (
    RefusalGroup,
    emit,
    fail,
    json_option,
    parse_iso8601,
    workspace_option,
)
from timeline_pipeline.maintenance.endpoint import cli_actor
from timeline_pipeline.report.milestones import Milestone, MilestoneName, Milestones
from timeline_pipeline.report.service import ReportService, Trigger
from timeline_pipeline.report.views import clear_milestone, read_report, set_milestone

__all__ = ["report_group"]

MILESTONE_CHOICES = [name.value for name in MilestoneName]


@click.group("report", cls=RefusalGroup)
def report_group() -> None:
    """Build, show and correct a workspace's incident report."""


def _service(app: AppContext) -> ReportService:
    return ReportService(app.engine, app.settings.timeline)


# --- build -----------------------------------------------------------------------------------


def _publish(app: AppContext, workspace_id: str, revision: int) -> str | None:
    """Write `revision` into the workspace's Lark document; its link. A Lark error ends the
    command (exit 1) after the revision was recorded: the document's plan keeps its place."""
    from timeline_pipeline.lark.client import LarkApiError
    from timeline_pipeline.lark.client_factory import LarkNotConfigured, build_client
    from timeline_pipeline.observability.logs import configure_logging
    from timeline_pipeline.report.publisher import DocumentPublisher

    # Also takes over the Lark SDK's own stdout handler, which would corrupt --json output.
    configure_logging(json=True, level="ERROR")
    settings = app.settings
    try:
        client = build_client(settings.timeline, settings.runtime)
        publisher = DocumentPublisher(app.engine, settings.timeline, client)
        publisher.plan(workspace_id, revision)
        outcome = publisher.publish(workspace_id)
    except LarkNotConfigured as exc:
        fail(f"revision {revision} is built; its Lark document is not: {exc}")
    except LarkApiError as exc:
        fail(
            f"revision {revision} is built; its Lark document is not written yet "
            f"({exc}); `report build` or the report sensor tries again"
        )
    return outcome.document_url


@report_group.command("build")
@click.option("--workspace", "workspace_id", required=True, help="The workspace to report on.")
@json_option
@pass_app
def report_build(app: AppContext, workspace_id: str, as_json: bool) -> None:
    """Build WORKSPACE's report now: a new revision when what it shows changed since the last
    one (the previous revisions are kept), and, with reportLarkDocEnabled, its Lark document.

    A build someone asks for runs whatever reportEnabled says (that flag only starts the
    automatic builds)."""
    built = _service(app).build(workspace_id, actor=cli_actor(), trigger=Trigger.MANUAL)
    revision = built.report.revision
    document_url: str | None = None
    if app.settings.timeline.report_lark_doc_enabled:
        document_url = _publish(app, workspace_id, revision)
    else:
        document_url = read_report(_service(app), workspace_id, revision=revision).document_url
    data = {
        "workspace_id": workspace_id,
        "revision": revision,
        "created": built.created,
        "document_url": document_url,
    }

    def human() -> None:
        state = "new" if built.created else "unchanged, already built"
        click.echo(f"report of {workspace_id}: revision {revision} ({state})")
        click.echo(f"document: {document_url or 'none'}")

    emit(as_json, data, human)


# --- show ------------------------------------------------------------------------------------


@report_group.command("show")
@click.argument("workspace_id")
@click.option(
    "--format",
    "format_",
    type=click.Choice(["markdown", "json"]),
    default="markdown",
    show_default=True,
    help="markdown: the document as written (the workspace's language and zone); json: what "
    "the API answers (UTC).",
)
@click.option(
    "--revision", type=click.IntRange(1, 2**31 - 1), help="A kept revision; default: the newest."
)
@pass_app
def report_show(app: AppContext, workspace_id: str, format_: str, revision: int | None) -> None:
    """Print WORKSPACE_ID's report (a withdrawn revision, whose message was recalled, says so
    and shows no text)."""
    read = read_report(_service(app), workspace_id, revision=revision)
    if format_ == "json":
        from timeline_pipeline.api.presenters import report_out

        click.echo(json.dumps(report_out(read).model_dump(mode="json"), sort_keys=True))
        return
    report = read.report
    if report.withdrawn:
        click.echo(
            f"revision {report.revision} of {workspace_id}'s report was withdrawn: a message it "
            "quoted was recalled; the next build leaves it out"
        )
        return
    click.echo(report.markdown, nl=not report.markdown.endswith("\n"))


# --- milestones ------------------------------------------------------------------------------


milestone_option = click.option(
    "--milestone",
    "name",
    required=True,
    type=click.Choice(MILESTONE_CHOICES),
    help="Which milestone.",
)


def _milestone_data(
    workspace_id: str, changed: Milestone, milestones: Milestones
) -> dict[str, Any]:
    from timeline_pipeline.api.presenters import milestones_out

    return {
        "workspace_id": workspace_id,
        "milestone": changed.name.value,
        "milestones": milestones_out(milestones).model_dump(mode="json"),
    }


def _print_milestone(as_json: bool, workspace_id: str, name: str, milestones: Milestones) -> None:
    changed = milestones.get(name)
    data = _milestone_data(workspace_id, changed, milestones)

    def human() -> None:
        at = changed.at.isoformat() if changed.at is not None else "not known yet"
        origin = (
            f"set by {changed.overridden_by}"
            if changed.overridden_by is not None
            else "from the timeline"
        )
        click.echo(f"{name} of {workspace_id}: {at} ({origin})")
        click.echo(
            "the report shows it from its next build "
            f"(`timeline-pipeline report build --workspace {workspace_id}`)"
        )

    emit(as_json, data, human)


@report_group.command("set-milestone")
@workspace_option
@milestone_option
@click.option(
    "--at", "at", required=True, help="The time, ISO 8601 with its offset (2026-11-29T10:00Z)."
)
@json_option
@pass_app
def report_set_milestone(
    app: AppContext, workspace_id: str, name: str, at: str, as_json: bool
) -> None:
    """Set a milestone's time; the time the timeline gives is kept beside it, with who set it.

    Refused, with nothing written: a time without its offset (exit 2), one in the future or
    one that would contradict the other milestones (after `resolved`, `resolved` before
    `started`) (exit 1)."""
    moment = parse_iso8601(at, "--at")
    assert moment is not None
    milestones = set_milestone(
        _service(app), workspace_id, name, moment, actor=cli_actor(), field="--at"
    )
    _print_milestone(as_json, workspace_id, name, milestones)


@report_group.command("clear-milestone")
@workspace_option
@milestone_option
@json_option
@pass_app
def report_clear_milestone(app: AppContext, workspace_id: str, name: str, as_json: bool) -> None:
    """Clear a curator's time: the milestone is the timeline's again."""
    milestones = clear_milestone(_service(app), workspace_id, name, actor=cli_actor())
    _print_milestone(as_json, workspace_id, name, milestones)
