"""`timeline-pipeline timeline ...`: read, export and curate a workspace's timeline.

    timeline show W [--status S ...] [--json]          a readable table, then the summary
    timeline export W --format markdown [--output F]   a postmortem document
    timeline confirm|hide|restore W ENTRY [--revision N]
    timeline edit W ENTRY [--title T] [--detail D] [--category C] [--occurred-at ISO]
    timeline add W --title T --category C --occurred-at ISO [--detail D] [--evidence ID ...]
    timeline summary W (--content TEXT | --file PATH) [--revision N]

The commands go through the same curation service as the HTTP API, so a change made here is
protected from automation in exactly the same way. `--revision` is optional at the terminal:
without it the operator acts on the current state; with it a concurrent change makes the
command fail (exit 1) instead of silently winning.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from timeline_pipeline.cli.context import AppContext, pass_app
from timeline_pipeline.cli.output import (
    RefusalGroup,
    emit,
    fail,
    json_option,
    jsonable,
    parse_iso8601,
)
from timeline_pipeline.curation.export import render_markdown
from timeline_pipeline.curation.presentation import presentation_of
from timeline_pipeline.curation.rules import (
    CATEGORIES,
    SUMMARY_MAX_CHARS,
    Action,
)
from timeline_pipeline.curation.service import CurationService, NewEntry
from timeline_pipeline.curation.timeline import EntryView, SummaryView, TimelineView
from timeline_pipeline.domain.entries import (
    ENTRY_STATUSES,
    VISIBLE_STATUSES,
    EntrySource,
    SummarySource,
)
from timeline_pipeline.maintenance.endpoint import cli_actor

__all__ = ["timeline_group"]

MIN_TITLE_WIDTH = 20


@click.group("timeline", cls=RefusalGroup)
def timeline_group() -> None:
    """Show, export and curate a workspace's timeline."""


status_option = click.option(
    "--status",
    "statuses",
    multiple=True,
    type=click.Choice([status.value for status in ENTRY_STATUSES]),
    help="Statuses to include (repeatable); default draft and confirmed.",
)
revision_option = click.option(
    "--revision",
    type=click.IntRange(1),
    help="Fail unless the entry is still at this revision (as `timeline show` printed it).",
)


# --- reading -------------------------------------------------------------------------------------


def _source_mark(entry: EntryView) -> str:
    if entry.source == EntrySource.HUMAN:
        return EntrySource.HUMAN.value
    return f"{entry.source}*" if entry.human_edited else entry.source


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: max(1, width - 1)] + "…"


def render_table(view: TimelineView, width: int) -> list[str]:
    """The timeline as fixed columns: id, time, status, category, source, evidence, title."""
    header = ("ID", "TIME (UTC)", "STATUS", "CATEGORY", "SOURCE", "REV", "EV", "TITLE")
    rows = [
        (
            str(e.id),
            e.occurred_at.strftime("%Y-%m-%d %H:%M"),
            e.status,
            e.category,
            _source_mark(e),
            str(e.revision),
            str(len(e.evidence)),
            e.title,
        )
        for e in view.entries
    ]
    widths = [max(len(header[i]), *(len(r[i]) for r in rows)) for i in range(len(header) - 1)]
    fixed = sum(widths) + 2 * len(widths)
    title_width = max(MIN_TITLE_WIDTH, width - fixed)

    def line(cells: Sequence[str]) -> str:
        parts = [cell.ljust(widths[i]) for i, cell in enumerate(cells[:-1])]
        return "  ".join([*parts, _clip(cells[-1], title_width)]).rstrip()

    return [line(header), *(line(r) for r in rows)]


def _summary_lines(summary: SummaryView | None) -> list[str]:
    if summary is None:
        return ["Summary: none yet."]
    origin = "human" if summary.source == SummarySource.HUMAN else "generated"
    return [f"Summary ({origin}, revision {summary.revision}):", *summary.content.splitlines()]


def _timeline_json(view: TimelineView) -> dict[str, Any]:
    return {
        "workspace_id": view.workspace_id,
        "statuses": list(view.statuses),
        "entries": [
            {
                **{k: v for k, v in jsonable(e).items() if k != "evidence"},
                "evidence_ids": e.evidence_ids,
                "links": jsonable(list(e.evidence)),
            }
            for e in view.entries
        ],
        "summary": jsonable(view.summary),
        "truncated": view.next_after is not None,
    }


