"""Runs each benchmark as its own process and collects its rows.

A child process per benchmark keeps them apart (a crash, a leak or a hang loses one benchmark's
figures, not the others') and gives each a fresh interpreter, as `python -m bench.<name>.run`
would. The child writes its rows to a file only when it finished, so a missing file is a
failure, whatever the exit code says.
"""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from bench.report import Outcome
from bench.table import BenchRow, failure, rows_from_json

ROOT = Path(__file__).resolve().parents[1]
STOP_GRACE_SECONDS = 60.0
"""After SIGTERM, how long a stopped benchmark has to drop its database and stop its servers."""


@dataclass(frozen=True)
class Benchmark:
    name: str
    quick_args: tuple[str, ...] = ()
    """Arguments of the `--quick` run: the same figures on smaller inputs."""
    args: tuple[str, ...] = ()
    module: str = ""
    """Defaults to `bench.<name>.run`."""

    def command(self, rows_file: Path, *, quick: bool) -> list[str]:
        module = self.module or f"bench.{self.name}.run"
        extra = self.quick_args if quick else ()
        return [sys.executable, "-m", module, *self.args, *extra, "--rows", str(rows_file)]


BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark(
        "ingest",
        quick_args=(
            "--events",
            "1000",
            "--warmup",
            "200",
            "--wrk-seconds",
            "5",
            "--wrk-warmup-seconds",
            "2",
        ),
    ),
    Benchmark("reconcile", quick_args=("--messages", "2000")),
    Benchmark(
        "discovery",
        quick_args=(
            "--sizes",
            "10000,100000",
            "--workspaces",
            "500",
            "--uncovered",
            "50",
            "--repeat",
            "1",
        ),
    ),
    Benchmark("maintenance", quick_args=("--rows-count", "20000")),
    Benchmark("quality"),
    Benchmark("purge", quick_args=("--size", "50000")),
    Benchmark("callbacks", quick_args=("--cards", "60", "--raw-rows", "500")),
    Benchmark("ui", quick_args=("--entries", "50", "--evidence", "2000", "--repeat", "3")),
    Benchmark(
        "drain",
        quick_args=(
            "--workspaces",
            "20",
            "--backlog",
            "30",
            "--baseline-windows",
            "30",
            "--timeout",
            "720",
            "--steady-minutes",
            "0",
        ),
    ),
)


def select(names: Sequence[str], available: Sequence[Benchmark] = BENCHMARKS) -> list[Benchmark]:
    """The named benchmarks in the order given; every one when no name is given."""
    by_name = {b.name: b for b in available}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ValueError(f"unknown benchmark(s): {', '.join(unknown)}; known: {', '.join(by_name)}")
    return [by_name[n] for n in dict.fromkeys(names)] if names else list(available)


def run_benchmark(
    benchmark: Benchmark, *, quick: bool, timeout: float, echo: TextIO = sys.stderr
) -> Outcome:
    """One benchmark in a child process; its output goes to `echo` as it comes."""
    with tempfile.TemporaryDirectory(prefix="bench-rows-") as scratch:
        rows_file = Path(scratch) / "rows.json"
        began = time.perf_counter()
        process = subprocess.Popen(
            benchmark.command(rows_file, quick=quick),
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            start_new_session=True,  # its own process group: a stop reaches its servers too
        )
        tail: collections.deque[str] = collections.deque(maxlen=20)
        reader = threading.Thread(target=_relay, args=(process, echo, tail), daemon=True)
        reader.start()
        returncode: int | None
        try:
            returncode = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _stop(process)
            returncode = None
        reader.join(timeout=10)
        seconds = time.perf_counter() - began
        rows = outcome_rows(benchmark.name, rows_file, returncode, timeout, tail)
    return Outcome(
        name=benchmark.name,
        rows=rows,
        seconds=seconds,
        returncode=returncode,
        load_after=round(os.getloadavg()[0], 2),
    )


def run_all(
    benchmarks: Sequence[Benchmark], *, quick: bool, timeout: float, echo: TextIO = sys.stderr
) -> list[Outcome]:
    outcomes = []
    for benchmark in benchmarks:
        print(f"== bench {benchmark.name}", file=echo, flush=True)
        outcomes.append(run_benchmark(benchmark, quick=quick, timeout=timeout, echo=echo))
    return outcomes


def _relay(process: subprocess.Popen[str], echo: TextIO, tail: collections.deque[str]) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        echo.write(line)
        echo.flush()
        if line.strip():
            tail.append(line.strip())


def _stop(process: subprocess.Popen[str]) -> None:
    """SIGTERM to the benchmark's process group (its own children included), then SIGKILL."""
    for sig, grace in ((signal.SIGTERM, STOP_GRACE_SECONDS), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            continue
        return


def outcome_rows(
    name: str, rows_file: Path, returncode: int | None, timeout: float, tail: Sequence[str]
) -> list[BenchRow]:
    """The rows the benchmark wrote, or one failure row saying why there are none.

    The file decides, not the exit code: a benchmark exits 1 when it missed a target but still
    wrote its figures, and one that exits 0 without writing them did not do its job.
    """
    if returncode is None:
        return [failure(name, f"stopped after the {timeout:g} s time limit")]
    last = tail[-1] if tail else "no output"
    try:
        rows = rows_from_json(rows_file.read_text())
    except FileNotFoundError:
        return [failure(name, f"exit {returncode} without figures: {last}")]
    except (ValueError, TypeError) as exc:
        return [failure(name, f"unreadable rows ({type(exc).__name__}); exit {returncode}")]
    if not rows:
        return [failure(name, f"exit {returncode} with no rows")]
    return rows
