"""`timeline-pipeline serve`: the Lark event receiver under uvicorn.

Shutdown is graceful: on SIGTERM/SIGINT uvicorn stops accepting connections and lets requests
in flight finish (up to `--graceful-timeout`), so an event whose row is being committed is still
acknowledged; anything cut off was never acked and Lark redelivers it.

lark-oapi takes seconds to import, so the receiver (and uvicorn) are imported only when the
command runs: every other `timeline-pipeline` command stays fast.
"""

from __future__ import annotations

import sys
from typing import Any, Final

import click

from timeline_pipeline.cli.context import AppContext, pass_app
from timeline_pipeline.cli.output import fail
from timeline_pipeline.db.migrate import current_revision, head_revision
from timeline_pipeline.http.server import DEFAULT_GRACEFUL_TIMEOUT_SECONDS, server_config

GIL_SWITCH_INTERVAL_SECONDS: Final = 0.001
LOG_LEVELS: Final = ("debug", "info", "warning", "error")


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option(
    "--port", default=8080, show_default=True, type=click.IntRange(0, 65535), help="Port."
)
@click.option(
    "--graceful-timeout",
    default=DEFAULT_GRACEFUL_TIMEOUT_SECONDS,
    show_default=True,
    type=click.IntRange(1, 600),
    help="Seconds in-flight requests may take to finish after a shutdown signal.",
)
@click.option("--log-level", default="info", show_default=True, type=click.Choice(LOG_LEVELS))
@click.option("--json", "as_json", is_flag=True, help="Write logs as JSON lines.")
@click.option(
    "--card-worker/--no-card-worker",
    default=True,
    show_default=True,
    help="Run the review-card worker in this process (with reviewCardsEnabled).",
)
@pass_app
def serve(
    app: AppContext,
    host: str,
    port: int,
    graceful_timeout: int,
    log_level: str,
    as_json: bool,
    card_worker: bool,
) -> None:
    """Run the Lark event receiver: POST /lark/events, GET /healthz, GET /metrics.

    Secrets come from LARK_VERIFICATION_TOKEN (required), LARK_ENCRYPT_KEY and LARK_APP_ID;
    messages are stored only when the timeline `enabled` and `eventIngestionEnabled` flags are on
    (otherwise they are acknowledged and counted as ignored).
    """
    from timeline_pipeline.http.app import create_app
    from timeline_pipeline.observability.logs import (
        configure_logging,
        get_logger,
        route_uncaught_exceptions,
    )
    from timeline_pipeline.receiver.heap import freeze_startup_heap

    settings = app.settings
    head = head_revision()
    current = current_revision(app.engine)
    if current != head:
        fail(f"schema is at {current or 'empty'}, code expects {head}: run `db upgrade` first")
    try:
        application = create_app(settings, app.engine, card_worker=card_worker)
    except ValueError as exc:
        fail(str(exc))
    # After importing the receiver: lark-oapi installs its own handler at import, which this drops.
    configure_logging(json=as_json, level=log_level.upper())
    route_uncaught_exceptions()
    config = server_config(
        application,
        host=host,
        port=port,
        graceful_timeout=graceful_timeout,
        log_level=log_level,
    )
    timeline = settings.timeline
    import uvicorn

    config.load()  # imports the protocol and loop modules now, so that they are frozen too
    listener = _maintenance_listener(application, app, graceful_timeout)
    # Last, once everything the server needs is imported and built: see receiver/heap.py.
    frozen = freeze_startup_heap()
    log = get_logger("timeline_pipeline.serve")
    encrypted = bool(settings.runtime.lark_encrypt_key.get_secret_value())
    log.info(
        "receiver_starting",
        host=host,
        port=port,
        ingestion_enabled=timeline.enabled and timeline.event_ingestion_enabled,
        encrypted=encrypted,
        frozen_objects=frozen,
    )
    if not encrypted:
        # Lark signs callbacks only when an encrypt key is configured (docs/http.md).
        log.warning(
            "callbacks_unsigned",
            detail="LARK_ENCRYPT_KEY is not set: Lark signs nothing and the verification token "
            "is the only authenticator of callbacks; set an encrypt key in the Lark app",
        )
    # The event loop (CPU work) and the evidence writer (database I/O) share the GIL; each time
    # the writer comes back from the database it waits for the loop to yield, up to the switch
    # interval (5 ms by default) per round trip. 1 ms keeps commits, and so acks, flowing;
    # shorter intervals measured worse (the switching itself costs CPU).
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_SECONDS)
    try:
        uvicorn.Server(config).run()
    finally:
        # The receiver has drained; the maintenance listener drains next (a batch in flight
        # commits), and only then does the database pool close.
        if listener is not None:
            listener.stop()
        app.engine.dispose()


def _maintenance_listener(application: Any, app: AppContext, graceful_timeout: int) -> Any:
    """The loopback maintenance listener when MAINTENANCE_PORT is set, else None; a bad port or
    a failed bind is logged and disables this listener only (docs/maintenance.md)."""
    raw_port = app.settings.runtime.maintenance_port
    if raw_port is None:
        return None
    from timeline_pipeline.maintenance.listener import start_listener
    from timeline_pipeline.maintenance.processors import default_registry
    from timeline_pipeline.maintenance.service import JobService
    from timeline_pipeline.observability.metrics import MaintenanceMetrics

    # Its counters join the receiver's registry, so the public /metrics shows them.
    metrics = MaintenanceMetrics(application.state.resources.metrics.registry)
    from timeline_pipeline.synthesis_run.synthesizers import build_synthesizer

    # A rerun preview runs the synthesizer the window runs use (docs/maintenance.md).
    registry = default_registry(
        app.settings.timeline, synthesizer=lambda: build_synthesizer(app.settings)
    )
    service = JobService(app.engine, registry, metrics=metrics)
    return start_listener(service, raw_port, graceful_timeout=graceful_timeout)
