"""Start and stop the Dagster processes a system test owns, with their output kept in files.

Each process starts in its own session, so its process group holds exactly what it spawned
(the code servers, the run workers); stopping signals that group and nothing else, then waits.
The logs are the only way to see why a tick or a run did not happen, so failures quote them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

import pytest

T = TypeVar("T")

STOP_GRACE_SECONDS = 20.0
TAIL_LINES = 40
LOG_HEADER = "last lines:"


def free_port() -> int:
    """A loopback port that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ManagedProcess:
    """One command run in its own process group; stdout and stderr go to `log_path`."""

    def __init__(
        self,
        name: str,
        command: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        log_path: Path,
    ) -> None:
        self.name = name
        self.log_path = log_path
        self._log = log_path.open("wb")
        self.process = subprocess.Popen(
            list(command),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def tail(self, lines: int = TAIL_LINES) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            return f"({self.name} log unreadable: {exc})"
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> int | None:
        """SIGTERM to the group this process leads, SIGKILL after a grace period."""
        if self.alive():
            self._signal_group(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=STOP_GRACE_SECONDS)
        # Children (code servers, run workers) may outlive their parent: the group goes too.
        self._signal_group(signal.SIGKILL)
        if self.alive():
            self.process.wait(timeout=STOP_GRACE_SECONDS)
        self._log.close()
        return self.process.returncode

    def _signal_group(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError):  # the group is gone already
            os.killpg(self.process.pid, sig)  # the group id is our child's pid (new session)


class Processes:
    """The processes of one test: started in order, stopped in reverse, logs quoted on failure."""

    def __init__(self) -> None:
        self._started: list[ManagedProcess] = []

    def start(self, process: ManagedProcess) -> ManagedProcess:
        self._started.append(process)
        return process

    def stop_all(self) -> None:
        for process in reversed(self._started):
            process.stop()

    def report(self) -> str:
        parts = []
        for process in self._started:
            state = "running" if process.alive() else f"exited {process.process.returncode}"
            parts.append(f"--- {process.name} ({state}), {LOG_HEADER}\n{process.tail()}")
        return "\n".join(parts)

    def check_alive(self) -> None:
        dead = [p for p in self._started if not p.alive()]
        if dead:
            pytest.fail(f"{dead[0].name} exited early\n{self.report()}", pytrace=False)


def wait_for(
    what: str,
    probe: Callable[[], T | None],
    *,
    timeout: float,
    processes: Processes,
    interval: float = 1.0,
    describe: Callable[[], str] | None = None,
) -> T:
    """Poll `probe` until it returns a truthy value; fail with `what`, the last state seen and
    the processes' log tails when `timeout` seconds pass first."""
    deadline = time.monotonic() + timeout
    while True:
        processes.check_alive()
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            seen = describe() if describe is not None else repr(value)
            pytest.fail(
                f"timed out after {timeout:.0f}s waiting for {what}; last seen: {seen}\n"
                f"{processes.report()}",
                pytrace=False,
            )
        time.sleep(interval)
