"""A loopback stand-in of the Anthropic Messages API, scripted call by call.

Tests drive the real `anthropic` SDK against it, so that request building, authentication,
error mapping and retry behaviour are exercised for real without leaving 127.0.0.1. Each call
to `POST /v1/messages` consumes the next scripted reply (or the default once the script is
used up) and is recorded, headers and JSON body, for the test to inspect.

    with AnthropicStandIn(api_key="k", script=[overloaded(), tool_reply(cite_first_evidence)]) as s:
        client = build_claude_client("k", s.base_url, timeout_seconds=2)
        ...
        assert len(s.requests) == 2
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

__all__ = [
    "AnthropicStandIn",
    "ErrorReply",
    "ReceivedRequest",
    "Reply",
    "SlowReply",
    "TextReply",
    "ToolReply",
    "cite_first_evidence",
    "evidence_ids_in",
    "overloaded",
    "rate_limited",
    "server_error",
    "tool_reply",
]

TOOL_NAME = "record_entries"
ToolInputBuilder = Callable[[Mapping[str, Any]], Any]


@dataclass(frozen=True)
class ToolReply:
    """A `tool_use` answer whose input is computed from the request (or given outright)."""

    build: ToolInputBuilder
    tool_name: str = TOOL_NAME
    stop_reason: str = "tool_use"
    input_tokens: int = 120
    output_tokens: int = 40


@dataclass(frozen=True)
class TextReply:
    """A plain text answer: what a model does when it ignores the forced tool."""

    text: str = "I could not find anything."


@dataclass(frozen=True)
class ErrorReply:
    """An API error in Anthropic's envelope, with optional headers such as `retry-after`."""

    status: int
    error_type: str
    message: str = "stand-in error"
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SlowReply:
    """Waits before answering, to outlast the client's timeout."""

    delay_seconds: float
    then: Reply


Reply = ToolReply | TextReply | ErrorReply | SlowReply


@dataclass(frozen=True)
class ReceivedRequest:
    """One call as the stand-in saw it; header names are lower-cased."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    received_at: float = field(default_factory=time.monotonic)
    """When the call arrived (time.monotonic), so a test can tell how long a held call waited."""
    reply: Reply | None = None
    """What the stand-in answered (None when the key was refused)."""


def tool_reply(build: ToolInputBuilder | Mapping[str, Any], **options: Any) -> ToolReply:
    """A tool answer; pass a callable of the request body, or a fixed tool input."""
    if callable(build):
        return ToolReply(build=build, **options)
    fixed = dict(build)
    return ToolReply(build=lambda _body: fixed, **options)


def overloaded() -> ErrorReply:
    return ErrorReply(529, "overloaded_error", "Overloaded")


def rate_limited(retry_after_seconds: float | None = None) -> ErrorReply:
    headers = {} if retry_after_seconds is None else {"retry-after": f"{retry_after_seconds:g}"}
    return ErrorReply(429, "rate_limit_error", "Rate limited", headers)


def server_error(status: int = 500) -> ErrorReply:
    return ErrorReply(status, "api_error", "Internal server error")


_EVIDENCE_ID = re.compile(r'^\{"id":(\d+),', re.MULTILINE)


def evidence_ids_in(body: Mapping[str, Any]) -> list[int]:
    """The evidence ids listed in the request's user turn (context lines carry no id)."""
    ids: list[int] = []
    for message in body.get("messages", []):
        content = message.get("content")
        texts = (
            [content]
            if isinstance(content, str)
            else [block.get("text", "") for block in content or [] if isinstance(block, dict)]
        )
        for text in texts:
            ids.extend(int(match) for match in _EVIDENCE_ID.findall(text))
    return ids


def cite_first_evidence(body: Mapping[str, Any]) -> dict[str, Any]:
    """A valid answer: one finding citing the first evidence id of the request."""
    first = evidence_ids_in(body)[0]
    return {
        "entries": [{"title": "Stand-in finding", "category": "finding", "evidence_ids": [first]}]
    }


