"""Start and stop the Dagster processes a system test owns, with their output kept in files.

Each process starts in its own session, so its process group holds exactly what it spawned
(the code servers, the run workers); stopping signals that group and nothing else, then waits.
The logs are the only way to see why a tick or a run did not happen, so failures quote them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest

from timeline_pipeline_tests.support.processes import ManagedProcess

T = TypeVar("T")

LOG_HEADER = "last lines:"


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