@timeline_group.command("show")
@click.argument("workspace_id")
@status_option
@json_option
@pass_app
def timeline_show(
    app: AppContext, workspace_id: str, statuses: tuple[str, ...], as_json: bool
) -> None:
    """Print the timeline of WORKSPACE_ID as a table, followed by the summary.

    SOURCE is ai, rule or human; a `*` marks an entry a curator edited. REV is the revision
    to pass to --revision; EV counts the supporting messages (see --json for their links).
    """
    view = CurationService(app.engine).full_timeline(
        workspace_id, statuses=statuses or VISIBLE_STATUSES
    )

    def human() -> None:
        if view.entries:
            width = shutil.get_terminal_size((120, 24)).columns
            for line in render_table(view, width):
                click.echo(line)
        else:
            click.echo(f"no {'/'.join(view.statuses)} entries in workspace {workspace_id}")
        click.echo("")
        for line in _summary_lines(view.summary):
            click.echo(line)

    emit(as_json, _timeline_json(view), human)


@timeline_group.command("export")
@click.argument("workspace_id")
@click.option(
    "--format",
    "format_",
    type=click.Choice(["markdown"]),
    default="markdown",
    show_default=True,
    help="Document format.",
)
@click.option(
    "--output",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Write to this file instead of stdout.",
)
@status_option
@pass_app
def timeline_export(
    app: AppContext,
    workspace_id: str,
    format_: str,
    output: Path | None,
    statuses: tuple[str, ...],
) -> None:
    """Export WORKSPACE_ID's timeline as a postmortem document: the summary, then every entry
    in time order with its category, status and links to the supporting Lark messages."""
    view = CurationService(app.engine).full_timeline(
        workspace_id, statuses=statuses or VISIBLE_STATUSES
    )
    with app.engine.connect() as conn:
        presentation = presentation_of(conn, workspace_id, app.settings.timeline)
    document = render_markdown(view, generated_at=datetime.now(UTC), presentation=presentation)
    if output is None:
        click.echo(document, nl=False)
        return
    try:
        output.write_text(document, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {output}: {exc.strerror or exc}")
    click.echo(f"wrote {len(view.entries)} entries to {output}", err=True)


# --- curating ------------------------------------------------------------------------------------


def _print_entry(as_json: bool, verb: str, entry: EntryView) -> None:
    data = {
        **{k: v for k, v in jsonable(entry).items() if k != "evidence"},
        "evidence_ids": entry.evidence_ids,
        "links": jsonable(list(entry.evidence)),
    }
    emit(
        as_json,
        data,
        lambda: click.echo(
            f"{verb} entry {entry.id} ({entry.status}, revision {entry.revision}): {entry.title}"
        ),
    )


def _status_command(action: Action, verb: str, help_text: str) -> click.Command:
    @click.argument("workspace_id")
    @click.argument("entry_id", type=click.IntRange(1, 2**63 - 1))
    @revision_option
    @json_option
    @pass_app
    def command(
        app: AppContext, workspace_id: str, entry_id: int, revision: int | None, as_json: bool
    ) -> None:
        entry = CurationService(
            app.engine, follow_up_tasks=app.settings.timeline.follow_up_tasks_enabled
        ).transition(workspace_id, entry_id, action, expected_revision=revision, actor=cli_actor())
        _print_entry(as_json, verb, entry)

    command.__doc__ = help_text
    return click.command(action.value)(command)


timeline_group.add_command(
    _status_command(
        Action.CONFIRM, "confirmed", "Confirm a draft entry: synthesis keeps its text from now on."
    )
)
timeline_group.add_command(
    _status_command(
        Action.HIDE,
        "hid",
        "Hide an entry: kept for traceability, left out of the timeline and the summary.",
    )
)
timeline_group.add_command(
    _status_command(
        Action.RESTORE, "restored", "Bring a hidden entry back (as a draft, or confirmed if human)."
    )
)


@timeline_group.command("edit")
@click.argument("workspace_id")
@click.argument("entry_id", type=click.IntRange(1, 2**63 - 1))
@click.option("--title", help="New title (one line).")
@click.option("--detail", help='New detail; "" removes it.')
@click.option("--category", type=click.Choice(CATEGORIES))
@click.option("--occurred-at", help="New time, ISO 8601 with a timezone.")
@revision_option
@json_option
@pass_app
def timeline_edit(
    app: AppContext,
    workspace_id: str,
    entry_id: int,
    title: str | None,
    detail: str | None,
    category: str | None,
    occurred_at: str | None,
    revision: int | None,
    as_json: bool,
) -> None:
    """Rewrite an entry; it becomes human-edited and synthesis never rewrites it again."""
    changes: dict[str, Any] = {}
    if title is not None:
        changes["title"] = title
    if detail is not None:
        changes["detail"] = detail or None
    if category is not None:
        changes["category"] = category
    if occurred_at is not None:
        changes["occurred_at"] = parse_iso8601(occurred_at, "--occurred-at")
    if not changes:
        raise click.UsageError("give at least one of --title, --detail, --category, --occurred-at")
    entry = CurationService(app.engine).edit(
        workspace_id, entry_id, changes, expected_revision=revision, actor=cli_actor()
    )
    _print_entry(as_json, "edited", entry)


@timeline_group.command("add")
@click.argument("workspace_id")
@click.option("--title", required=True, help="What happened (one line).")
@click.option("--category", required=True, type=click.Choice(CATEGORIES))
@click.option("--occurred-at", required=True, help="When, ISO 8601 with a timezone.")
@click.option("--detail", help="Supporting explanation.")
@click.option(
    "--evidence",
    "evidence_ids",
    multiple=True,
    type=click.IntRange(1, 2**63 - 1),
    help="Id of a supporting evidence row (repeatable).",
)
@json_option
@pass_app
def timeline_add(
    app: AppContext,
    workspace_id: str,
    title: str,
    category: str,
    occurred_at: str,
    detail: str | None,
    evidence_ids: tuple[int, ...],
    as_json: bool,
) -> None:
    """Add a curator's own entry (source human, confirmed)."""
    moment = parse_iso8601(occurred_at, "--occurred-at")
    assert moment is not None
    entry = CurationService(
        app.engine, follow_up_tasks=app.settings.timeline.follow_up_tasks_enabled
    ).add(
        workspace_id,
        NewEntry(
            occurred_at=moment,
            title=title,
            category=category,
            detail=detail,
            evidence_ids=evidence_ids,
        ),
        actor=cli_actor(),
    )
    _print_entry(as_json, "added", entry)


@timeline_group.command("summary")
@click.argument("workspace_id")
@click.option("--content", help="The summary text.")
@click.option(
    "--file",
    "file_",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Read the summary text from this file ('-' is not supported).",
)
@click.option(
    "--revision",
    type=click.IntRange(1),
    help="Fail unless the summary is still at this revision.",
)
@json_option
@pass_app
def timeline_summary(
    app: AppContext,
    workspace_id: str,
    content: str | None,
    file_: Path | None,
    revision: int | None,
    as_json: bool,
) -> None:
    """Write the workspace summary by hand; it is never regenerated automatically afterwards."""
    if (content is None) == (file_ is None):
        raise click.UsageError("give exactly one of --content or --file")
    if file_ is not None:
        try:
            raw = file_.read_bytes()
        except OSError as exc:
            fail(f"cannot read {file_}: {exc.strerror or exc}")
        if len(raw) > SUMMARY_MAX_CHARS * 4:
            fail(f"{file_} is too large for a summary ({SUMMARY_MAX_CHARS} characters at most)")
        try:
            content = raw.decode("utf-8")
        except UnicodeDecodeError:
            fail(f"{file_} is not UTF-8 text")
    assert content is not None
    summary = CurationService(app.engine).write_summary(
        workspace_id,
        content,
        expected_revision=revision,
        check=revision is not None,
        actor=cli_actor(),
    )
    emit(
        as_json,
        summary,
        lambda: click.echo(f"summary of {workspace_id} written (revision {summary.revision})"),
    )
