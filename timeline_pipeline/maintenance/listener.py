"""The maintenance listener's server: a separate FastAPI app (`create_maintenance_app`,
routes in `maintenance.routes`) on its own uvicorn server, bound to 127.0.0.1 only
(docs/maintenance.md).

`serve` starts it only when MAINTENANCE_PORT is set; an invalid port or a failed bind disables
this listener alone, with a logged error, and the receiver runs on. There is deliberately no
application authentication: access relies on being inside the container's network namespace,
so the address is fixed to loopback and not configurable, and every request from a non-loopback
peer is refused; none of these routes is mounted on the public router. On shutdown the listener
is drained (its in-flight batches commit) before the database pool closes.
"""

from __future__ import annotations

import math
import socket
import threading

from fastapi import FastAPI

from timeline_pipeline.maintenance import routes as maintenance_routes
from timeline_pipeline.maintenance.endpoint import (
    LOOPBACK_HOST,
    ListenerRefused,
    parse_port,
)
from timeline_pipeline.maintenance.service import JobService
from timeline_pipeline.observability.logs import get_logger
from timeline_pipeline.web.responses import SafeJSONResponse

log = get_logger("timeline_pipeline.maintenance.listener")


def create_maintenance_app(service: JobService) -> FastAPI:
    """The maintenance listener's app (docs/maintenance.md): its own routes only, never
    the public ones, and none of them on `create_app`'s router; loopback peers only."""
    app = FastAPI(
        title="timeline-pipeline maintenance",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        default_response_class=SafeJSONResponse,
    )
    app.state.maintenance = service
    maintenance_routes.install(app)
    app.include_router(maintenance_routes.router)
    return app


def loopback_socket(port: int, host: str = LOOPBACK_HOST) -> socket.socket:
    """A listening socket on loopback; any other address is refused before binding."""
    if host != LOOPBACK_HOST:
        raise ListenerRefused(f"the maintenance listener binds {LOOPBACK_HOST} only")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(64)
    except OSError as exc:
        sock.close()
        raise ListenerRefused(
            f"cannot bind {host}:{port}: {exc.strerror or type(exc).__name__}"
        ) from None
    sock.set_inheritable(True)
    return sock


class MaintenanceListener:
    """The listener's uvicorn server on its own thread and event loop.

    Signals stay with the receiver's server on the main thread; `serve` stops this one after
    the receiver has drained, and closes the database pool only after `stop` returns.
    """

    def __init__(self, app: FastAPI, sock: socket.socket, *, graceful_timeout: float) -> None:
        import uvicorn

        self._sock = sock
        self._graceful_timeout = graceful_timeout
        self.server = uvicorn.Server(
            uvicorn.Config(
                app,
                log_config=None,
                access_log=False,
                server_header=False,
                lifespan="off",
                timeout_graceful_shutdown=math.ceil(graceful_timeout),
            )
        )
        self._thread = threading.Thread(target=self._run, name="maintenance-listener", daemon=True)

    @property
    def port(self) -> int:
        return int(self._sock.getsockname()[1])

    def _run(self) -> None:
        self.server.run(sockets=[self._sock])

    def start(self, *, ready_timeout: float = 10.0) -> None:
        self._thread.start()
        deadline = threading.Event()
        for _ in range(int(ready_timeout * 100)):
            if self.server.started or not self._thread.is_alive():
                break
            deadline.wait(0.01)
        if not self.server.started:
            raise ListenerRefused("the maintenance listener did not start")
        log.info("maintenance.listener_started", host=LOOPBACK_HOST, port=self.port)

    def stop(self) -> None:
        """Stop accepting, let in-flight requests finish, and return when the server is down."""
        port = self.port
        self.server.should_exit = True
        self._thread.join(self._graceful_timeout + 5)
        self._sock.close()
        log.info("maintenance.listener_stopped", port=port)


def start_listener(
    service: JobService, raw_port: str | None, *, graceful_timeout: float = 30.0
) -> MaintenanceListener | None:
    """The running listener, or None when it is disabled (unset, invalid, or cannot bind);
    a failure is logged and disables this listener only."""
    try:
        port = parse_port(raw_port)
        if port is None:
            return None
        listener = MaintenanceListener(
            create_maintenance_app(service),
            loopback_socket(port),
            graceful_timeout=graceful_timeout,
        )
        listener.start()
    except ListenerRefused as exc:
        log.error("maintenance.listener_disabled", reason=str(exc))
        return None
    return listener
