"""Where the maintenance listener is: 127.0.0.1 only, on MAINTENANCE_PORT. Shared by the
listener and the driver's HTTP client, which must not import the server side to start fast."""

from __future__ import annotations

from typing import Final

LOOPBACK_HOST: Final = "127.0.0.1"
JOBS_PATH: Final = "/maintenance/jobs"
ACTOR_HEADER: Final = "X-Maintenance-Actor"
"""Who drives the request (`cli:<OS user>` from the CLI), written into the audit trail; the
listener has no authentication, so this names the operator, it does not authorize them."""
ALLOWED_HOSTS: Final = frozenset({"127.0.0.1", "localhost"})
"""The only `Host` names the listener answers (with its own port): a browser page reaching it
by DNS rebinding sends its own host name, and is refused."""


def cli_actor() -> str:
    """`cli:<user>` from the OS user running the driver (docs/maintenance.md, "Who did it")."""
    import getpass

    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"cli:{user}"[:128]


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
