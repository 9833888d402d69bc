"""`timeline-pipeline demo [--json]`: the main job, end to end, on the embedded default."""

from __future__ import annotations

import json
import logging
import time
from datetime import UTC, datetime
from typing import Any

import click

from timeline_pipeline.cli.output import jsonable
from timeline_pipeline.cli.ui_commands import LINK_TTL, sign_in_url
from timeline_pipeline.db.engine import connection, transaction
from timeline_pipeline.demo.run import run_demo, serve_demo
from timeline_pipeline.demo.view import demo_timeline
from timeline_pipeline.observability.logs import configure_logging
from timeline_pipeline.store import ui_sessions


@click.command("demo")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object: entries and summary.")
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
def demo(as_json: bool, dagster_home: str | None, keep_serving: bool, port: int) -> None:
    """Run the whole pipeline on a bundled incident chat and print the timeline.

    Starts the local Lark with a realistic incident chat, pushes signed events to a real receiver
    (some dropped, some duplicated), lets reconciliation recover the drops, runs the window
    sensor and synthesis through a real Dagster instance, and prints the resulting timeline.
    Uses TIMELINE_DATABASE_URL (SQLite by default) and Claude when ANTHROPIC_API_KEY is set.
    Ends with a one-time sign-in link to the demo's timeline page (docs/timeline-page.md);
    with --serve, `serve` keeps running on 127.0.0.1 until Ctrl-C.
    """
    configure_logging(level=logging.WARNING)  # progress lines say what happens; logs: problems
    started = time.monotonic()

    def progress(line: str) -> None:
        click.echo(f"[{time.monotonic() - started:5.1f}s] {line}", err=True)

    result, engine = run_demo(progress=progress, dagster_home=dagster_home)
    base_url = f"http://127.0.0.1:{port}"
    try:
        with connection(engine) as conn:
            view = demo_timeline(conn, result.workspace_id)
        with transaction(engine) as conn:
            link = ui_sessions.create_link(
                conn, result.workspace_id, now=datetime.now(UTC), ttl=LINK_TTL
            )
        url = sign_in_url(base_url, link.token)
        if as_json:
            payload: dict[str, Any] = {
                "workspace": result.workspace_id,
                "entries": view["entries"],
                "summary": view["summary"],
                "run": jsonable(result),
                "sign_in_url": url,
            }
            click.echo(json.dumps(jsonable(payload), sort_keys=True))
        else:
            _print_human(view, result.workspace_id, result.dagster_home, keep_serving, port)
            click.echo(url)
        if keep_serving:
            progress(f"serving the timeline page at {base_url}/ui (Ctrl-C stops)")
            serve_demo(engine, port)
    finally:
        engine.dispose()


def _print_human(
    view: dict[str, Any], workspace_id: str, dagster_home: str, serving: bool, port: int
) -> None:
    click.echo("")
    click.secho(f"Timeline of workspace {workspace_id}", bold=True)
    for entry in view["entries"]:
        when = entry["occurred_at"][11:16]
        click.echo(f"  {when}  {entry['category']:<11} {entry['title']}")
        links = [item["link"] for item in entry["evidence"] if item.get("link")]
        if links:
            more = f"  (+{len(links) - 1} more)" if len(links) > 1 else ""
            click.echo(f"  {'':<5}  {'':<11} {links[0]}{more}")
    click.echo("")
    click.secho("Summary", bold=True)
    for line in (view["summary"] or "(no summary yet)").splitlines():
        click.echo(f"  {line}")
    click.echo("")
    click.echo("Open the same data:")
    click.echo(f"  Dagster UI: DAGSTER_HOME={dagster_home} .venv/bin/dagster dev -w workspace.yaml")
    click.echo(f"  API:        timeline-pipeline token create --workspace {workspace_id}")
    click.echo("              timeline-pipeline serve --port 8080  # then, with the token:")
    click.echo(
        "              curl -H 'Authorization: Bearer <token>' "
        f"http://127.0.0.1:8080/api/workspaces/{workspace_id}/timeline"
    )
    click.echo(f"  CLI:        timeline-pipeline timeline show {workspace_id}")
    if serving:
        click.echo("  Page:       open this one-time sign-in link (valid 10 minutes):")
    else:
        click.echo(
            f"  Page:       timeline-pipeline serve --port {port}  # or `demo --serve`; "
            "then open this one-time link (valid 10 minutes):"
        )
