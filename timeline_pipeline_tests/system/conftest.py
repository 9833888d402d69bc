"""A deployment on one machine: `dagster-daemon` and `dagster-webserver` as the production
`deploy/dagster.yaml` configures them (PostgreSQL storage, the queued run coordinator, the tag
concurrency limits), the product database on PostgreSQL, and the local Lark holding two firing
incidents' chats whose history only the daemon's scheduled reconciliation brings in.

Nothing is seeded into the product's evidence: if the schedule does not tick, or its run cannot
reach the local Lark, no window ever appears. Settings reach the processes the way an operator
sets them, through `TIMELINE_LARK_*` variables; only intervals are shortened (the sensor's 30 s
minimum, a reconcile every minute) so ticks come within the test's budget.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sys
import uuid
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.domain.window_keys import WindowRef, window_start_of
from timeline_pipeline.lark.simulator import ChatStore, SimulatorServer, make_chat_messages
from timeline_pipeline.lark.simulator.fixtures import SENDERS
from timeline_pipeline.store import workspaces
from timeline_pipeline_tests.conftest import PG_ADMIN_URL, _admin
from timeline_pipeline_tests.support.processes import ManagedProcess, free_port
from timeline_pipeline_tests.support.windows import WINDOW
from timeline_pipeline_tests.system.graphql import DagsterGraphQL, RepositoryAddress
from timeline_pipeline_tests.system.processes import LOG_HEADER, Processes, wait_for

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
WINDOWS_PER_CHAT = 3
STARTUP_TIMEOUT = 150.0

TIMELINE_ENV = {
    "TIMELINE_LARK_ENABLED": "true",
    "TIMELINE_LARK_EVENT_INGESTION_ENABLED": "true",
    "TIMELINE_LARK_RECONCILIATION_ENABLED": "true",
    # Summaries would queue behind the same per-workspace limit; this test is about windows.
    "TIMELINE_LARK_SUMMARY_ENABLED": "false",
    "TIMELINE_LARK_SYNTHESIS_SCAN_INTERVAL": "30s",
    "TIMELINE_LARK_RECONCILE_INTERVAL": "1m",
}
_INHERITED_PREFIXES = ("TIMELINE_", "LARK_", "ANTHROPIC_", "DAGSTER_")

# Each window states facts the rule synthesizer turns into entries (no chatter-only window).
WINDOW_LINES = (
    (
        "Error rate on checkout-api jumped to 12% since 09:40",
        "Customers report timeouts on payment confirmation",
        "Deploy 4812 went out at 09:35, suspect it",
        "Looking at the gateway dashboards now",
    ),
    (
        "Rolling back deploy 4812",
        "DB connection pool was exhausted on replica 2",
        "Raised the pool limit from 50 to 80 as mitigation",
        "Status page updated",
    ),
    (
        "Rollback finished, error rate falling",
        "p99 latency back under 300ms",
        "Confirmed recovery with two affected customers",
        "Will write the postmortem draft tomorrow",
    ),
)


@dataclass(frozen=True)
class Incident:
    workspace_id: str
    chat_id: str
    created_at: datetime
    windows: list[WindowRef]

    @property
    def partition_keys(self) -> list[str]:
        return [ref.partition_key for ref in self.windows]


@dataclass
class Deployment:
    graphql: DagsterGraphQL
    repo: RepositoryAddress
    engine: Engine
    processes: Processes
    lark: SimulatorServer
    incidents: list[Incident]
    messages: int
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def partition_keys(self) -> list[str]:
        return [key for incident in self.incidents for key in incident.partition_keys]


def _incidents(now: datetime) -> list[Incident]:
    """Two firing incidents, each with a chat active in three windows that closed >40 min ago."""
    first = window_start_of(now - timedelta(minutes=75), WINDOW)
    tag = uuid.uuid4().hex[:8]
    made = []
    for name in ("alpha", "beta"):
        workspace_id, chat_id = f"sys-{name}-{tag}", f"oc_sys_{name}_{tag}"
        windows = [
            WindowRef(workspace_id, chat_id, first + i * WINDOW) for i in range(WINDOWS_PER_CHAT)
        ]
        made.append(Incident(workspace_id, chat_id, first - timedelta(minutes=5), windows))
    return made


def _chat_history(incident: Incident, seed: int) -> list[dict[str, Any]]:
    """Four messages per window, in Lark's list-item shape, from the product's generator."""
    items: list[dict[str, Any]] = []
    for index, ref in enumerate(incident.windows):
        batch = make_chat_messages(
            incident.chat_id,
            ref.window_start + timedelta(minutes=1),
            len(WINDOW_LINES[index]),
            seed=seed * 100 + index,
            thread_every=0,
            post_every=0,
            mention_every=0,
            interval_seconds=60.0,
        )
        for item, line in zip(batch, WINDOW_LINES[index], strict=True):
            item["body"] = {"content": json.dumps({"text": line})}
        items.extend(batch)
    return items


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failed check in a system test comes with the daemon's and webserver's last lines."""
    report = yield
    deployment = getattr(item, "funcargs", {}).get("deployment")
    quoted = LOG_HEADER in report.longreprtext  # waits quote the logs in their own message
    if call.when == "call" and report.failed and not quoted and isinstance(deployment, Deployment):
        report.sections.append(("dagster processes", deployment.processes.report()))
    return report


