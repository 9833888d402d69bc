"""The API's door: the token is checked before any byte of the body is read, and every body is
capped (SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from timeline_pipeline.api.gate import MAX_BODY_BYTES
from timeline_pipeline.curation.rules import SUMMARY_MAX_CHARS
from timeline_pipeline_tests.api.conftest import Served, bearer
from timeline_pipeline_tests.curation.support import (
    ROLLBACK,
    W1,
    entry_titled,
    say,
    snapshot,
    synthesize,
)

WS = "/api/workspaces/inc-1"


def body_routes(entry_id: int) -> list[tuple[str, str]]:
    return [
        ("POST", f"{WS}/entries"),
        ("PATCH", f"{WS}/entries/{entry_id}"),
        ("POST", f"{WS}/entries/{entry_id}/confirm"),
        ("POST", f"{WS}/entries/{entry_id}/hide"),
        ("POST", f"{WS}/entries/{entry_id}/restore"),
        ("PUT", f"{WS}/summary"),
        ("GET", f"{WS}/timeline"),
    ]


def asgi_request(
    served: Served, method: str, path: str, headers: dict[str, str], chunks: list[bytes]
) -> tuple[int, dict[str, Any], int]:
    """Drive the real app over ASGI: (status, JSON body, body chunks the app pulled)."""
    pulled = 0

    async def receive() -> dict[str, Any]:
        nonlocal pulled
        if pulled < len(chunks):
            pulled += 1
            return {
                "type": "http.request",
                "body": chunks[pulled - 1],
                "more_body": pulled < len(chunks),
            }
        await asyncio.sleep(3600)  # a client that stays connected and sends nothing more
        return {"type": "http.disconnect"}

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8080),
    }

    async def run() -> None:
        await asyncio.wait_for(served.client.app(scope, receive, send), timeout=30)

    asyncio.run(run())
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], json.loads(body), pulled


def test_without_a_token_no_byte_of_the_body_is_read_and_the_answer_is_401(
    served: Served,
) -> None:
    say(served.engine, W1, [ROLLBACK])
    synthesize(served.engine, W1)
    entry = entry_titled(served.engine, "rolled back")
    before = snapshot(served.engine)
    huge = str(60 * 1024 * 1024)
    for method, path in body_routes(entry.id):
        for credentials in ({}, {"Authorization": "Basic eDp5"}, bearer("tlp_not-a-token")):
            # A declared 60 MB body, of which nothing ever arrives: answered at once.
            headers = {**credentials, "content-type": "application/json", "content-length": huge}
            status, body, pulled = asgi_request(served, method, path, headers, [b"{" * 1024])
            assert (status, pulled) == (401, 0), (method, path, credentials)
            assert body["detail"]["code"] in {"unauthenticated", "invalid_token"}
        # Another workspace's token: 403, and still nothing of the body read.
        headers = {**bearer(served.other_token), "content-length": huge}
        assert asgi_request(served, method, path, headers, [b"x"])[::2] == (403, 0)
    assert snapshot(served.engine) == before


def test_a_malformed_body_without_a_token_is_401_not_a_validation_error(served: Served) -> None:
    say(served.engine, W1, [ROLLBACK])
    synthesize(served.engine, W1)
    entry = entry_titled(served.engine, "rolled back")
    for method, path in body_routes(entry.id):
        for raw in (b"{not json", b"\xff\xfe\x00", b'{"revision": "seven", "extra": 1}'):
            response = served.client.request(
                method, path, content=raw, headers={"Content-Type": "application/json"}
            )
            assert response.status_code == 401, (method, path, raw, response.text)
            assert response.json()["detail"]["code"] == "unauthenticated"
            assert response.headers["www-authenticate"] == "Bearer"


def test_every_api_body_is_capped_with_a_413_and_a_reason(served: Served) -> None:
    say(served.engine, W1, [ROLLBACK])
    synthesize(served.engine, W1)
    entry = entry_titled(served.engine, "rolled back")
    before = snapshot(served.engine)
    too_big = b" " * (MAX_BODY_BYTES + 1)
    for method, path in body_routes(entry.id):
        # Declared over the cap: refused before the body is read.
        headers = {**served.auth, "content-length": str(MAX_BODY_BYTES + 1)}
        status, body, pulled = asgi_request(served, method, path, headers, [b"{}"])
        assert (status, pulled) == (413, 0), (method, path)
        assert body["detail"]["code"] == "body_too_large" and body["detail"]["message"]
        # Chunked, no length: refused as soon as it passes the cap.
        chunks = [too_big[i : i + 65536] for i in range(0, len(too_big), 65536)]
        status, body, pulled = asgi_request(
            served, method, path, {**served.auth, "transfer-encoding": "chunked"}, chunks
        )
        assert status == 413 and body["detail"]["code"] == "body_too_large", (method, path)
        response = served.client.request(
            method,
            path,
            content=too_big,
            headers={**served.auth, "Content-Type": "application/json"},
        )
        assert response.status_code == 413, (method, path)
        assert response.json()["detail"]["code"] == "body_too_large"
    assert snapshot(served.engine) == before


def test_the_largest_valid_body_fits_under_the_cap(served: Served) -> None:
    # Every character escaped, as `json.dumps` writes it by default: six bytes each.
    content = json.dumps({"content": "é" * SUMMARY_MAX_CHARS, "revision": None}).encode()
    assert len(content) < MAX_BODY_BYTES
    response = served.client.put(
        f"{WS}/summary",
        content=content,
        headers={**served.auth, "Content-Type": "application/json"},
    )
    assert response.status_code == 200, response.text
    assert response.json()["content"] == "é" * SUMMARY_MAX_CHARS
