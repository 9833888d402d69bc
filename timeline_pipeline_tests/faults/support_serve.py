"""A real `timeline-pipeline serve` process, and Lark's side of the conversation with it.

The fault suite kills, starves and floods the receiver, so it runs as its own OS process (not
uvicorn in a thread): SIGKILL then really loses whatever the process held in memory, and a
crash cannot take the test runner down with it. Only 127.0.0.1 is ever bound or called, and
only the process started here is ever signalled, by its pid.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Final

import httpx

from timeline_pipeline.lark.simulator.events import EventIdentity
from timeline_pipeline.lark.simulator.signing import sign_payload
from timeline_pipeline.receiver.router import EVENTS_PATH
from timeline_pipeline_tests.support.processes import free_port

STARTUP_SECONDS: Final = 120.0
"""`serve` imports lark-oapi and FastAPI (about 4 s idle); generous for a loaded CI machine."""
START_ATTEMPTS: Final = 3
STOP_SECONDS: Final = 30.0
REQUEST_SECONDS: Final = 30.0


@dataclass(frozen=True)
class LarkApp:
    """The Lark app's credentials, shared by the local Lark, the pusher and the receiver.

    Fresh per test: lark-oapi caches tenant tokens per app id for the whole process.
    """

    app_id: str
    app_secret: str
    verification_token: str
    encrypt_key: str

    @classmethod
    def fresh(cls) -> LarkApp:
        return cls(
            app_id=f"cli_fault_{uuid.uuid4().hex[:12]}",
            app_secret=secrets.token_urlsafe(24),
            verification_token=secrets.token_urlsafe(16),
            encrypt_key=secrets.token_urlsafe(24),
        )

    @property
    def identity(self) -> EventIdentity:
        return EventIdentity(app_id=self.app_id, verification_token=self.verification_token)

    def runtime(self, database_url: str, lark_base_url: str | None = None) -> dict[str, str]:
        values = {
            "TIMELINE_DATABASE_URL": database_url,
            "LARK_APP_ID": self.app_id,
            "LARK_APP_SECRET": self.app_secret,
            "LARK_VERIFICATION_TOKEN": self.verification_token,
            "LARK_ENCRYPT_KEY": self.encrypt_key,
        }
        if lark_base_url is not None:
            values["LARK_BASE_URL"] = lark_base_url
        return values


def serve_environment(runtime: Mapping[str, str]) -> dict[str, str]:
    """The parent's environment without any timeline or Lark setting, then ours."""
    inherited = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("TIMELINE_", "LARK_", "ANTHROPIC_"))
    }
    return {
        **inherited,
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
        "TIMELINE_LARK_ENABLED": "true",
        "TIMELINE_LARK_EVENT_INGESTION_ENABLED": "true",
        **runtime,
    }


class ServeProcess:
    """`timeline-pipeline serve` on a free loopback port; a context manager that always stops it.

    Its stderr (JSON logs: ids and reason codes, never payloads) goes to `log_path`, which a
    failing assertion may point at.
    """

    def __init__(
        self, runtime: Mapping[str, str], workdir: Path, *, executable: Path | None = None
    ) -> None:
        """`executable`: another installation's `timeline-pipeline` (default: this one's)."""
        self._env = serve_environment(runtime)
        self._workdir = workdir
        self._executable = executable or Path(sys.executable).parent / "timeline-pipeline"
        self.log_path = workdir / "serve.log"
        self._use_port(free_port())
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> ServeProcess:
        """Start it and wait until /healthz answers 200.

        The port is picked free before the process binds it, so another process may take it
        in between; an exit during start is retried on a new port (twice), then reported.
        """
        for attempt in range(START_ATTEMPTS):
            if attempt:
                self._use_port(free_port())
            if self._start_once():
                return self
        raise AssertionError(f"serve exited at start {START_ATTEMPTS} times; see {self.log_path}")

    def _use_port(self, port: int) -> None:
        self.port = port
        self.base_url = f"http://127.0.0.1:{port}"
        self.events_url = self.base_url + EVENTS_PATH

    def _start_once(self) -> bool:
        command = [
            str(self._executable),
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--log-level",
            "warning",
            "--json",
        ]
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                command,
                env=self._env,
                cwd=self._workdir,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if not self.running:
                return False
            if self.health_status() == 200:
                return True
            time.sleep(0.1)
        raise AssertionError(f"serve did not answer /healthz in {STARTUP_SECONDS:.0f} s")

    def health(self) -> tuple[int, dict[str, Any]] | None:
        """(status, body) of GET /healthz, or None when nothing answers."""
        try:
            response = httpx.get(f"{self.base_url}/healthz", timeout=10, trust_env=False)
        except httpx.HTTPError:
            return None
        return response.status_code, response.json()

    def health_status(self) -> int | None:
        answer = self.health()
        return None if answer is None else answer[0]

    def metrics(self) -> str:
        response = httpx.get(f"{self.base_url}/metrics", timeout=10, trust_env=False)
        response.raise_for_status()
        return response.text

    def kill(self) -> None:
        """SIGKILL: no shutdown hook runs, nothing queued in memory is written."""
        assert self._process is not None
        os.kill(self._process.pid, signal.SIGKILL)
        self._process.wait(timeout=STOP_SECONDS)

    def stop(self) -> None:
        process = self._process
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=STOP_SECONDS)

    def __enter__(self) -> ServeProcess:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def metric_value(text: str, name: str, **labels: str) -> float:
    """One sample of a Prometheus text exposition (0 when absent)."""
    wanted = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        series, _, value = line.rpartition(" ")
        metric, _, rest = series.partition("{")
        found = ",".join(sorted(part for part in rest.rstrip("}").split(",") if part))
        if metric == name and found == wanted:
            return float(value)
    return 0.0