@pytest.fixture
def dagster_storage_url() -> Iterator[str]:
    """An empty PostgreSQL database for Dagster's own storage, named the way dagster.yaml asks
    (`postgresql+psycopg2://`), dropped afterwards."""
    name = f"tp_dagster_sys_{uuid.uuid4().hex[:12]}"
    with _admin() as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    base = PG_ADMIN_URL.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg2://", 1)
    try:
        yield f"{base}/{name}"
    finally:
        with _admin() as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def production_home(tmp_path: Path) -> Path:
    """A DAGSTER_HOME holding the production `deploy/dagster.yaml`, unchanged."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(REPO / "deploy" / "dagster.yaml", home / "dagster.yaml")
    return home


def deployment_env(
    *, home: Path, dagster_storage_url: str, pg_url: str, lark: SimulatorServer, **extra: str
) -> dict[str, str]:
    """The environment a deployed process reads: its Dagster home and storage, the timeline
    database and the local Lark's app, then `extra`."""
    return _process_env(
        {
            "DAGSTER_HOME": str(home),
            "DAGSTER_PG_URL": dagster_storage_url,
            "TIMELINE_DATABASE_URL": pg_url,
            "LARK_APP_ID": lark.app_id,
            "LARK_APP_SECRET": lark.app_secret,
            "LARK_BASE_URL": lark.base_url,
            **extra,
        }
    )


def _process_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_INHERITED_PREFIXES)}
    env.update(TIMELINE_ENV)
    env.update(extra)
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    env["PYTHONUNBUFFERED"] = "1"
    return env


@pytest.fixture
def deployment(pg_url: str, dagster_storage_url: str, tmp_path: Path) -> Iterator[Deployment]:
    incidents = _incidents(datetime.now(UTC))
    engine = make_engine(pg_url)
    with engine.begin() as conn:
        for incident in incidents:
            workspaces.create(conn, incident.workspace_id, created_at=incident.created_at)
            workspaces.bind_chat(conn, incident.workspace_id, incident.chat_id)
    history = [m for seed, i in enumerate(incidents, 1) for m in _chat_history(i, seed)]
    store = ChatStore(history, dict(SENDERS))
    app_id, app_secret = f"cli_sys_{secrets.token_hex(6)}", secrets.token_urlsafe(24)

    home = production_home(tmp_path)
    processes = Processes()
    port = free_port()
    graphql = DagsterGraphQL(f"http://127.0.0.1:{port}")
    workspace = ["-w", str(REPO / "workspace.yaml")]
    commands = {
        "dagster-daemon": ["run", *workspace],
        "dagster-webserver": ["-h", "127.0.0.1", "-p", str(port), *workspace],
    }
    with SimulatorServer(store=store, app_id=app_id, app_secret=app_secret) as lark:
        env = deployment_env(
            home=home, dagster_storage_url=dagster_storage_url, pg_url=pg_url, lark=lark
        )
        try:
            for name, args in commands.items():
                log_path = tmp_path / f"{name}.log"
                command = [str(BIN / name), *args]
                processes.start(ManagedProcess(name, command, cwd=REPO, env=env, log_path=log_path))
            wait_for(
                "the webserver to answer GraphQL",
                graphql.answers,
                timeout=STARTUP_TIMEOUT,
                processes=processes,
            )
            repo = wait_for(
                "the code location to load in the webserver",
                graphql.repository,
                timeout=STARTUP_TIMEOUT,
                processes=processes,
            )
            yield Deployment(
                graphql=graphql,
                repo=repo,
                engine=engine,
                processes=processes,
                lark=lark,
                incidents=incidents,
                messages=len(history),
            )
        finally:
            processes.stop_all()
            graphql.close()
            engine.dispose()
