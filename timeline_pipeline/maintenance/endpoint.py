"""Where the maintenance listener is: 127.0.0.1 only, on MAINTENANCE_PORT. Shared by the
listener and the driver's HTTP client, which must not import the server side to start fast."""

from __future__ import annotations

from typing import Final

LOOPBACK_HOST: Final = "127.0.0.1"
JOBS_PATH: Final = "/maintenance/jobs"


class ListenerRefused(Exception):
    """The listener cannot start as configured; the message is one line for the log."""


def parse_port(raw: str | None) -> int | None:
    """The configured port, None when unset; ListenerRefused for anything else than 1-65535."""
    if raw is None or raw.strip() == "":
        return None
    text = raw.strip()
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise ListenerRefused("MAINTENANCE_PORT must be a port number between 1 and 65535")
    return int(text)
