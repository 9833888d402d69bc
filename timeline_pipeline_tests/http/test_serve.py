"""`serve` (http/app.py, http/server.py) under a real uvicorn: the receiver's pushed events,
graceful shutdown, and the `serve` command's start-up refusals and frozen heap."""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import uvicorn
from click.testing import CliRunner
from sqlalchemy import Engine, text

from timeline_pipeline.cli.main import cli
from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.migrate import upgrade
from timeline_pipeline.http.app import create_app
from timeline_pipeline.http.server import server_config
from timeline_pipeline.lark.simulator import EventPusher, LoopbackUvicorn, make_chat_messages
from timeline_pipeline.lark.simulator.events import message_receive_event
from timeline_pipeline.receiver.router import EVENTS_PATH
from timeline_pipeline_tests.receiver.conftest import (
    FakeClock,
    add_workspace,
    all_rows,
    make_settings,
)
from timeline_pipeline_tests.receiver.lark_events import (
    CHAT,
    ENCRYPT_KEY,
    IDENTITY,
    TOKEN,
    receive,
    sign,
)
from timeline_pipeline_tests.support.processes import ManagedProcess, free_port


def test_events_pushed_by_the_local_lark_arrive_once_each_despite_duplicates_and_reordering(
    engine: Engine,
) -> None:
    now = datetime.now(UTC)  # the pusher signs with the real time
    add_workspace(engine, created_at=now - timedelta(hours=1))
    items = make_chat_messages(CHAT, now - timedelta(minutes=30), 25, seed=7)
    events = [message_receive_event(item, IDENTITY) for item in items]
    app = create_app(make_settings(), engine)

    with LoopbackUvicorn(app) as server:
        pusher = EventPusher(
            server.base_url + EVENTS_PATH,
            encrypt_key=ENCRYPT_KEY,
            duplicate_fraction=0.4,
            shuffle=True,
            concurrency=4,
            seed=3,
        )
        report = pusher.push(events)

    assert report.all_accepted
    assert report.duplicated
    registry = app.state.resources.metrics.registry

    def written(outcome: str) -> float:
        value = registry.get_sample_value(
            "timeline_lark_evidence_writes_total", {"outcome": outcome}
        )
        return value or 0.0

    # Concurrent events share transactions; the counts must still add up event for event.
    assert written("inserted") == len(items)
    assert written("inserted") + written("duplicate") == len(report.sent)
    rows = all_rows(engine)
    assert sorted(r.source_key for r in rows) == sorted(
        f"chat/{CHAT}/message/{item['message_id']}" for item in items
    )


@contextmanager
def write_lock(engine: Engine) -> Iterator[None]:
    """Another session holds the evidence table, so the receiver's write has to wait."""
    with engine.connect() as conn:
        held = conn.begin()  # on SQLite the engine begins with BEGIN IMMEDIATE: the write lock
        if engine.dialect.name == "postgresql":
            conn.execute(text("LOCK TABLE workspace_timeline_evidence IN EXCLUSIVE MODE"))
        try:
            yield
        finally:
            held.rollback()


def _accepts_connections(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def test_a_request_in_flight_when_shutdown_begins_is_committed_and_answered(
    engine: Engine,
) -> None:
    add_workspace(engine)
    app = create_app(make_settings(), engine, clock=FakeClock())
    server = uvicorn.Server(
        server_config(app, host="127.0.0.1", port=0, graceful_timeout=30, log_level="warning")
    )
    serving = threading.Thread(target=server.run, daemon=True)
    serving.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    signed = sign(receive("om_1"))
    answers: list[httpx.Response] = []
    metrics = app.state.resources.metrics.registry

    with write_lock(engine):
        client = threading.Thread(
            target=lambda: answers.append(
                httpx.post(
                    f"http://127.0.0.1:{port}{EVENTS_PATH}",
                    content=signed.body,
                    headers=signed.headers,
                    timeout=30,
                    trust_env=False,
                )
            )
        )
        client.start()
        deadline = time.monotonic() + 10
        while metrics.get_sample_value("timeline_lark_events_received_total") != 1:
            assert time.monotonic() < deadline, "the request never reached the receiver"
            time.sleep(0.01)
        server.should_exit = True  # what SIGTERM does
        deadline = time.monotonic() + 10
        while _accepts_connections(port):  # shutdown has begun: the listener is closed
            assert time.monotonic() < deadline, "uvicorn never began its shutdown"
            time.sleep(0.01)
        assert answers == []  # still waiting for the database
    client.join(30)
    serving.join(30)

    assert not serving.is_alive()
    assert [a.status_code for a in answers] == [200]
    assert [r.source_key for r in all_rows(engine)] == [f"chat/{CHAT}/message/om_1"]


def _env(**values: str | None) -> dict[str, str | None]:
    base: dict[str, str | None] = {
        "LARK_VERIFICATION_TOKEN": TOKEN,
        "LARK_ENCRYPT_KEY": ENCRYPT_KEY,
        "TIMELINE_CONFIG": None,
    }
    return {**base, **values}


def test_serve_refuses_to_start_without_a_verification_token(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'timeline.db'}"
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()

    result = CliRunner().invoke(
        cli, ["serve"], env=_env(TIMELINE_DATABASE_URL=url, LARK_VERIFICATION_TOKEN=None)
    )

    assert result.exit_code == 1
    assert "LARK_VERIFICATION_TOKEN must be set" in result.output


def test_serve_refuses_an_unmigrated_database(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"

    result = CliRunner().invoke(cli, ["serve"], env=_env(TIMELINE_DATABASE_URL=url))

    assert result.exit_code == 1
    assert "run `db upgrade` first" in result.output


def test_serve_freezes_its_startup_heap_before_it_answers(tmp_path: Path) -> None:
    # A full garbage collection over the startup heap stopped the server for 300-400 ms under
    # load; frozen, those objects are skipped (receiver/heap.py). The process says how many.
    url = f"sqlite:///{tmp_path / 'timeline.db'}"
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    port = free_port()
    env = {k: v for k, v in {**os.environ, **_env(TIMELINE_DATABASE_URL=url)}.items() if v}
    command = [str(Path(sys.executable).parent / "timeline-pipeline"), "serve", "--json"]
    server = ManagedProcess(
        "serve",
        [*command, "--port", str(port)],
        cwd=tmp_path,
        env=env,
        log_path=tmp_path / "serve.log",
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and server.alive():
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        assert server.alive(), server.tail()
    finally:
        server.stop()

    lines = [json.loads(line) for line in server.log_path.read_text().splitlines() if "{" in line]
    [starting] = [line for line in lines if line.get("event") == "receiver_starting"]
    assert starting["frozen_objects"] > 50_000  # the imported libraries' objects, not a few
