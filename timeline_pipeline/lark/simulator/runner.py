"""Run the local Lark under uvicorn in a background thread, bound to loopback only.

Tests and the demo need a real HTTP server (the product's lark-oapi client speaks HTTP, not ASGI),
but one that can never be reached from another host and that starts and stops with a `with`.
"""

from __future__ import annotations

import ipaddress
import threading
import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Self

import uvicorn

from timeline_pipeline.lark.simulator.faults import SimulatorFaults
from timeline_pipeline.lark.simulator.server import ROUTE_LIST_MESSAGES, SimulatorState, create_app
from timeline_pipeline.lark.simulator.store import ChatStore

DEFAULT_APP_ID: Final = "cli_sim_app"
DEFAULT_APP_SECRET: Final = "sim-app-secret"  # noqa: S105 - a loopback stand-in's well-known secret
_STARTUP_TIMEOUT_SECONDS: Final = 10.0


def is_loopback_host(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and `localhost`; everything else could be reached remotely."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class _Running(ABC):
    """`with server:` starts it and stops it however the block ends."""

    @abstractmethod
    def start(self) -> Self: ...

    @abstractmethod
    def stop(self) -> None: ...

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class LoopbackUvicorn(_Running):
    """Any ASGI app under uvicorn in a daemon thread on a loopback port (0 picks a free one).

    Shared by the simulator and by tests that need a real HTTP receiver for pushed events.
    """

    def __init__(self, app: Callable[..., Any], *, host: str = "127.0.0.1", port: int = 0) -> None:
        if not is_loopback_host(host):
            raise ValueError("only loopback addresses may be bound")
        self._config = uvicorn.Config(
            app, host=host, port=port, log_level="warning", access_log=False, lifespan="off"
        )
        self._host = host
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._port: int | None = None

    @property
    def base_url(self) -> str:
        if self._port is None:
            raise RuntimeError("the server is not running")
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"http://{host}:{self._port}"

    def start(self) -> LoopbackUvicorn:
        server = uvicorn.Server(self._config)
        thread = threading.Thread(target=server.run, name="loopback-uvicorn", daemon=True)
        thread.start()
        deadline = time.monotonic() + _STARTUP_TIMEOUT_SECONDS
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                server.should_exit = True
                raise RuntimeError("the loopback server did not start")
            time.sleep(0.01)
        sockets = [sock for listener in server.servers for sock in listener.sockets]
        self._port = int(sockets[0].getsockname()[1])
        self._server, self._thread = server, thread
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=_STARTUP_TIMEOUT_SECONDS)
        self._server = self._thread = None
        self._port = None


class SimulatorServer(_Running):
    """`with SimulatorServer(store=...) as lark: LarkClient(... base_url=lark.base_url ...)`."""

    def __init__(
        self,
        store: ChatStore | None = None,
        *,
        chats_path: str | Path | None = None,
        faults: SimulatorFaults | None = None,
        app_id: str = DEFAULT_APP_ID,
        app_secret: str = DEFAULT_APP_SECRET,
        apps: Mapping[str, str] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        token_ttl_seconds: int = 7200,
    ) -> None:
        if not is_loopback_host(host):
            raise ValueError("the local Lark binds loopback only")
        if store is None:
            store = ChatStore.load_jsonl(chats_path) if chats_path else ChatStore()
        self.app_id = app_id
        self.app_secret = app_secret
        self.state = SimulatorState(
            store,
            faults or SimulatorFaults(),
            {app_id: app_secret, **(apps or {})},
            token_ttl_seconds=token_ttl_seconds,
        )
        self._host = host
        self._port = port
        self._uvicorn: LoopbackUvicorn | None = None

    @property
    def store(self) -> ChatStore:
        return self.state.store

    @property
    def faults(self) -> SimulatorFaults:
        return self.state.faults

    @property
    def request_counts(self) -> Counter[str]:
        """Requests per route (`"GET /open-apis/im/v1/messages"`), faulted ones included."""
        return self.state.request_counts()

    @property
    def page_requests(self) -> int:
        return self.request_counts[ROUTE_LIST_MESSAGES]

    @property
    def base_url(self) -> str:
        if self._uvicorn is None:
            raise RuntimeError("the simulator is not running")
        return self._uvicorn.base_url

    def invalidate_tokens(self) -> None:
        self.state.invalidate_tokens()

    def reset_counts(self) -> None:
        self.state.reset_counts()

    def start(self) -> SimulatorServer:
        self._uvicorn = LoopbackUvicorn(create_app(self.state), host=self._host, port=self._port)
        self._uvicorn.start()
        return self

    def stop(self) -> None:
        if self._uvicorn is not None:
            self._uvicorn.stop()
        self._uvicorn = None
