"""What can go wrong in the local Lark, settable up front or while a test is running.

Each fault mirrors a failure docs/design.md §11 asks the product to survive: flaky pages,
throttling with a retry hint, slowness, a chat the bot cannot read, and an item the normalizer
has to reject without losing the rest of its page.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field, fields
from typing import Any, Final

MALFORMED_ITEM_PREFIX: Final = "om_malformed_"


@dataclass
class SimulatorFaults:
    """Fault settings; assign attributes (or call `update`) at any time to change behaviour.

    Page numbers are 1-based and count pages of any history listing.
    """

    fail_page: int | None = None
    fail_page_attempts: int | None = None
    """Fail the first K requests for `fail_page`; None fails it every time."""
    fail_page_http_status: int = 500
    fail_page_code: int = 1000
    rate_limit_every: int | None = None
    """Answer every Nth authenticated API request with HTTP 429."""
    retry_after_seconds: int = 1
    latency_ms: int = 0
    permission_denied_chats: set[str] = field(default_factory=set)
    malformed_item_page: int | None = None

    def update(self, **changes: Any) -> None:
        names = {f.name for f in fields(self)}
        unknown = set(changes) - names
        if unknown:
            raise TypeError(f"unknown fault settings: {sorted(unknown)}")
        for name, value in changes.items():
            setattr(self, name, value)


class FaultCounters:
    """Per-server bookkeeping that the fault rules need (attempts per page, request sequence)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._page_attempts: Counter[tuple[str, int]] = Counter()
        self._api_requests = 0

    def should_fail_page(self, faults: SimulatorFaults, container_id: str, page: int) -> bool:
        if faults.fail_page is None or faults.fail_page != page:
            return False
        with self._lock:
            key = (container_id, page)
            self._page_attempts[key] += 1
            limit = faults.fail_page_attempts
            return limit is None or self._page_attempts[key] <= limit

    def should_rate_limit(self, faults: SimulatorFaults) -> bool:
        with self._lock:
            self._api_requests += 1
            every = faults.rate_limit_every
            return bool(every) and every is not None and self._api_requests % every == 0

    def reset(self) -> None:
        with self._lock:
            self._page_attempts.clear()
            self._api_requests = 0


def malformed_item(chat_id: str, page: int) -> dict[str, Any]:
    """An item a careful normalizer must reject: no sender, a non-numeric time, broken JSON."""
    return {
        "message_id": f"{MALFORMED_ITEM_PREFIX}{page}",
        "msg_type": "text",
        "create_time": "not-a-timestamp",
        "update_time": "",
        "deleted": False,
        "updated": False,
        "chat_id": chat_id,
        "body": {"content": "{not json"},
    }
