"""The Messages API call's own helpers (`llm/forced_tool.py`), without a server: the client with
the SDK's retries off, which failures are transient and how each is named, the server's
retry-after hint, and validation that lets only a count of errors out. The calls themselves run
against the loopback stand-in in `synthesis/test_claude.py` and `summary/test_claude.py`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import anthropic
import pytest
from pydantic import BaseModel

from timeline_pipeline.llm.forced_tool import (
    build_claude_client,
    failure_reason,
    is_transient,
    retry_after_seconds,
    retry_free_client,
    validated,
)

URL = "http://127.0.0.1/v1/messages"


def _status_error(status: int, headers: dict[str, str] | None = None) -> anthropic.APIStatusError:
    request = anthropic._base_client.httpx2.Request("POST", URL)  # type: ignore[attr-defined]
    response = anthropic._base_client.httpx2.Response(  # type: ignore[attr-defined]
        status, request=request, headers=headers or {}
    )
    return anthropic.APIStatusError("x", response=response, body=None)


def _connection_error(*, timeout: bool) -> anthropic.APIConnectionError:
    request = anthropic._base_client.httpx2.Request("POST", URL)  # type: ignore[attr-defined]
    if timeout:
        return anthropic.APITimeoutError(request=request)
    return anthropic.APIConnectionError(request=request)


def test_client_helper_turns_sdk_retries_off() -> None:
    client = build_claude_client("k", "http://127.0.0.1:9", timeout_seconds=7.5)
    assert client.max_retries == 0
    assert client.timeout == 7.5


def test_a_client_handed_in_loses_its_own_retries() -> None:
    eager = anthropic.Anthropic(api_key="k", base_url="http://127.0.0.1:9", max_retries=5)
    calm = build_claude_client("k", "http://127.0.0.1:9", timeout_seconds=1)

    assert retry_free_client(eager).max_retries == 0
    assert retry_free_client(calm) is calm


@pytest.mark.parametrize(
    ("status", "transient"),
    [
        *[(400, False), (401, False), (403, False), (404, False), (408, True), (413, False)],
        *[(429, True), (500, True), (502, True), (503, True), (504, True), (529, True)],
    ],
)
def test_which_statuses_are_transient(status: int, transient: bool) -> None:
    assert is_transient(_status_error(status)) is transient


def test_dropped_connections_and_timeouts_are_transient_other_errors_are_not() -> None:
    assert is_transient(_connection_error(timeout=False))
    assert is_transient(_connection_error(timeout=True))
    assert not is_transient(ValueError("not an API error"))


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (_connection_error(timeout=True), "timeout"),
        (_connection_error(timeout=False), "connection_error"),
        (_status_error(429), "rate_limited"),
        (_status_error(529), "overloaded"),
        (_status_error(500), "server_error"),
        (RuntimeError("boom"), "unexpected_error"),
    ],
)
def test_each_failure_has_a_stable_reason_code(error: BaseException, reason: str) -> None:
    assert failure_reason(error) == reason


def test_retry_after_reads_milliseconds_first_then_seconds_then_a_date() -> None:
    later = datetime.now(UTC) + timedelta(seconds=90)

    assert retry_after_seconds(_status_error(429, {"retry-after-ms": "1500"})) == 1.5
    assert retry_after_seconds(_status_error(429, {"retry-after": "7"})) == 7.0
    both = {"retry-after-ms": "250", "retry-after": "7"}
    assert retry_after_seconds(_status_error(429, both)) == 0.25
    dated = retry_after_seconds(_status_error(503, {"retry-after": format_datetime(later)}))
    assert dated is not None and 80 < dated <= 90
    past = format_datetime(datetime.now(UTC) - timedelta(hours=1))
    assert retry_after_seconds(_status_error(503, {"retry-after": past})) == 0.0


def test_no_usable_hint_is_none() -> None:
    assert retry_after_seconds(None) is None
    assert retry_after_seconds(_connection_error(timeout=True)) is None
    assert retry_after_seconds(_status_error(429)) is None
    assert retry_after_seconds(_status_error(429, {"retry-after": "soon"})) is None
    assert retry_after_seconds(_status_error(429, {"retry-after-ms": "x", "retry-after": "2"})) == 2


class _Answer(BaseModel):
    title: str
    count: int


def test_validation_gives_the_model_or_only_the_number_of_errors() -> None:
    secret = "card 4111 1111 1111 1111"

    assert validated(_Answer, {"title": "ok", "count": 2}) == (_Answer(title="ok", count=2), 0)
    parsed, errors = validated(_Answer, {"title": ["not", secret], "count": secret})
    assert parsed is None and errors == 2