# --- delivering callbacks -----------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """What one delivery got: an HTTP status and reason, or the transport error's type."""

    status: int | None
    reason: str | None = None
    error: str | None = None

    @property
    def accepted(self) -> bool:
        return self.status == 200

    @property
    def label(self) -> str:
        if self.status is None:
            return f"no answer ({self.error})"
        return f"{self.status} {self.reason}" if self.reason else str(self.status)


def post(client: httpx.Client, url: str, body: bytes, headers: Mapping[str, str]) -> Answer:
    try:
        response = client.post(url, content=body, headers=dict(headers))
    except httpx.HTTPError as exc:
        return Answer(None, error=type(exc).__name__)
    try:
        parsed = response.json()
    except ValueError:
        return Answer(response.status_code, error="not_json")
    reason = parsed.get("reason") if isinstance(parsed, dict) else None
    if reason is None and isinstance(parsed, dict):
        reason = parsed.get("status")
    return Answer(response.status_code, reason if isinstance(reason, str) else None)


def deliver(client: httpx.Client, url: str, payload: Mapping[str, Any], app: LarkApp) -> Answer:
    """Sign (and encrypt) the callback now, as Lark does on every attempt, and POST it."""
    signed = sign_payload(payload, encrypt_key=app.encrypt_key, encrypt_body=True)
    return post(client, url, signed.body, signed.headers)


def client(concurrency: int = 8) -> httpx.Client:
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    return httpx.Client(timeout=REQUEST_SECONDS, trust_env=False, limits=limits)


class Burst:
    """Deliver callbacks concurrently in the background, recording each one's answer.

    `before_send(index)` runs in the worker before each delivery and may block it (to hold
    part of a stream back until a fault has happened). The test thread meanwhile waits for
    a number of acknowledgements and injects its fault.
    """

    def __init__(
        self,
        url: str,
        app: LarkApp,
        payloads: Sequence[Mapping[str, Any]],
        *,
        concurrency: int = 8,
        before_send: Callable[[int], None] | None = None,
    ) -> None:
        self._url = url
        self._app = app
        self._payloads = payloads
        self._concurrency = concurrency
        self._before_send = before_send
        self._answers: list[Answer | None] = [None] * len(payloads)
        self._accepted = 0
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None

    def start(self) -> Burst:
        self._thread = threading.Thread(target=self._run, name="fault-burst", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            with client(self._concurrency) as http, ThreadPoolExecutor(self._concurrency) as pool:
                list(pool.map(lambda index: self._one(http, index), range(len(self._payloads))))
        except BaseException as exc:  # surfaced by join()
            self._failure = exc
        finally:
            with self._changed:
                self._changed.notify_all()

    def _one(self, http: httpx.Client, index: int) -> None:
        if self._before_send is not None:
            self._before_send(index)
        answer = deliver(http, self._url, self._payloads[index], self._app)
        with self._changed:
            self._answers[index] = answer
            self._accepted += answer.accepted
            self._changed.notify_all()

    def wait_accepted(self, count: int, timeout: float) -> bool:
        """True once `count` deliveries were acknowledged; False if the burst ended or timed out."""
        with self._changed:
            return self._changed.wait_for(
                lambda: self._accepted >= count or not self._alive(), timeout=timeout
            ) and (self._accepted >= count)

    def _alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def join(self, timeout: float = 300.0) -> list[Answer]:
        assert self._thread is not None
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the burst did not finish in time"
        if self._failure is not None:
            raise self._failure
        answers = list(self._answers)
        assert all(answer is not None for answer in answers)
        return [answer for answer in answers if answer is not None]


def labels(answers: Sequence[Answer]) -> Counter[str]:
    return Counter(answer.label for answer in answers)


def describe(counts: Counter[str]) -> str:
    return ", ".join(f"{count}x {label}" for label, count in sorted(counts.items()))


def wait_until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out after {timeout:.0f} s waiting for {what}"
        time.sleep(0.1)


def redeliver(
    url: str,
    app: LarkApp,
    events: Sequence[Mapping[str, Any]],
    answers: Sequence[Answer],
    *,
    within: float = 120.0,
) -> tuple[int, list[Answer]]:
    """Lark's retries: send every unacknowledged event again, in rounds, until each one is
    acknowledged (or `within` seconds pass). Returns (rounds, every answer of every round)."""
    pending = [i for i, answer in enumerate(answers) if not answer.accepted]
    rounds: list[Answer] = []
    deadline = time.monotonic() + within
    count = 0
    with client(4) as http:
        while pending:
            assert time.monotonic() < deadline, f"{len(pending)} events never acknowledged"
            if count:
                time.sleep(0.5)  # Lark backs off between attempts
            count += 1
            got = [(index, deliver(http, url, events[index], app)) for index in pending]
            rounds.extend(answer for _, answer in got)
            pending = [index for index, answer in got if not answer.accepted]
    return count, rounds
