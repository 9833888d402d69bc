"""uvicorn's settings for `serve` (`http/server.py`): the product's logging and no access log,
no server header, the lifespan on so that the shutdown hook flushes the evidence writer, and a
graceful shutdown bounded by the given timeout."""

from __future__ import annotations

import logging

from timeline_pipeline.http.server import DEFAULT_GRACEFUL_TIMEOUT_SECONDS, server_config


def _app(scope: object, receive: object, send: object) -> None:
    """An ASGI application; never called here."""


def test_the_server_logs_our_way_and_shuts_down_gracefully() -> None:
    config = server_config(_app, host="127.0.0.1", port=8787, graceful_timeout=12)

    assert (config.host, config.port) == ("127.0.0.1", 8787)
    assert config.log_config is None
    assert config.log_level == logging.INFO
    assert config.access_log is False
    assert config.server_header is False
    assert config.lifespan == "on"
    assert config.timeout_graceful_shutdown == 12


def test_the_log_level_is_named_as_the_cli_takes_it() -> None:
    config = server_config(
        _app,
        host="127.0.0.1",
        port=0,
        graceful_timeout=DEFAULT_GRACEFUL_TIMEOUT_SECONDS,
        log_level="warning",
    )

    assert config.log_level == logging.WARNING
    assert config.timeout_graceful_shutdown == 30
