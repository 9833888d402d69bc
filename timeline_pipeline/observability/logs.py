"""Structured logging: one JSON object per line, carrying ids and reason codes only.

Seed 000 section 15 forbids message bodies and payloads in logs, so call sites pass ids and
reason codes as fields and never `str(exc)` of an exception that may quote its input (a database
error can echo the parameters of the failed statement). Everything, including uvicorn's and the
Lark SDK's standard-library loggers, goes through one handler so that a log line is always
JSON when JSON was asked for.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, Final, TextIO

import structlog

LARK_SDK_LOGGER: Final = "Lark"
"""lark-oapi logs through this logger and installs its own plain-text stdout handler."""

ADOPTED_LOGGERS: Final = (LARK_SDK_LOGGER, "uvicorn", "uvicorn.error", "uvicorn.access")
"""Libraries that may have installed handlers of their own (lark-oapi at import, uvicorn when
started with its default logging config); their records are routed to ours instead."""

_SHARED_PROCESSORS: Final[list[Any]] = [
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.add_log_level,
    structlog.stdlib.add_logger_name,
    structlog.processors.TimeStamper(fmt="iso", utc=True, key="ts"),
]


def configure_logging(
    *, json: bool = True, level: int | str = logging.INFO, stream: TextIO | None = None
) -> logging.Handler:
    """Route structlog and the standard library through one handler on the root logger.

    Returns the handler so that a caller (a test) can remove it again. Calling this twice replaces
    the previous configuration rather than adding a second handler.
    """
    renderer: Any = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *_SHARED_PROCESSORS,
            structlog.processors.format_exc_info,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=_SHARED_PROCESSORS,
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    root = logging.getLogger()
    for old in list(root.handlers):
        if getattr(old, "_timeline_pipeline", False):
            root.removeHandler(old)
    handler._timeline_pipeline = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level)
    for name in ADOPTED_LOGGERS:
        _adopt(logging.getLogger(name))
    return handler


def _adopt(logger: logging.Logger) -> None:
    """Drop a library's own handlers so that its records are rendered like ours (JSON)."""
    for old in list(logger.handlers):
        logger.removeHandler(old)
    logger.propagate = True


def get_logger(name: str) -> Any:
    """A structlog logger; fields are keyword arguments, the event is a fixed phrase."""
    return structlog.stdlib.get_logger(name)
