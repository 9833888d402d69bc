"""The loopback listener: its routes and answers, loopback only, and a bad configuration that
disables it alone."""

from __future__ import annotations

import io
import logging
import socket
from collections.abc import Iterator

import httpx
import pytest
import structlog
from sqlalchemy import Engine
from starlette.testclient import TestClient

from timeline_pipeline.maintenance.listener import (
    ListenerRefused,
    create_maintenance_app,
    loopback_socket,
    parse_port,
    start_listener,
)
from timeline_pipeline.observability.logs import configure_logging
from timeline_pipeline_tests.maintenance.conftest import Running
from timeline_pipeline_tests.maintenance.support import seed_evidence, service

OPTIONS = {"batch_size": 10, "delay_ms": 1, "lock_timeout_ms": 200, "statement_timeout_ms": 2000}


def _client(running: Running) -> httpx.Client:
    return httpx.Client(base_url=f"http://127.0.0.1:{running.port}", trust_env=False)


def _create(client: httpx.Client, key: str = "k-1", **extra: object) -> httpx.Response:
    body = {
        "type": "content_hash_backfill",
        "idempotency_key": key,
        "parameters": {"workspace_id": "inc-1"},
        "options": OPTIONS,
        **extra,
    }
    return client.post("/maintenance/jobs", json=body)


def test_create_answers_201_then_the_same_job_with_200(
    lite_running: Running, lite_engine: Engine
) -> None:
    seed_evidence(lite_engine, 3)
    with _client(lite_running) as client:
        first = _create(client)
        again = _create(client)
        conflict = _create(client, apply=True)
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["id"] == again.json()["id"]
    assert first.json()["mode"] == "dry_run" and first.json()["status"] == "ready"
    assert conflict.status_code == 409
    assert conflict.json()["detail"]["code"] == "idempotency_conflict"


def test_bad_requests_get_a_status_and_one_line_reason(
    lite_running: Running, lite_engine: Engine
) -> None:
    seed_evidence(lite_engine, 3)
    with _client(lite_running) as client:
        limits = _create(client, options={**OPTIONS, "batch_size": 5001})
        unknown_type = _create(client, type="issue_status")
        params = _create(client, parameters={"workspace_id": "inc-1", "query": "x"})
        body = client.post("/maintenance/jobs", content=b"{not json")
        missing = client.get("/maintenance/jobs/00000000-0000-0000-0000-000000000000")
        garbage = client.get("/maintenance/jobs/../../etc")
        job = _create(client).json()
        stale = client.post(f"/maintenance/jobs/{job['id']}/pause", json={"revision": 99})
        action = client.post(f"/maintenance/jobs/{job['id']}/explode", json={"revision": 1})
        no_revision = client.post(f"/maintenance/jobs/{job['id']}/pause", json={})
        second = _create(client, key="k-2", apply=True)
    for reply, status, code in [
        (limits, 400, "invalid_input"),
        (unknown_type, 400, "unknown_type"),
        (params, 400, "invalid_input"),
        (body, 400, "invalid_input"),
        (missing, 404, "job_not_found"),
        (stale, 409, "stale_revision"),
        (action, 400, "invalid_input"),
        (no_revision, 400, "invalid_input"),
        (second, 409, "open_job_exists"),
    ]:
        assert (reply.status_code, reply.json()["detail"]["code"]) == (status, code)
        assert "\n" not in reply.json()["detail"]["message"]
    assert garbage.status_code == 404
    assert stale.json()["job"]["revision"] == 1  # the current job, to act on deliberately
    assert service(lite_engine).get(job["id"]).revision == 1


def test_an_advance_inside_the_delay_answers_429_with_the_time_left(
    lite_running: Running, lite_engine: Engine
) -> None:
    seed_evidence(lite_engine, 30)
    with _client(lite_running) as client:
        job = _create(client, options={**OPTIONS, "delay_ms": 60000}).json()
        moved = client.post(f"/maintenance/jobs/{job['id']}/advance", json={"revision": 1})
        early = client.post(
            f"/maintenance/jobs/{job['id']}/advance", json={"revision": moved.json()["revision"]}
        )
    assert moved.status_code == 200
    assert early.status_code == 429
    assert 0 < early.json()["retry_after_ms"] <= 60001
    assert early.headers["Retry-After"] == "60"