class AnthropicStandIn:
    """Runs the stand-in under uvicorn in a daemon thread on 127.0.0.1, on a free port."""

    def __init__(
        self,
        *,
        api_key: str = "test-key",
        script: Iterable[Reply] = (),
        default: Reply | None = None,
        model: str = "claude-standin",
    ) -> None:
        self.api_key = api_key
        self.model = model
        self.requests: list[ReceivedRequest] = []
        self._script = list(script)
        self._default = default or tool_reply({"entries": []})
        self._lock = threading.Lock()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self.base_url = ""

    # --- scripting -------------------------------------------------------------------------

    def reset(self, *, default: Reply | None = None) -> None:
        """Forget the script and the recorded requests, so one server can serve many tests."""
        with self._lock:
            self._script.clear()
            self.requests.clear()
            self._default = default or tool_reply({"entries": []})

    def enqueue(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def _next_locked(self) -> Reply:
        return self._script.pop(0) if self._script else self._default

    # --- the app ---------------------------------------------------------------------------

    def _authorized(self, request: Request) -> bool:
        bearer = request.headers.get("authorization", "")
        return bearer == f"Bearer {self.api_key}" or request.headers.get("x-api-key") == (
            self.api_key
        )

    async def _answer(self, reply: Reply, body: dict[str, Any]) -> JSONResponse:
        if isinstance(reply, SlowReply):
            await asyncio.sleep(reply.delay_seconds)
            return await self._answer(reply.then, body)
        if isinstance(reply, ErrorReply):
            payload = {
                "type": "error",
                "error": {"type": reply.error_type, "message": reply.message},
            }
            headers = {"request-id": f"req_standin_{len(self.requests)}", **reply.headers}
            return JSONResponse(payload, status_code=reply.status, headers=headers)
        if isinstance(reply, TextReply):
            content: list[dict[str, Any]] = [{"type": "text", "text": reply.text}]
            return self._message(content, "end_turn", 100, 10)
        tool_input = reply.build(body)
        content = [
            {
                "type": "tool_use",
                "id": "toolu_standin",
                "name": reply.tool_name,
                "input": tool_input,
            }
        ]
        return self._message(content, reply.stop_reason, reply.input_tokens, reply.output_tokens)

    def _message(
        self, content: list[dict[str, Any]], stop_reason: str, input_tokens: int, output_tokens: int
    ) -> JSONResponse:
        number = len(self.requests)
        return JSONResponse(
            {
                "id": f"msg_standin_{number}",
                "type": "message",
                "role": "assistant",
                "model": self.model,
                "content": content,
                "stop_reason": stop_reason,
                "stop_sequence": None,
                "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
            },
            headers={"request-id": f"req_standin_{number}"},
        )

    def _app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/messages")
        async def messages(request: Request) -> JSONResponse:
            body = json.loads(await request.body() or b"{}")
            headers = {name.lower(): value for name, value in request.headers.items()}
            authorized = self._authorized(request)
            with self._lock:
                # Taken with the recording, so that a request and its scripted reply pair up.
                reply = self._next_locked() if authorized else None
                self.requests.append(ReceivedRequest(request.url.path, headers, body, reply=reply))
            if reply is None:
                error = ErrorReply(401, "authentication_error", "invalid api key")
                return await self._answer(error, body)
            return await self._answer(reply, body)

        return app

    # --- lifecycle -------------------------------------------------------------------------

    def __enter__(self) -> AnthropicStandIn:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        port = self._socket.getsockname()[1]
        config = uvicorn.Config(
            self._app(), log_level="warning", lifespan="off", timeout_graceful_shutdown=1
        )
        self._server = uvicorn.Server(config)
        sockets = [self._socket]
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": sockets}, daemon=True
        )
        self._thread.start()
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError("stand-in server failed to start")
            threading.Event().wait(0.01)
        self.base_url = f"http://127.0.0.1:{port}"
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._socket is not None:
            self._socket.close()
