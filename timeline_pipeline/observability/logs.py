"""Structured logging: one JSON object per line, carrying ids and reason codes only.

The project's privacy rule (docs/http.md, "Logs") forbids message bodies and payloads in logs, so
call
sites pass ids and reason codes as fields and never `str(exc)` of an exception that may quote
its input (a database error can echo the parameters of the failed statement). Everything,
including uvicorn's and the Lark SDK's standard-library loggers, goes through one handler so
that a log line is always JSON when JSON was asked for.

Exceptions are the other way data leaks: a formatted traceback prints the exception's message
(which may quote a body or a token), and a rich traceback prints every frame's local variables
(the raw body chunks, the request headers). So no renderer ever sees an exception: whatever a
record carries in `exc_info` (a structlog call or uvicorn's own "Exception in ASGI application")
is reduced to `error_type` and `error_at`, the exception's class and the module, function and
line that raised it, which name code and never data.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import MutableMapping
from types import TracebackType
from typing import Any, Final, TextIO

import structlog

LARK_SDK_LOGGER: Final = "Lark"
"""lark-oapi logs through this logger and installs its own plain-text stdout handler."""

ADOPTED_LOGGERS: Final = (LARK_SDK_LOGGER, "uvicorn", "uvicorn.error", "uvicorn.access")
"""Libraries that may have installed handlers of their own (lark-oapi at import, uvicorn when
started with its default logging config); their records are routed to ours instead."""

_EXCEPTION_KEYS: Final = ("exc_info", "exception", "stack_info", "positional_args")
"""Event-dict keys that hold an exception, its formatted text, a stack, or a foreign record's
arguments: all of them can quote data, and none reaches a renderer."""


def exception_type_and_location(error: BaseException) -> dict[str, str]:
    """What may be logged about an exception: its class and where it was raised.

    The location is the innermost frame's module, function and line: code, never values.
    """
    fields = {"error_type": f"{type(error).__module__}.{type(error).__qualname__}"}
    tb = error.__traceback__
    if tb is not None:
        while tb.tb_next is not None:
            tb = tb.tb_next
        frame = tb.tb_frame
        module = frame.f_globals.get("__name__", "?")
        fields["error_at"] = f"{module}.{frame.f_code.co_name}:{tb.tb_lineno}"
    return fields


def _exception_of(exc_info: object) -> BaseException | None:
    if isinstance(exc_info, BaseException):
        return exc_info
    if isinstance(exc_info, tuple) and len(exc_info) == 3:
        error = exc_info[1]
        return error if isinstance(error, BaseException) else None
    if exc_info is True:  # `log.exception(...)` / `exc_info=True`: the exception being handled
        return sys.exc_info()[1]
    return None


def drop_exception_details(
    _logger: object, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """A structlog processor: `exc_info` becomes `error_type`/`error_at`; the rest is dropped."""
    error = _exception_of(event_dict.get("exc_info"))
    for key in _EXCEPTION_KEYS:
        event_dict.pop(key, None)
    if error is not None:
        for key, value in exception_type_and_location(error).items():
            event_dict.setdefault(key, value)
    return event_dict


_SHARED_PROCESSORS: Final[list[Any]] = [
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.add_log_level,
    structlog.stdlib.add_logger_name,
    structlog.processors.TimeStamper(fmt="iso", utc=True, key="ts"),
    drop_exception_details,
]


def configure_logging(
    *, json: bool = True, level: int | str = logging.INFO, stream: TextIO | None = None
) -> logging.Handler:
    """Route structlog and the standard library through one handler on the root logger.

    Returns the handler so that a caller (a test) can remove it again. Calling this twice replaces
    the previous configuration rather than adding a second handler.
    """
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if json
        else structlog.dev.ConsoleRenderer(colors=False, exception_formatter=_no_traceback)
    )
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *_SHARED_PROCESSORS,
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
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                drop_exception_details,  # again, right before rendering: nothing gets past it
                renderer,
            ],
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


def _no_traceback(_sio: TextIO, _exc_info: Any) -> None:
    """The console renderer's traceback printer, disabled (it would print frames' locals)."""


def route_uncaught_exceptions() -> None:
    """Exceptions nobody caught (main thread, other threads) are logged like any other record.

    Python's default hooks print a full traceback with the exception's message to stderr,
    past the logging configuration; these print its type and location only.
    """
    log = get_logger("timeline_pipeline.uncaught")

    def on_main(kind: type[BaseException], error: BaseException, tb: TracebackType | None) -> None:
        log.critical("uncaught_exception", **exception_type_and_location(error))

    def on_thread(args: threading.ExceptHookArgs) -> None:
        if args.exc_value is not None:
            thread = args.thread.name if args.thread is not None else None
            fields = exception_type_and_location(args.exc_value)
            log.error("uncaught_thread_exception", thread=thread, **fields)

    sys.excepthook = on_main
    threading.excepthook = on_thread


def _adopt(logger: logging.Logger) -> None:
    """Drop a library's own handlers so that its records are rendered like ours (JSON)."""
    for old in list(logger.handlers):
        logger.removeHandler(old)
    logger.propagate = True


def get_logger(name: str) -> Any:
    """A structlog logger; fields are keyword arguments, the event is a fixed phrase."""
    return structlog.stdlib.get_logger(name)
