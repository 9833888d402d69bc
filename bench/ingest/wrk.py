"""The C load generator: wrk replaying pre-signed, pre-encrypted callbacks through `replay.lua`.

The Python load generator shares the machine's two cores with the receiver and spends nearly
as much CPU per event as the receiver does; wrk spends a few microseconds, so its figures show
what the receiver itself can take. wrk runs for a fixed time, so it is given more events than it
can send; the script stops a thread that runs out rather than send an event twice, and the
benchmark reports that as a failed run (raise the event supply).

wrk is a system package, not a Python one: when it is not installed the benchmark says so in a
row (with the command that installs it) instead of failing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from timeline_pipeline.lark.simulator.signing import (
    HEADER_NONCE,
    HEADER_SIGNATURE,
    HEADER_TIMESTAMP,
    SignedRequest,
)

SCRIPT: Final = Path(__file__).with_name("replay.lua")
INSTALL_HINT: Final = "apt-get install wrk"
REPORT_PREFIX: Final = "BENCH-WRK "


class WrkFailed(RuntimeError):
    """wrk ran but gave no report (it crashed, or the script failed); the message says why."""


@dataclass(frozen=True)
class WrkReport:
    """What `replay.lua`'s `done` printed: wrk's own counts and latency distribution."""

    requests: int
    """Responses wrk completed within the run."""
    seconds: float
    issued: int
    """Events the script handed to wrk: each must become one row (answered or still in flight
    when the run ended)."""
    accepted: int
    other: int
    """Responses that were not `200 accepted` (errors, refusals, the out-of-events probe)."""
    exhausted_threads: int
    errors: dict[str, int]
    p50_ms: float
    p90_ms: float
    p99_ms: float
    p99_9_ms: float
    max_ms: float
    mean_ms: float

    @property
    def accepted_per_second(self) -> float:
        return self.accepted / self.seconds if self.seconds > 0 else 0.0


def locate() -> str | None:
    """The wrk binary on PATH, or None."""
    return shutil.which("wrk")


def write_events(path: Path, requests: Sequence[SignedRequest]) -> None:
    """One callback a line for `replay.lua`: timestamp, nonce, signature, body (tab-separated)."""
    with path.open("wb") as out:
        for request in requests:
            if b"\t" in request.body or b"\n" in request.body:
                raise ValueError("an event body for wrk must be one line without tabs")
            fields = [
                request.headers[h] for h in (HEADER_TIMESTAMP, HEADER_NONCE, HEADER_SIGNATURE)
            ]
            out.write("\t".join(fields).encode() + b"\t" + request.body + b"\n")


def command(
    binary: str,
    url: str,
    events_file: Path,
    *,
    threads: int,
    connections: int,
    seconds: float,
    timeout_seconds: float = 10.0,
) -> list[str]:
    return [
        binary,
        f"-t{threads}",
        f"-c{connections}",
        f"-d{max(1, round(seconds))}s",
        "--timeout",
        f"{max(1, round(timeout_seconds))}s",
        "--latency",
        "-s",
        str(SCRIPT),
        url,
        "--",
        str(events_file),
        str(threads),
    ]


def run(
    binary: str,
    url: str,
    events_file: Path,
    *,
    threads: int,
    connections: int,
    seconds: float,
) -> WrkReport:
    args = command(
        binary, url, events_file, threads=threads, connections=connections, seconds=seconds
    )
    try:
        done = subprocess.run(
            args, capture_output=True, text=True, timeout=seconds + 60, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise WrkFailed(f"wrk did not finish within {seconds + 60:.0f} s") from exc
    return parse_report(done.stdout, returncode=done.returncode, stderr=done.stderr)


def parse_report(stdout: str, *, returncode: int = 0, stderr: str = "") -> WrkReport:
    """The script's report line; WrkFailed with wrk's last words when there is none."""
    lines = [line for line in stdout.splitlines() if line.startswith(REPORT_PREFIX)]
    if not lines:
        last = (stderr.strip() or stdout.strip() or "no output").splitlines()[-1][:200]
        raise WrkFailed(f"wrk exited {returncode} without a report: {last}")
    data: dict[str, Any] = json.loads(lines[-1][len(REPORT_PREFIX) :])
    latency = data["latency_us"]
    return WrkReport(
        requests=int(data["requests"]),
        seconds=data["duration_us"] / 1e6,
        issued=int(data["issued"]),
        accepted=int(data["accepted"]),
        other=int(data["other"]),
        exhausted_threads=int(data["exhausted_threads"]),
        errors={k: int(v) for k, v in data["errors"].items()},
        p50_ms=latency["p50"] / 1000,
        p90_ms=latency["p90"] / 1000,
        p99_ms=latency["p99"] / 1000,
        p99_9_ms=latency["p99_9"] / 1000,
        max_ms=latency["max"] / 1000,
        mean_ms=latency["mean"] / 1000,
    )
