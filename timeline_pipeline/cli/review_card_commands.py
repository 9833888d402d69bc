"""`timeline-pipeline review-cards ...`: the review-card worker, and the cards of a workspace.

`review-cards work` runs the same worker `serve` runs (docs/review-cards.md), for a
deployment that keeps it apart from the receiver or for draining the queue by hand. The group's
earlier name, `interactions`, still runs the same commands (hidden from the help), so scripts
and service units written for it keep working.
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType
from typing import Any

import click

from timeline_pipeline.cli.context import AppContext, pass_app
from timeline_pipeline.cli.output import emit, workspace_option

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON.")


@click.group(name="review-cards")
def review_cards_group() -> None:
    """Review cards: the worker that posts cards and applies curators' decisions."""


@review_cards_group.command("work")
@click.option("--drain", is_flag=True, help="Stop once nothing is left to do.")
@click.option(
    "--max-seconds",
    type=click.FloatRange(0.1, 86400),
    default=60.0,
    show_default=True,
    help="With --drain: stop after this long even if work remains.",
)
@json_option
@pass_app
def work(app: AppContext, drain: bool, max_seconds: float, as_json: bool) -> None:
    """Plan finished windows' cards, post queued cards, apply admitted decisions, redraw cards;
    until SIGTERM or --drain."""
    from timeline_pipeline.observability.logs import configure_logging
    from timeline_pipeline.review_cards.runtime import ReviewCards

    configure_logging(json=as_json)
    cards = ReviewCards.build(app.settings, app.engine)
    if drain:
        report = cards.worker.drain(max_seconds=max_seconds)
        cards.worker.close()
        data: dict[str, Any] = {
            "planned": report.planned,
            "sent": report.sent,
            "applied": dict(report.applied),
            "patched": report.patched,
            "expired": report.expired,
        }
        emit(
            as_json,
            data,
            lambda: click.echo(
                f"planned {report.planned}, sent {report.sent}, "
                f"applied {sum(report.applied.values())}, "
                f"patched {report.patched}, expired {report.expired}"
            ),
        )
        return
    stop = threading.Event()

    def _on_term(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _on_term)
    click.echo(f"card worker {cards.worker.owner} running", err=True)
    sys.stderr.flush()
    try:
        cards.worker.run(stop)
    except KeyboardInterrupt:
        pass
    finally:
        cards.worker.close()


@review_cards_group.command("show")
@workspace_option
@json_option
@pass_app
def show(app: AppContext, workspace_id: str, as_json: bool) -> None:
    """The review cards of a workspace: status, delivery, expiry and decisions."""
    from timeline_pipeline.store import interaction_requests as cards
    from timeline_pipeline.store import workspaces

    with app.engine.connect() as conn:
        workspaces.require(conn, workspace_id)
        rows = cards.for_workspace(conn, workspace_id)
    data: list[dict[str, Any]] = [
        {
            "id": r.id,
            "status": r.status,
            "delivery_status": r.delivery_status,
            "chat_id": r.chat_id,
            "message_id": r.message_id,
            "expires_at": r.expires_at.isoformat(),
            "entries": [e.id for e in r.request.entries],
            "decisions": {str(k): [d.as_json() for d in v] for k, v in sorted(r.decisions.items())},
        }
        for r in rows
    ]

    def human() -> None:
        for item in data:
            decided = sum(len(v) for v in item["decisions"].values())
            click.echo(
                f"card {item['id']}: {item['status']}, {item['delivery_status']}, "
                f"{len(item['entries'])} draft(s), {decided} decision(s), "
                f"until {item['expires_at']}"
            )

    emit(as_json, data, human)


interactions_alias = click.Group(
    name="interactions",
    commands=review_cards_group.commands,
    hidden=True,
    help="The earlier name of `review-cards` (docs/review-cards.md).",
)
