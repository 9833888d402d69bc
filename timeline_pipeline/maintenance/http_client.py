"""The driver's HTTP client of the loopback listener (docs/maintenance.md)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

import httpx

from timeline_pipeline.maintenance.driver import Reply, TransportError
from timeline_pipeline.maintenance.endpoint import ACTOR_HEADER, JOBS_PATH, LOOPBACK_HOST, cli_actor

CONNECT_TIMEOUT_SECONDS: Final = 2.0
READ_TIMEOUT_SECONDS: Final = 30.0
"""Longer than a batch can take (a statement timeout is at most 5 s) plus the commit."""


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

    def post(self, job_id: str, action: str, body: Mapping[str, Any]) -> Reply:
        return self._send("POST", f"{JOBS_PATH}/{job_id}/{action}", body)

    def _send(self, method: str, path: str, body: Mapping[str, Any] | None) -> Reply:
        try:
            response = self._client.request(method, path, json=body)
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
