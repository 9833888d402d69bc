"""A real `serve` never writes a payload, a header value or an exception message to its logs.

One `serve` process per log renderer (console without an encrypt key, JSON with one) gets a
distinctive marker in every place a client controls: bodies cut off mid-way, every 4xx the
receiver and the API answer, a bearer token, a url_verification challenge that cannot be
encoded as UTF-8, and an unhandled exception whose message and frame locals quote the request
(a route added by the test, see `serve_with_fault`). The marker must appear nowhere in the
process's stdout or stderr, and each failed request may cost at most one log line.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import httpx
import pytest

from timeline_pipeline.db.engine import make_engine, transaction
from timeline_pipeline.db.migrate import upgrade
from timeline_pipeline.receiver.router import EVENTS_PATH
from timeline_pipeline.store import api_tokens
from timeline_pipeline_tests.faults.support_serve import metric_value, serve_environment
from timeline_pipeline_tests.receiver.conftest import add_workspace
from timeline_pipeline_tests.receiver.lark_events import (
    APP_ID,
    ENCRYPT_KEY,
    TOKEN,
    Signing,
    receive,
    sign,
)
from timeline_pipeline_tests.receiver.serve_with_fault import RAISE_PATH
from timeline_pipeline_tests.support.processes import free_port

MARKER: Final = "zebra-quartz-7731"
"""Letters and digits that no id, timestamp or reason code contains by chance."""
STARTUP_SECONDS: Final = 120.0
TRUNCATED_REQUESTS: Final = 3


@dataclass
class Serve:
    base_url: str
    port: int
    out: Path
    err: Path
    token: str
    other_token: str
    encrypted: bool

    def logs(self) -> str:
        return self.out.read_text(errors="replace") + self.err.read_text(errors="replace")

    def metric(self, name: str, **labels: str) -> float:
        response = httpx.get(f"{self.base_url}/metrics", timeout=10, trust_env=False)
        return metric_value(response.text, name, **labels)


@pytest.fixture(params=["console", "json"])
def serve(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Serve]:
    """Console logs without an encrypt key (plain callbacks), JSON logs with one."""
    as_json = request.param == "json"
    url = f"sqlite:///{tmp_path / 'timeline.db'}"
    engine = make_engine(url)
    upgrade(engine)
    add_workspace(engine, "inc-1")
    add_workspace(engine, "inc-2", chats=("oc_other",))
    with transaction(engine) as conn:
        token = api_tokens.create(conn, "inc-1").token
        other_token = api_tokens.create(conn, "inc-2").token
    engine.dispose()
    runtime = {
        "TIMELINE_DATABASE_URL": url,
        "LARK_APP_ID": APP_ID,
        "LARK_VERIFICATION_TOKEN": TOKEN,
        "LARK_ENCRYPT_KEY": ENCRYPT_KEY if as_json else "",
    }
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "timeline_pipeline_tests.receiver.serve_with_fault",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        *(["--json"] if as_json else []),
    ]
    out, err = tmp_path / "serve.out", tmp_path / "serve.err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        process = subprocess.Popen(
            command,
            env=serve_environment(runtime),
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
        )
    try:
        base_url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            assert process.poll() is None, err.read_text()
            assert time.monotonic() < deadline, "serve did not start"
            try:
                if httpx.get(f"{base_url}/healthz", timeout=5, trust_env=False).is_success:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        serving = Serve(base_url, port, out, err, token, other_token, encrypted=as_json)
        wait_for_logs(serving, lambda text: "Uvicorn running on" in text)  # its start lines
        yield serving
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


def wait_for_logs(serve: Serve, ready: Callable[[str], bool], seconds: float = 30.0) -> str:
    """The server's logs once `ready` holds for them; fails after `seconds`."""
    deadline = time.monotonic() + seconds
    while not ready(logs := serve.logs()):
        assert time.monotonic() < deadline, "the expected log lines never came"
        time.sleep(0.05)
    return logs


def send_truncated(port: int, method: str, path: str, headers: dict[str, str]) -> None:
    """Declare a long body, send the start of it, wait until the app is reading, then hang up."""
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Length: 4096"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    head = ("\r\n".join(lines) + "\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head + b'{"text": "' + MARKER.encode() + b" the start of a message")
        time.sleep(0.3)


def status_of(client: httpx.Client, method: str, path: str, **request: Any) -> int:
    """The answer's status, or 0 when the server dropped the connection instead."""
    try:
        return client.request(method, path, **request).status_code
    except httpx.TransportError:
        return 0


