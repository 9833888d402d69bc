"""`timeline-pipeline demo`: the whole product on the embedded default, end to end.

Real parts only: the local Lark serves the bundled chat through the OpenAPI subset the product
uses; signed and encrypted events reach the real receiver over HTTP, some dropped and some
duplicated on purpose; reconciliation recovers the drops through the real lark-oapi client; the
window sensor and the synthesis job run on a real, persistent Dagster instance (the same data
`dagster dev` then shows); the commander confirms a draft from its review card and pins a
message; then the incident closes: the workspace is set `recovered`, its report is built and
written into a Lark document of the local Lark, and the document's link is replied in the chat
(`demo/report.py`, docs/report.md). Nothing leaves the machine: every server binds 127.0.0.1.

`chat` picks the bundled chat (`demo_data.DemoChat`): the Chinese one runs the same pipeline on
a workspace created in `zh-CN` and `Asia/Shanghai` (docs/i18n.md).
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import SecretStr
from sqlalchemy import Engine

from timeline_pipeline import demo_data
from timeline_pipeline.db.engine import make_engine, redacted_url, transaction
from timeline_pipeline.db.migrate import upgrade
from timeline_pipeline.demo.live import ChatStep, local_lark
from timeline_pipeline.demo.live import identity as event_identity
from timeline_pipeline.demo.pin import PinDemoResult, pin_from_chat
from timeline_pipeline.demo.report import ReportDemoResult, report_from_chat
from timeline_pipeline.demo.review import ReviewResult, confirm_from_chat
from timeline_pipeline.demo.scenario import Scenario, demo_end, shifted
from timeline_pipeline.demo_data import CHATS, DemoChat
from timeline_pipeline.http.app import create_app
from timeline_pipeline.ingest.eligibility import AUTOMATIC
from timeline_pipeline.lark.client_factory import build_client
from timeline_pipeline.lark.simulator.documents import DEFAULT_DOC_BASE_URL, DEFAULT_FOLDER_TOKEN
from timeline_pipeline.lark.simulator.events import (
    EventIdentity,
    item_recalled_event,
    message_receive_event,
)
from timeline_pipeline.lark.simulator.pusher import EventPusher, PushReport
from timeline_pipeline.lark.simulator.runner import LoopbackUvicorn
from timeline_pipeline.lark.simulator.store import ChatStore
from timeline_pipeline.orchestration.resources import DatabaseResource, TimelineSettingsResource
from timeline_pipeline.orchestration.summary import SUMMARY_JOB, SUMMARY_SENSOR, summary_defs
from timeline_pipeline.orchestration.windows import (
    DISCOVERY_SENSOR,
    SYNTHESIS_JOB,
    WINDOW_PARTITIONS,
    window_defs,
)
from timeline_pipeline.reconcile.planning import Mode
from timeline_pipeline.reconcile.report import RunReport
from timeline_pipeline.reconcile.runner import Reconciler
from timeline_pipeline.reconcile.targets import Target
from timeline_pipeline.settings import (
    RuntimeEnvironment,
    Settings,
    load_runtime_environment,
    load_timeline_settings,
)
from timeline_pipeline.store import workspaces
from timeline_pipeline.windows.batches import RANGE_END_TAG, RANGE_START_TAG

DEMO_FLAGS: dict[str, Any] = {
    "enabled": True,
    "event_ingestion_enabled": True,
    "reconciliation_enabled": True,
    "summary_enabled": True,
    "review_cards_enabled": True,
    "pin_from_chat_enabled": True,
    # The report's document goes to the local Lark's report folder, linked as it serves it.
    "report_enabled": True,
    "report_lark_doc_enabled": True,
    "report_folder_token": DEFAULT_FOLDER_TOKEN,
    "report_document_url_base": f"{DEFAULT_DOC_BASE_URL}/docx/",
}
DROP_FRACTION = 0.12
DUPLICATE_FRACTION = 0.08
MAX_SENSOR_TICKS = 20
# The demo reports progress itself; Dagster's own event log stays in the instance (and the UI).
QUIET_RUN_LOGS: dict[str, Any] = {"loggers": {"console": {"config": {"log_level": "ERROR"}}}}

Progress = Callable[[str], None]


@dataclass(frozen=True)
class DemoWorkspace:
    """The workspace a demo chat is bound to: its title, and its language and zone (None: the
    `locale` and `timeZone` settings decide, as for any workspace; docs/i18n.md)."""

    title: str
    locale: str | None = None
    time_zone: str | None = None


WORKSPACES: dict[DemoChat, DemoWorkspace] = {
    DemoChat.EN: DemoWorkspace("Checkout latency and 5xx after a payment-gateway config change"),
    DemoChat.ZH: DemoWorkspace(
        "coupon-service 发布后下单接口超时、失败率升高",
        locale="zh-CN",
        time_zone="Asia/Shanghai",
    ),
}
"""A Chinese team reads its incident in Chinese and in its own zone, so the Chinese demo's
workspace says so; the English one keeps the settings' defaults, as before."""


