"""Deliver simulated callbacks to the product's receiver the way Lark delivers them: imperfectly.

Lark's delivery is at-least-once, unordered and occasionally absent, and reconciliation exists
because of that. The pusher reproduces each imperfection on purpose (drops, duplicates, reordering,
concurrency) from a seeded RNG, so a test can assert exactly what the receiver should end up with.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from timeline_pipeline.lark.simulator.runner import is_loopback_host
from timeline_pipeline.lark.simulator.signing import sign_payload


def event_id_of(payload: Mapping[str, Any]) -> str:
    header = payload.get("header") or {}
    return str(header.get("event_id") or payload.get("challenge") or "")


def message_id_of(payload: Mapping[str, Any]) -> str | None:
    """The message an event is about (received, recalled, or the card that was clicked)."""
    event = payload.get("event") or {}
    message = event.get("message")
    if isinstance(message, Mapping):
        return str(message.get("message_id"))
    context = event.get("context")
    if isinstance(context, Mapping) and "open_message_id" in context:
        return str(context["open_message_id"])
    return str(event["message_id"]) if "message_id" in event else None


@dataclass
class PushReport:
    """What happened: ids in delivery order (duplicates appear twice) and HTTP outcomes."""

    sent: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    status_counts: Counter[int] = field(default_factory=Counter)
    errors: int = 0

    @property
    def all_accepted(self) -> bool:
        return self.errors == 0 and all(200 <= code < 300 for code in self.status_counts)

    def as_dict(self) -> dict[str, Any]:
        return {
            "sent": len(self.sent),
            "dropped": len(self.dropped),
            "duplicated": len(self.duplicated),
            "status_counts": {str(code): n for code, n in sorted(self.status_counts.items())},
            "errors": self.errors,
        }


class EventPusher:
    """POST signed (optionally encrypted) callbacks to a loopback receiver."""

    def __init__(
        self,
        receiver_url: str,
        *,
        encrypt_key: str | None = None,
        encrypt_body: bool | None = None,
        drop_ids: Collection[str] = (),
        drop_fraction: float = 0.0,
        duplicate_fraction: float = 0.0,
        shuffle: bool = False,
        seed: int = 0,
        concurrency: int = 1,
        timeout_seconds: float = 10.0,
    ) -> None:
        host = urlsplit(receiver_url).hostname or ""
        if not is_loopback_host(host):
            raise ValueError("the event pusher only delivers to a loopback receiver")
        if not 0.0 <= drop_fraction <= 1.0 or not 0.0 <= duplicate_fraction <= 1.0:
            raise ValueError("fractions must be within 0..1")
        self._url = receiver_url
        self._encrypt_key = encrypt_key
        self._encrypt_body = encrypt_body
        self._drop_ids = frozenset(drop_ids)
        self._drop_fraction = drop_fraction
        self._duplicate_fraction = duplicate_fraction
        self._shuffle = shuffle
        self._rng = random.Random(seed)  # noqa: S311 - reproducible test traffic, not secrets
        self._concurrency = max(1, concurrency)
        self._timeout = timeout_seconds

    def plan(
        self, events: Sequence[Mapping[str, Any]]
    ) -> tuple[list[Mapping[str, Any]], PushReport]:
        """Decide drops, duplicates and order without sending (deterministic for a seed)."""
        report = PushReport()
        queue: list[Mapping[str, Any]] = []
        for payload in events:
            event_id = event_id_of(payload)
            dropped_by_id = event_id in self._drop_ids or message_id_of(payload) in self._drop_ids
            if dropped_by_id or self._rng.random() < self._drop_fraction:
                report.dropped.append(event_id)
                continue
            queue.append(payload)
            if self._rng.random() < self._duplicate_fraction:
                queue.append(payload)
                report.duplicated.append(event_id)
        if self._shuffle:
            self._rng.shuffle(queue)
        return queue, report

    def push(self, events: Sequence[Mapping[str, Any]]) -> PushReport:
        queue, report = self.plan(events)
        lock = threading.Lock()
        with httpx.Client(timeout=self._timeout, trust_env=False) as client:

            def deliver(payload: Mapping[str, Any]) -> None:
                signed = sign_payload(
                    payload, encrypt_key=self._encrypt_key, encrypt_body=self._encrypt_body
                )
                try:
                    response = client.post(self._url, content=signed.body, headers=signed.headers)
                except httpx.HTTPError:
                    with lock:
                        report.errors += 1
                    return
                with lock:
                    report.sent.append(event_id_of(payload))
                    report.status_counts[response.status_code] += 1

            if self._concurrency == 1:
                for payload in queue:
                    deliver(payload)
            else:
                with ThreadPoolExecutor(max_workers=self._concurrency) as pool:
                    list(pool.map(deliver, queue))
        return report


@dataclass(frozen=True)
class Answer:
    status: int
    body: dict[str, Any]


def send_signed(
    receiver_url: str,
    payload: Mapping[str, Any],
    *,
    encrypt_key: str | None = None,
    timeout_seconds: float = 10.0,
) -> Answer:
    """POST one signed callback and return the receiver's answer (a card callback's toast)."""
    host = urlsplit(receiver_url).hostname or ""
    if not is_loopback_host(host):
        raise ValueError("the event pusher only delivers to a loopback receiver")
    signed = sign_payload(payload, encrypt_key=encrypt_key)
    with httpx.Client(timeout=timeout_seconds, trust_env=False) as client:
        response = client.post(receiver_url, content=signed.body, headers=signed.headers)
    try:
        body = response.json()
    except ValueError:
        body = {}
    return Answer(response.status_code, body if isinstance(body, dict) else {})
