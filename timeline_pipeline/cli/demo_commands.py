"""`timeline-pipeline demo [--chat en|zh] [--json]`: the main job, end to end, on the embedded
default; `--chat zh` on the bundled Chinese chat, printed in Chinese (docs/i18n.md)."""

from __future__ import annotations

import json
import logging
import time
from datetime import UTC, datetime
from typing import Any

import click

from timeline_pipeline.cli.output import jsonable
from timeline_pipeline.cli.ui_commands import LINK_TTL, sign_in_url
from timeline_pipeline.curation.presentation import presentation_of
from timeline_pipeline.db.engine import connection, transaction
from timeline_pipeline.demo.printout import human_lines
from timeline_pipeline.demo.view import demo_report, demo_timeline
from timeline_pipeline.demo_data import DemoChat
from timeline_pipeline.i18n.locales import Presentation
from timeline_pipeline.observability.logs import configure_logging
from timeline_pipeline.settings import load_timeline_settings
from timeline_pipeline.store import ui_sessions


@click.command("demo")
@click.option(
    "--chat",
    type=click.Choice([chat.value for chat in DemoChat]),
    default=DemoChat.EN.value,
    show_default=True,
    help="The bundled chat: en, or zh (a Chinese chat on a zh-CN workspace in Asia/Shanghai, "
    "printed in Chinese).",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON object: entries, summary and the incident report.",
)
@click.option(
    "--dagster-home",
    help="Dagster instance directory (default: $DAGSTER_HOME or .timeline/dagster).",
)
@click.option(
    "--serve",
    "keep_serving",
    is_flag=True,
    help="Keep `serve` running afterwards, so the printed sign-in link opens the page.",
)
@click.option(
    "--port",
    default=8080,
    show_default=True,
    type=click.IntRange(1, 65535),
    help="The port of the sign-in link (and of `serve` with --serve).",
)
def demo(chat: str, as_json: bool, dagster_home: str | None, keep_serving: bool, port: int) -> None:
    """Run the whole pipeline on a bundled incident chat and print the timeline.

    Starts the local Lark with a realistic incident chat, pushes signed events to a real receiver
    (some dropped, some duplicated), lets reconciliation recover the drops, runs the window
    sensor and synthesis through a real Dagster instance, and prints the resulting timeline.
    Then the incident closes: the workspace is set recovered, its report is built, written into
    a Lark document in the local Lark and linked in the chat, and printed in short with the
    document's link (docs/report.md).
    Uses TIMELINE_DATABASE_URL (SQLite by default) and Claude when ANTHROPIC_API_KEY is set.
    Ends with a one-time sign-in link to the demo's timeline page (docs/timeline-page.md);
    with --serve, `serve` keeps running on 127.0.0.1 until Ctrl-C.
    """
    # Imported here: the demo brings the whole product (Dagster, the HTTP app, Lark's SDK), and
    # every other command would pay for it at start-up.
    from timeline_pipeline.demo.run import DEMO_FLAGS, run_demo, serve_demo

    configure_logging(level=logging.WARNING)  # progress lines say what happens; logs: problems
    started = time.monotonic()

    def progress(line: str) -> None:
        click.echo(f"[{time.monotonic() - started:5.1f}s] {line}", err=True)

    result, engine = run_demo(progress=progress, dagster_home=dagster_home, chat=DemoChat(chat))
    base_url = f"http://127.0.0.1:{port}"
    try:
        with connection(engine) as conn:
            view = demo_timeline(conn, result.workspace_id)
            report = demo_report(conn, result.workspace_id)
            presentation = presentation_of(
                conn, result.workspace_id, load_timeline_settings(**DEMO_FLAGS)
            )
        with transaction(engine) as conn:
            link = ui_sessions.create_link(
                conn, result.workspace_id, now=datetime.now(UTC), ttl=LINK_TTL
            )
        url = sign_in_url(base_url, link.token)
        if report is not None:
            report["reply"] = result.report.reply
        if as_json:
            payload: dict[str, Any] = {
                "workspace": result.workspace_id,
                "entries": view["entries"],
                "summary": view["summary"],
                "report": report,
                "run": jsonable(result),
                "sign_in_url": url,
            }
            click.echo(json.dumps(jsonable(payload), sort_keys=True))
        else:
            _print_human(
                view,
                report,
                result.workspace_id,
                presentation,
                result.dagster_home,
                keep_serving,
                port,
            )
            click.echo(url)
        if keep_serving:
            progress(f"serving the timeline page at {base_url}/ui (Ctrl-C stops)")
            serve_demo(engine, port)
    finally:
        engine.dispose()


def _print_human(
    view: dict[str, Any],
    report: dict[str, Any] | None,
    workspace_id: str,
    presentation: Presentation,
    dagster_home: str,
    serving: bool,
    port: int,
) -> None:
    for line in human_lines(
        view,
        workspace_id,
        presentation,
        dagster_home=dagster_home,
        serving=serving,
        port=port,
        report=report,
    ):
        if line.bold:
            click.secho(line.text, bold=True)
        else:
            click.echo(line.text)
