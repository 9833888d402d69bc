"""The driver's HTTP client of the loopback listener (docs/maintenance.md).

Every request waits `read_timeout` for its answer, except one the driver gives a timeout of
its own: an advance waits as long as the job's batch may take (`advance_timeout`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

import httpx

from timeline_pipeline.maintenance.advance_timeout import BASE_SECONDS
from timeline_pipeline.maintenance.driver import Reply, TransportError
from timeline_pipeline.maintenance.endpoint import ACTOR_HEADER, JOBS_PATH, LOOPBACK_HOST, cli_actor

CONNECT_TIMEOUT_SECONDS: Final = 2.0
READ_TIMEOUT_SECONDS: Final = BASE_SECONDS
"""Requests that run no batch (read, create, pause, configure, resume, cancel): one short
transaction that never waits for a lock (docs/maintenance.md)."""


class HttpTransport:
    """Loopback only, whatever the environment: proxy variables are ignored (`trust_env`
    off) and redirects are refused, never followed."""

    def __init__(
        self, port: int, *, read_timeout: float = READ_TIMEOUT_SECONDS, actor: str | None = None
    ) -> None:
        self._client = httpx.Client(
            base_url=f"http://{LOOPBACK_HOST}:{port}",
            headers={ACTOR_HEADER: actor or cli_actor()},
            trust_env=False,
            follow_redirects=False,
            timeout=httpx.Timeout(read_timeout, connect=CONNECT_TIMEOUT_SECONDS),
        )

    def close(self) -> None:
        self._client.close()

    def create(self, body: Mapping[str, Any]) -> Reply:
        return self._send("POST", JOBS_PATH, body)

    def get(self, job_id: str) -> Reply:
        return self._send("GET", f"{JOBS_PATH}/{job_id}", None)

    def post(
        self, job_id: str, action: str, body: Mapping[str, Any], *, timeout: float | None = None
    ) -> Reply:
        return self._send("POST", f"{JOBS_PATH}/{job_id}/{action}", body, timeout)

    def _send(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None,
        read_timeout: float | None = None,
    ) -> Reply:
        timeout = (
            httpx.USE_CLIENT_DEFAULT
            if read_timeout is None
            else httpx.Timeout(read_timeout, connect=CONNECT_TIMEOUT_SECONDS)
        )
        try:
            response = self._client.request(method, path, json=body, timeout=timeout)
        except httpx.TransportError as exc:
            raise TransportError(type(exc).__name__) from None
        if response.is_redirect:
            return Reply(
                response.status_code,
                {
                    "detail": {
                        "code": "redirect",
                        "message": "the listener answered with a "
                        "redirect, which the driver refuses to follow",
                    }
                },
            )
        try:
            parsed = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            parsed = None
        if not isinstance(parsed, dict):
            parsed = {
                "detail": {
                    "code": "bad_answer",
                    "message": f"HTTP {response.status_code} without a JSON object",
                }
            }
        return Reply(response.status_code, parsed)