def lark_requests(encrypted: bool) -> list[tuple[str, bytes, dict[str, str]]]:
    """Callbacks that each fail differently, with the marker in the body or a header."""
    now = str(int(time.time()))
    key = ENCRYPT_KEY if encrypted else None
    good = sign(receive("om_1", MARKER + " primary is down"), Signing(key, timestamp=now))
    bad_content = sign(receive("om_2", content='{"text": "' + MARKER), Signing(key, timestamp=now))
    forged = receive("om_3", MARKER)
    forged["header"]["token"] = MARKER
    forged_request = sign(forged, Signing(key, timestamp=now))
    json_headers = {"Content-Type": "application/json"}
    challenge = {"type": "url_verification", "token": TOKEN, "challenge": "\ud800 " + MARKER}
    surrogate = json.dumps(challenge).encode()  # ASCII: the surrogate travels as "\\ud800"
    return [
        ("stored", good.body, good.headers),
        ("malformed content", bad_content.body, bad_content.headers),
        ("forged token", forged_request.body, forged_request.headers),
        ("malformed json", b'{"text": "' + MARKER.encode(), json_headers),
        ("not an object", json.dumps([MARKER]).encode(), json_headers),
        ("unsupported schema", json.dumps({"schema": MARKER}).encode(), json_headers),
        ("undecryptable", json.dumps({"encrypt": MARKER}).encode(), json_headers),
        ("bad timestamp", good.body, {**good.headers, "X-Lark-Request-Timestamp": MARKER}),
        ("bad signature", good.body, {**good.headers, "X-Lark-Signature": MARKER}),
        ("oversized", (MARKER + " ").encode() * 100_000, json_headers),
        ("surrogate challenge", surrogate, json_headers),
    ]


def test_no_payload_header_or_exception_message_reaches_the_logs(serve: Serve) -> None:
    encrypted = serve.encrypted
    bearer = {"Authorization": f"Bearer {MARKER}"}
    statuses: dict[str, int] = {}
    with httpx.Client(base_url=serve.base_url, timeout=30, trust_env=False) as client:
        for name, body, headers in lark_requests(encrypted):
            statuses[name] = status_of(
                client, "POST", EVENTS_PATH, content=body, headers={**headers, **bearer}
            )
        own = {"Authorization": f"Bearer {serve.token}"}
        other = {"Authorization": f"Bearer {serve.other_token}"}
        api = "/api/workspaces/inc-1"
        calls: list[tuple[str, str, str, dict[str, str], Any]] = [
            ("wrong method", "GET", f"{EVENTS_PATH}?q={MARKER}", bearer, None),
            ("no such route", "GET", f"/{MARKER}?q={MARKER}", bearer, None),
            ("no token", "PUT", f"{api}/summary", {}, {"content": MARKER}),
            ("unknown token", "PUT", f"{api}/summary", bearer, {"content": MARKER}),
            ("other workspace", "GET", f"{api}/evidence?after={MARKER}", other, None),
            ("bad cursor", "GET", f"{api}/evidence?after={MARKER}", own, None),
            ("no such entry", "GET", f"{api}/entries/999?q={MARKER}", own, None),
            ("invalid body", "PATCH", f"{api}/entries/1", own, {"title": [MARKER]}),
            ("invalid json", "PUT", f"{api}/summary", own, MARKER),
            ("no revision", "POST", f"{api}/entries/1/confirm", own, None),
            ("unhandled exception", "GET", f"{RAISE_PATH}?q={MARKER}", bearer, None),
        ]
        for name, method, path, headers, payload in calls:
            statuses[name] = status_of(
                client,
                method,
                path,
                headers={**headers, "X-Debug": MARKER},
                json=None if isinstance(payload, str) else payload,
                content=payload if isinstance(payload, str) else None,
            )
    for _ in range(TRUNCATED_REQUESTS):
        send_truncated(serve.port, "POST", EVENTS_PATH, bearer)
    send_truncated(serve.port, "PUT", "/api/workspaces/inc-1/summary", {"X-Debug": MARKER})
    failed = sum(1 for status in statuses.values() if status >= 400) + TRUNCATED_REQUESTS + 1
    # uvicorn logs the unhandled exception after the 500 is sent: wait for its line (the last
    # thing a leak would be written with) instead of a fixed pause before the absence checks.
    logs = wait_for_logs(
        serve,
        lambda text: (
            "InjectedFault" in text
            and text.count("lark_event_client_disconnected") >= TRUNCATED_REQUESTS
        ),
    )
    assert MARKER not in logs
    assert "Traceback" not in logs
    assert statuses["surrogate challenge"] == 200
    assert statuses["unhandled exception"] == 500
    assert {400, 401, 403, 404, 405, 413, 422, 428} <= set(statuses.values())
    disconnected = serve.metric("timeline_lark_events_failed_total", reason="client_disconnected")
    assert disconnected == TRUNCATED_REQUESTS
    assert logs.count("lark_event_client_disconnected") == TRUNCATED_REQUESTS
    assert logs.count("InjectedFault") == 1  # the type, from uvicorn's one line about it
    start_lines = logs.split("Uvicorn running on", 1)[1].splitlines()[1:]
    assert 0 < len(start_lines) <= failed
    assert ("callbacks_unsigned" in logs) == (not encrypted)