DEMO_ACTOR = "cli:demo"
"""Who the demo's own changes are recorded as (docs/design.md, "Who did it")."""


@dataclass
class DemoResult:
    workspace_id: str
    database: str
    dagster_home: str
    chat_id: str
    messages: int
    push: dict[str, Any] = field(default_factory=dict)
    reconcile: dict[str, Any] = field(default_factory=dict)
    windows_run: int = 0
    windows_failed: int = 0
    summaries_run: int = 0
    review: ReviewResult = field(default_factory=ReviewResult)
    pin: PinDemoResult = field(default_factory=PinDemoResult)
    report: ReportDemoResult = field(default_factory=ReportDemoResult)


def _demo_runtime(base: RuntimeEnvironment) -> RuntimeEnvironment:
    """Fresh credentials shared by the local Lark and the receiver; never printed or stored.

    A new app id per run also keeps lark-oapi's process-wide token cache from mixing runs.
    """
    return base.model_copy(
        update={
            "lark_app_id": f"cli_demo_{secrets.token_hex(6)}",
            "lark_app_secret": SecretStr(secrets.token_urlsafe(24)),
            "lark_encrypt_key": SecretStr(secrets.token_urlsafe(24)),
            "lark_verification_token": SecretStr(secrets.token_urlsafe(16)),
        }
    )


def _events(scenario: Scenario, identity: EventIdentity) -> list[dict[str, Any]]:
    """What Lark would push: every message as it was sent, and a recall event for a recall."""
    events: list[dict[str, Any]] = []
    for item in scenario.messages:
        if item.get("deleted"):
            events.append(item_recalled_event(item, identity))
        else:
            events.append(message_receive_event(item, identity))
    return events


def _dagster_home(explicit: str | None) -> Path:
    home = Path(explicit or os.environ.get("DAGSTER_HOME") or ".timeline/dagster").resolve()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text("telemetry:\n  enabled: false\n")
    return home


def _drain(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    sensor_name: str,
    job_name: str,
    on_run: Callable[[str, bool], None],
) -> None:
    """Tick a real sensor and execute every run it requests, until it requests none.

    This is what the daemon does between ticks, done in-process so the demo needs no daemon;
    the runs, partitions and materializations land in the instance that `dagster dev` shows.
    """
    sensor = defs.resolve_sensor_def(sensor_name)
    job = defs.resolve_job_def(job_name)
    cursor: str | None = None
    for _ in range(MAX_SENSOR_TICKS):
        with dg.build_sensor_context(
            instance_ref=instance.get_ref(),
            definitions=defs,
            cursor=cursor,
            resources=defs.resources,
        ) as context:
            # The tick logger is a standalone logger with its own console handler, so the
            # "dagster" logger's level does not reach it: quiet it here, the progress lines say
            # what the tick did.
            context.log.setLevel(logging.WARNING)
            tick = sensor.evaluate_tick(context)
        for request in tick.dynamic_partitions_requests or []:
            keys = list(getattr(request, "partition_keys", []) or [])
            if keys:
                instance.add_dynamic_partitions(request.partitions_def_name, keys)
        cursor = tick.cursor
        if not tick.run_requests:
            return
        for run_request in tick.run_requests:
            outcome = job.execute_in_process(
                partition_key=run_request.partition_key,
                instance=instance,
                run_config={**run_request.run_config, **QUIET_RUN_LOGS},
                tags=run_request.tags,
                raise_on_error=False,
            )
            for key in _requested_keys(instance, run_request):
                on_run(key, outcome.success)


