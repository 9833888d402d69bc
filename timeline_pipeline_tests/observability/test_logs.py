"""Structured logging: every line is one JSON object, whoever logged it."""

from __future__ import annotations

import io
import json
import logging
import sys
import threading
from collections.abc import Iterator

import lark_oapi  # noqa: F401 - installs the SDK's own stdout handler, which must be adopted
import pytest
import structlog

from timeline_pipeline.observability.logs import (
    LARK_SDK_LOGGER,
    configure_logging,
    get_logger,
    route_uncaught_exceptions,
)


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
        structlog.reset_defaults()


@pytest.mark.usefixtures("restore_logging")
def test_structlog_stdlib_and_sdk_records_all_come_out_as_json_lines() -> None:
    stream = io.StringIO()
    configure_logging(json=True, level=logging.INFO, stream=stream)

    get_logger("timeline_pipeline.test").info("evidence_written", workspace_id="inc-1", rows=2)
    logging.getLogger("uvicorn.error").warning("Started server process")
    logging.getLogger(LARK_SDK_LOGGER).error("handle event failed")
    get_logger("timeline_pipeline.test").debug("below_the_level")

    records = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [(r["event"], r["level"], r["logger"]) for r in records] == [
        ("evidence_written", "info", "timeline_pipeline.test"),
        ("Started server process", "warning", "uvicorn.error"),
        ("handle event failed", "error", LARK_SDK_LOGGER),
    ]
    assert records[0]["workspace_id"] == "inc-1"
    assert records[0]["rows"] == 2
    assert all(r["ts"].endswith("Z") for r in records)
    assert logging.getLogger(LARK_SDK_LOGGER).handlers == []


@pytest.mark.usefixtures("restore_logging")
def test_configuring_twice_replaces_rather_than_duplicates_the_handler() -> None:
    first, second = io.StringIO(), io.StringIO()
    configure_logging(stream=first)
    configure_logging(stream=second)

    get_logger("timeline_pipeline.test").warning("once")

    assert first.getvalue() == ""
    assert len(second.getvalue().splitlines()) == 1


@pytest.mark.usefixtures("restore_logging")
def test_console_rendering_for_humans() -> None:
    stream = io.StringIO()
    configure_logging(json=False, stream=stream)

    get_logger("timeline_pipeline.test").warning("lark_event_rejected", reason="bad_token")

    line = stream.getvalue()
    assert "lark_event_rejected" in line
    assert "reason=bad_token" in line
    with pytest.raises(json.JSONDecodeError):
        json.loads(line)


def _raise_with_payload(token: str) -> None:
    body = {"text": token}  # a local a rich traceback would print
    raise ValueError(f"could not handle {body}")


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "console"])
@pytest.mark.usefixtures("restore_logging")
def test_an_exception_is_logged_as_its_type_and_location_never_its_message_or_locals(
    as_json: bool,
) -> None:
    stream = io.StringIO()
    configure_logging(json=as_json, level=logging.INFO, stream=stream)
    secret = "zebra-quartz-7731"

    structured, uvicorn = get_logger("timeline_pipeline.test"), logging.getLogger("uvicorn.error")
    for attempt in range(4):
        try:
            _raise_with_payload(secret)
        except ValueError as error:
            if attempt == 0:
                structured.exception("handling_failed")
            elif attempt == 1:
                structured.error("handling_failed", exc_info=error)
            elif attempt == 2:
                uvicorn.error("Exception in ASGI application")
            else:  # what uvicorn does with an exception its app raised
                uvicorn.error("Exception in ASGI application", exc_info=error)

    logged = stream.getvalue()
    assert secret not in logged
    assert "Traceback" not in logged
    lines = logged.splitlines()
    assert len(lines) == 4
    located = [line for line in lines if "builtins.ValueError" in line]
    assert len(located) == 3  # the plain `error(...)` carries no exception
    assert all("test_logs._raise_with_payload:" in line for line in located)
    if as_json:
        record = json.loads(lines[0])
        assert record["error_type"] == "builtins.ValueError"
        assert "exc_info" not in record and "exception" not in record


@pytest.mark.usefixtures("restore_logging")
def test_uncaught_exceptions_of_threads_and_the_main_thread_are_logged_by_type_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)
    monkeypatch.setattr(threading, "excepthook", threading.excepthook)
    stream = io.StringIO()
    configure_logging(json=True, level=logging.INFO, stream=stream)
    route_uncaught_exceptions()
    secret = "zebra-quartz-7731"

    worker = threading.Thread(target=_raise_with_payload, args=(secret,), name="writer")
    worker.start()
    worker.join()
    try:
        _raise_with_payload(secret)
    except ValueError as error:
        sys.excepthook(type(error), error, error.__traceback__)

    assert secret not in stream.getvalue()
    records = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [(r["event"], r["error_type"], r.get("thread")) for r in records] == [
        ("uncaught_thread_exception", "builtins.ValueError", "writer"),
        ("uncaught_exception", "builtins.ValueError", None),
    ]
