"""A throwaway PostgreSQL cluster that a test may crash: `initdb`, `pg_ctl start/stop`, removed.

The shared server at 127.0.0.1:5432 serves every other test, so it is never stopped; a test
that needs PostgreSQL to die makes its own cluster from the installed server binaries
(/usr/lib/postgresql/<version>/bin, newest version found). `initdb` refuses to run as root, so
when the tests run as root the binaries run as the `postgres` OS user, on a data directory that
user owns. The cluster listens on 127.0.0.1 only, on a free port, with trust authentication and
its socket in its own directory; `remove` stops it (immediate mode) and deletes everything.

`fsync` is off: the fault injected is a crash of the server processes (`pg_ctl stop -m
immediate`), not of the machine, so the operating system's cache survives it exactly as WAL
written before a commit's acknowledgement does, and the machine's disk is spared.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import psycopg

from timeline_pipeline_tests.support.processes import free_port

POSTGRES_ROOT: Final = Path("/usr/lib/postgresql")
OS_USER: Final = "postgres"
COMMAND_SECONDS: Final = 120
READY_SECONDS: Final = 60.0


class ClusterUnavailable(Exception):
    """initdb or pg_ctl cannot work on this machine; the message says exactly why."""


def _version_key(path: Path) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", path.parent.name))


def server_bin_dir(root: Path = POSTGRES_ROOT) -> Path:
    """The newest installed version's bin directory that has initdb and pg_ctl."""
    candidates = [
        path
        for path in root.glob("*/bin")
        if (path / "initdb").is_file() and (path / "pg_ctl").is_file()
    ]
    if not candidates:
        raise ClusterUnavailable(f"no PostgreSQL server binaries (initdb, pg_ctl) under {root}")
    return max(candidates, key=_version_key)


def _as_cluster_user(argv: Sequence[str]) -> list[str]:
    """Run as `postgres` when we are root (initdb refuses root), as ourselves otherwise."""
    if os.geteuid() != 0:
        return list(argv)
    runuser = shutil.which("runuser")
    if runuser is None:
        raise ClusterUnavailable("running as root and `runuser` is missing, so initdb cannot run")
    return [runuser, "-u", OS_USER, "--", *argv]


class ThrowawayCluster:
    """`create()`, `first_start()`; then `crash()` and `start()` at will; `remove()` always."""

    def __init__(self) -> None:
        self.bin_dir = server_bin_dir()
        self.root = Path(tempfile.mkdtemp(prefix="tp-fault-pg-"))
        self.data_dir = self.root / "data"
        self.socket_dir = self.root / "socket"
        self.server_log = self.root / "server.log"
        self.command_log = self.root / "commands.log"
        self.port = free_port()

    def url(self, database: str, driver: str = "postgresql+psycopg") -> str:
        return f"{driver}://postgres@127.0.0.1:{self.port}/{database}"

    def create(self) -> ThrowawayCluster:
        self.socket_dir.mkdir()
        if os.geteuid() == 0:
            try:
                user = pwd.getpwnam(OS_USER)
            except KeyError:
                raise ClusterUnavailable(
                    f"running as root and there is no `{OS_USER}` OS user to run initdb as"
                ) from None
            for path in (self.root, self.socket_dir):
                os.chown(path, user.pw_uid, user.pw_gid)
        self._run(
            "initdb",
            "-D",
            str(self.data_dir),
            "-A",
            "trust",
            "-U",
            "postgres",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        )
        return self

    def first_start(self, attempts: int = 3) -> None:
        """Start on the free port picked at creation; if another process took it meanwhile,
        pick another (the port is fixed from then on, so restarts come back on it)."""
        for attempt in range(attempts):
            if attempt:
                self.port = free_port()
            try:
                self.start()
                return
            except ClusterUnavailable:
                if attempt == attempts - 1:
                    raise

    def start(self) -> None:
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.socket_dir} "
            "-c fsync=off -c max_connections=60 -c shared_buffers=16MB"
        )
        self._run(
            "pg_ctl",
            "-D",
            str(self.data_dir),
            "-l",
            str(self.server_log),
            "-w",
            "-t",
            str(COMMAND_SECONDS),
            "-o",
            options,
            "start",
        )
        self._wait_ready()

    def crash(self) -> None:
        """`pg_ctl stop -m immediate`: every server process quits at once, no checkpoint; the
        next start replays the WAL (crash recovery)."""
        self._stop("immediate")

    def remove(self) -> None:
        """Stop it if it runs and delete the data; safe to call in any state, more than once."""
        with contextlib.suppress(ClusterUnavailable, subprocess.SubprocessError, OSError):
            if (self.data_dir / "postmaster.pid").exists():
                self._stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    def create_database(self, name: str) -> None:
        with psycopg.connect(self.url("postgres", "postgresql"), autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')

    def recovered_from_crash(self) -> bool:
        """The server log says the last start found an interrupted cluster and recovered."""
        text = self.server_log.read_text(errors="replace") if self.server_log.exists() else ""
        return "was interrupted" in text or "not properly shut down" in text

    def _stop(self, mode: str) -> None:
        self._run(
            "pg_ctl", "-D", str(self.data_dir), "-m", mode, "-w", "-t", str(COMMAND_SECONDS), "stop"
        )

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_SECONDS
        while True:
            try:
                with psycopg.connect(self.url("postgres", "postgresql"), connect_timeout=5):
                    return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise ClusterUnavailable(
                        f"the throwaway cluster did not accept connections; see {self.server_log}"
                    ) from None
                time.sleep(0.1)

    def _run(self, program: str, *args: str) -> None:
        argv = _as_cluster_user([str(self.bin_dir / program), *args])
        # Output goes to a file, never a pipe: the postmaster that pg_ctl starts inherits the
        # descriptors, and a pipe would keep this call waiting for as long as the server runs.
        with self.command_log.open("ab") as log:
            try:
                completed = subprocess.run(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    timeout=COMMAND_SECONDS,
                    check=False,
                    cwd=self.root,
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise ClusterUnavailable(f"{program} could not run: {exc}") from None
        if completed.returncode != 0:
            tail = self.command_log.read_text(errors="replace").strip().splitlines()[-3:]
            raise ClusterUnavailable(
                f"{program} exited with {completed.returncode}: {' | '.join(tail)}"
            )