def _requested_keys(instance: dg.DagsterInstance, request: dg.RunRequest) -> list[str]:
    """The partitions a run request covers: its one key, or the window batch between its range
    tags (a synthesis run takes several windows: docs/scaling.md), in the order they were added."""
    if request.partition_key is not None:
        return [request.partition_key]
    start = request.tags.get(RANGE_START_TAG)
    end = request.tags.get(RANGE_END_TAG)
    if start is None or end is None:
        return [""]
    keys = instance.get_dynamic_partitions(WINDOW_PARTITIONS)
    return list(keys[keys.index(start) : keys.index(end) + 1])


def _run_dagster(engine_url: str, home: Path, result: DemoResult, progress: Progress) -> None:
    """Window synthesis, then the summary, through the product's own sensors and jobs."""
    timeline = load_timeline_settings(**DEMO_FLAGS)
    defs = dg.Definitions.merge(
        dg.Definitions(
            resources={
                "database": DatabaseResource(url=engine_url),
                "timeline_settings": TimelineSettingsResource(overrides=DEMO_FLAGS),
            }
        ),
        window_defs(timeline),
        summary_defs(timeline),
    )
    logging.getLogger("dagster").setLevel(logging.WARNING)

    def window_done(key: str, ok: bool) -> None:
        result.windows_run += 1
        result.windows_failed += 0 if ok else 1
        progress(f"window {key}: {'synthesized' if ok else 'failed'}")

    def summary_done(key: str, ok: bool) -> None:
        result.summaries_run += 1
        progress(f"summary of {key}: {'written' if ok else 'failed'}")

    with dg.DagsterInstance.from_config(str(home)) as instance:
        _drain(defs, instance, DISCOVERY_SENSOR, SYNTHESIS_JOB, window_done)
        progress(
            f"{result.windows_run} window partition(s) synthesized through Dagster "
            f"({result.windows_failed} failed)"
        )
        _drain(defs, instance, SUMMARY_SENSOR, SUMMARY_JOB, summary_done)