def test_a_request_from_beyond_loopback_is_refused(lite_engine: Engine) -> None:
    seed_evidence(lite_engine, 1)
    app = create_maintenance_app(service(lite_engine))
    with TestClient(app, client=("192.0.2.2", 40000)) as client:
        reply = client.post("/maintenance/jobs", json={"type": "x"})
    assert reply.status_code == 403
    assert reply.json()["detail"]["code"] == "not_loopback"
    with TestClient(app, base_url="http://127.0.0.1", client=("127.0.0.1", 40000)) as client:
        assert client.get("/maintenance/jobs/nope").status_code == 404


def test_the_listener_refuses_to_bind_beyond_loopback() -> None:
    for host in ("0.0.0.0", "192.0.2.2", "::", "localhost"):
        with pytest.raises(ListenerRefused, match=r"127\.0\.0\.1 only"):
            loopback_socket(0, host=host)
    sock = loopback_socket(0)
    try:
        assert sock.getsockname()[0] == "127.0.0.1"
    finally:
        sock.close()


def test_the_running_listener_is_unreachable_on_other_addresses(lite_running: Running) -> None:
    addresses = {info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None)}
    others = [a for a in addresses if not a.startswith("127.") and ":" not in a]
    for address in others:
        target = (address, lite_running.port)
        with pytest.raises(ConnectionRefusedError), socket.create_connection(target, 1):
            pass
    with socket.create_connection(("127.0.0.1", lite_running.port), 1):
        pass


@pytest.fixture
def logged() -> Iterator[io.StringIO]:
    """The process's log lines, whatever an earlier test in this worker configured."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    stream = io.StringIO()
    configure_logging(json=True, stream=stream)
    try:
        yield stream
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
        structlog.reset_defaults()


@pytest.mark.parametrize("raw", ["0", "70000", "abc", "-1", "6061x"])
def test_an_invalid_port_disables_only_the_listener_with_a_logged_error(
    raw: str, lite_engine: Engine, logged: io.StringIO
) -> None:
    with pytest.raises(ListenerRefused):
        parse_port(raw)
    assert start_listener(service(lite_engine), raw) is None
    assert "maintenance.listener_disabled" in logged.getvalue()
    assert parse_port(None) is None and parse_port(" 6061 ") == 6061


def test_a_port_in_use_disables_only_the_listener(lite_engine: Engine, logged: io.StringIO) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        port = taken.getsockname()[1]
        assert start_listener(service(lite_engine), str(port)) is None
        assert "cannot bind" in logged.getvalue()
    finally:
        taken.close()


def test_a_foreign_host_or_any_origin_is_refused_a_loopback_host_answers(
    lite_running: Running,
) -> None:
    """DNS rebinding: a page on the same host reaches the port with its own Host and an
    Origin; both are refused with a reason, and nothing is created."""
    port = lite_running.port
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", trust_env=False) as client:
        body = {"type": "content_hash_backfill", "idempotency_key": "k-host"}
        body["parameters"] = {"workspace_id": "ws-1"}
        foreign = client.post(
            "/maintenance/jobs", json=body, headers={"Host": f"attacker.example:{port}"}
        )
        origin = client.post(
            "/maintenance/jobs", json=body, headers={"Origin": "http://attacker.example"}
        )
        other_port = client.get("/maintenance/jobs/nope", headers={"Host": "127.0.0.1:1"})
        named = client.get("/maintenance/jobs/nope", headers={"Host": f"localhost:{port}"})
        plain = client.get("/maintenance/jobs/nope")
    assert (foreign.status_code, foreign.json()["detail"]["code"]) == (403, "host_refused")
    assert (origin.status_code, origin.json()["detail"]["code"]) == (403, "origin_refused")
    assert other_port.status_code == 403
    assert named.status_code == 404
    assert plain.status_code == 404


def test_every_job_transition_is_audited_with_the_driver_s_actor(lite_running: Running) -> None:
    from timeline_pipeline.store.audit import events_for

    seed_evidence(lite_running.service.engine, 3)
    who = {"X-Maintenance-Actor": "cli:alice"}
    with _client(lite_running) as client:
        made = _create(client, key="k-who").json()
        paused = client.post(
            f"/maintenance/jobs/{made['id']}/pause",
            json={"revision": made["revision"]},
            headers=who,
        ).json()
        client.post(f"/maintenance/jobs/{made['id']}/cancel", json={"revision": paused["revision"]})
    with lite_running.service.engine.connect() as conn:
        events = events_for(conn, "maintenance_job", made["id"])
    assert [(e["action"], e["actor"]) for e in events] == [
        ("maintenance.create", "loopback"),
        ("maintenance.pause", "cli:alice"),
        ("maintenance.cancel", "loopback"),
    ]
