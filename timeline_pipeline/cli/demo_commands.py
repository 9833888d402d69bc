"""`timeline-pipeline demo [--json]`: the main job, end to end, on the embedded default."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import click

from timeline_pipeline.cli.output import jsonable
from timeline_pipeline.db.engine import connection
from timeline_pipeline.demo.run import run_demo
from timeline_pipeline.demo.view import demo_timeline
from timeline_pipeline.observability.logs import configure_logging


@click.command("demo")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object: entries and summary.")
@click.option(
    "--dagster-home",
    help="Dagster instance directory (default: $DAGSTER_HOME or .timeline/dagster).",
)
def demo(as_json: bool, dagster_home: str | None) -> None:
    """Run the whole pipeline on a bundled incident chat and print the timeline.

    Starts the local Lark with a realistic incident chat, pushes signed events to a real receiver
    (some dropped, some duplicated), lets reconciliation recover the drops, runs the window
    sensor and synthesis through a real Dagster instance, and prints the resulting timeline.
    Uses TIMELINE_DATABASE_URL (SQLite by default) and Claude when ANTHROPIC_API_KEY is set.
    """
    configure_logging(level=logging.WARNING)  # progress lines say what happens; logs: problems
    started = time.monotonic()

    def progress(line: str) -> None:
        click.echo(f"[{time.monotonic() - started:5.1f}s] {line}", err=True)

    result, engine = run_demo(progress=progress, dagster_home=dagster_home)
    try:
        with connection(engine) as conn:
            view = demo_timeline(conn, result.workspace_id)
    finally:
        engine.dispose()
    if as_json:
        payload: dict[str, Any] = {
            "workspace": result.workspace_id,
            "entries": view["entries"],
            "summary": view["summary"],
            "run": jsonable(result),
        }
        click.echo(json.dumps(jsonable(payload), sort_keys=True))
        return
    _print_human(view, result.workspace_id, result.dagster_home)


def _print_human(view: dict[str, Any], workspace_id: str, dagster_home: str) -> None:
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