def run_demo(
    *,
    progress: Progress,
    dagster_home: str | None = None,
    now: datetime | None = None,
    chat: DemoChat = DemoChat.EN,
) -> tuple[DemoResult, Engine]:
    moment = now or datetime.now(UTC)
    chat_id = CHATS[chat].chat_id
    spec = WORKSPACES[chat]
    base_runtime = load_runtime_environment()
    timeline = load_timeline_settings(**DEMO_FLAGS)
    os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")

    engine = make_engine(base_runtime.database_url)
    upgrade(engine)
    progress(f"database {redacted_url(base_runtime.database_url)} is at the current schema")

    end = demo_end(moment, timeline.synthesis_window, timeline.synthesis_window_close_grace)
    scenario = shifted(demo_data.load_messages(chat), end)
    users = demo_data.load_users(chat)
    workspace_id = f"demo-{moment.strftime('%Y%m%d-%H%M%S')}"
    with transaction(engine) as conn:
        # Earlier demo runs bound the same chat; archive them so only this run ingests it.
        for binding in workspaces.bindings_for_chat(conn, chat_id):
            if binding.workspace.id.startswith("demo-") and binding.workspace.status == "firing":
                workspaces.set_status(conn, binding.workspace.id, "archived", actor=DEMO_ACTOR)
        workspaces.create(
            conn,
            workspace_id,
            created_at=scenario.workspace_created_at,
            title=spec.title,
            locale=spec.locale,
            time_zone=spec.time_zone,
        )
        workspaces.bind_chat(conn, workspace_id, chat_id)
    language = f", {spec.locale} in {spec.time_zone}" if spec.locale else ""
    progress(f"workspace {workspace_id} (firing{language}) bound to chat {chat_id}")

    home = _dagster_home(dagster_home)
    result = DemoResult(
        workspace_id=workspace_id,
        database=redacted_url(base_runtime.database_url),
        dagster_home=str(home),
        chat_id=chat_id,
        messages=len(scenario.messages),
    )
    store = ChatStore(scenario.messages, users)
    with local_lark(store, _demo_runtime(base_runtime)) as (lark, runtime):
        progress(f"local Lark serving {len(scenario.messages)} messages at {lark.base_url}")

        settings = Settings(timeline, runtime)
        with LoopbackUvicorn(create_app(settings, engine)) as receiver:
            identity = event_identity(settings)
            pusher = EventPusher(
                f"{receiver.base_url}/lark/events",
                encrypt_key=runtime.lark_encrypt_key.get_secret_value(),
                encrypt_body=True,
                drop_fraction=DROP_FRACTION,
                duplicate_fraction=DUPLICATE_FRACTION,
                shuffle=True,
                seed=7,
                concurrency=4,
            )
            report: PushReport = pusher.push(_events(scenario, identity))
            result.push = report.as_dict()
            progress(
                f"pushed {len(report.sent)} signed, encrypted events to the receiver "
                f"({len(report.dropped)} dropped on purpose, {len(report.duplicated)} duplicated)"
            )

        reconciler = Reconciler(
            engine, build_client(timeline, runtime), timeline, app_id=runtime.lark_app_id
        )
        with transaction(engine) as conn:
            workspace = workspaces.require(conn, workspace_id)
        run: RunReport = reconciler.run(
            [Target(workspace, chat_id)],
            mode=Mode.INCREMENTAL,
            scope=AUTOMATIC,
            now=datetime.now(UTC),
        )
        read = run.chats[0]
        result.reconcile = read.as_dict()
        progress(
            f"reconciliation read {read.pages} page(s), {read.messages} messages: "
            f"{read.upserts.inserted} recovered, {read.upserts.updated} updated, "
            f"{read.upserts.duplicate} already stored"
        )

    _run_dagster(engine.url.render_as_string(hide_password=False), home, result, progress)
    commander = next(iter(users))
    step = ChatStep(engine, Settings(timeline, runtime), store, workspace_id, progress)
    result.review = confirm_from_chat(step, commander)
    result.pin = pin_from_chat(step, commander)
    result.report = report_from_chat(step, chat_id, actor=DEMO_ACTOR)
    return result, engine


def serve_demo(engine: Engine, port: int) -> None:
    """`serve` on 127.0.0.1 for `demo --serve`, until Ctrl-C: the timeline page and the API.

    It gets fresh Lark credentials of its own (the receiver needs a verification token); the
    demo's chat is already stored, so nothing needs to reach it."""
    import uvicorn

    from timeline_pipeline.http.server import DEFAULT_GRACEFUL_TIMEOUT_SECONDS, server_config

    settings = Settings(
        load_timeline_settings(**DEMO_FLAGS), _demo_runtime(load_runtime_environment())
    )
    config = server_config(
        create_app(settings, engine),
        host="127.0.0.1",
        port=port,
        graceful_timeout=DEFAULT_GRACEFUL_TIMEOUT_SECONDS,
        log_level="warning",
    )
    uvicorn.Server(config).run()
