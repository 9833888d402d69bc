"""Processes a test starts and owns: each in its own session, its output kept in a file.

A process started in a new session leads its own process group, which then holds exactly what
it spawned (code servers, run workers, step processes): signalling that group reaches all of
them and nothing the test did not start.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

STOP_GRACE_SECONDS = 20.0
TAIL_LINES = 40


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

    def wait(self, timeout: float) -> int:
        return self.process.wait(timeout)

    def kill(self) -> int:
        """SIGKILL to the whole group at once, like a lost node; returns the exit status."""
        self._signal_group(signal.SIGKILL)
        return self.process.wait(timeout=STOP_GRACE_SECONDS)

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
