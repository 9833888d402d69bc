"""The facts about the machine and the tree that a figure means nothing without.

Only what explains a figure: cores, CPU model, memory, Python, PostgreSQL, the commit and the
load before the run. No host or user names.
"""

from __future__ import annotations

import os
import platform
import subprocess
from dataclasses import dataclass
from pathlib import Path

from bench.database import ADMIN_URL, server_version

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class MachineFacts:
    cores: int
    cpu_model: str
    memory_gib: float
    python: str
    postgresql: str
    system: str
    commit: str
    load_before: float


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_gib() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except (OSError, ValueError):
        pass
    return float("nan")


def _commit() -> str:
    """The commit the figures belong to, marked when the working tree differs from it."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{head} (with uncommitted changes)" if dirty else head


def _postgresql(admin_url: str) -> str:
    try:
        return server_version(admin_url)
    except Exception as exc:  # the run goes on: each benchmark reports its own failure
        return f"unavailable ({type(exc).__name__})"


def gather(admin_url: str = ADMIN_URL) -> MachineFacts:
    return MachineFacts(
        cores=os.cpu_count() or 1,
        cpu_model=_cpu_model(),
        memory_gib=_memory_gib(),
        python=platform.python_version(),
        postgresql=_postgresql(admin_url),
        system=f"{platform.system()} {platform.machine()}",
        commit=_commit(),
        load_before=round(os.getloadavg()[0], 2),
    )
