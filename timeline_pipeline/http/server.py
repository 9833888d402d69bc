"""How `serve`'s app runs under uvicorn, for `timeline-pipeline serve` and `demo --serve`
(docs/http.md): the product's logging, no access log, a graceful shutdown.

uvicorn is imported only when a server is configured, so that importing the CLI stays fast.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    import uvicorn

__all__ = ["DEFAULT_GRACEFUL_TIMEOUT_SECONDS", "server_config"]

DEFAULT_GRACEFUL_TIMEOUT_SECONDS: Final = 30


def server_config(
    application: Any, *, host: str, port: int, graceful_timeout: int, log_level: str = "info"
) -> uvicorn.Config:
    """uvicorn settings of the receiver: our logging, no access log, graceful shutdown.

    The lifespan runs so that the app's shutdown hook flushes the evidence writer after the
    in-flight requests have finished.
    """
    import uvicorn

    return uvicorn.Config(
        application,
        host=host,
        port=port,
        log_config=None,
        log_level=logging.getLevelName(log_level.upper()),
        access_log=False,
        server_header=False,
        lifespan="on",
        timeout_graceful_shutdown=graceful_timeout,
    )
