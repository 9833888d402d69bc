"""`serve` and `review-cards work` as real processes against a local Lark in the test."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from timeline_pipeline_tests.support.processes import ManagedProcess, free_port

TOKEN = "review-cards-verification-token"
ENCRYPT_KEY = "review-cards-encrypt-key"
BIN = Path(sys.executable).parent / "timeline-pipeline"


def env(db_url: str, lark_base: str, app_id: str, secret: str, **extra: str) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("TIMELINE_", "LARK_"))}
    return {
        **keep,
        "TIMELINE_DATABASE_URL": db_url,
        "LARK_VERIFICATION_TOKEN": TOKEN,
        "LARK_ENCRYPT_KEY": ENCRYPT_KEY,
        "LARK_APP_ID": app_id,
        "LARK_APP_SECRET": secret,
        "LARK_BASE_URL": lark_base,
        "NO_PROXY": "127.0.0.1,localhost",
        "TIMELINE_LARK_REVIEW_CARDS_ENABLED": "true",
        "TIMELINE_LARK_REVIEW_CARD_POLL_INTERVAL": "100ms",
        **extra,
    }


@contextmanager
def serving(tmp: Path, name: str, environ: dict[str, str], *flags: str) -> Iterator[str]:
    """A `serve` process; yields its `/lark/events` URL once `/healthz` answers."""
    port = free_port()
    server = ManagedProcess(
        name,
        [str(BIN), "serve", "--port", str(port), "--log-level", "warning", *flags],
        cwd=tmp,
        env=environ,
        log_path=tmp / f"{name}.log",
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            assert server.alive(), server.tail()
            assert time.monotonic() < deadline, server.tail()
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/lark/events"
    finally:
        server.stop()


def worker(tmp: Path, name: str, environ: dict[str, str]) -> ManagedProcess:
    return ManagedProcess(
        name, [str(BIN), "review-cards", "work"], cwd=tmp, env=environ, log_path=tmp / f"{name}.log"
    )


def wait_for(condition: object, timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
