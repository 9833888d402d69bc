"""In-memory wakeups: never block the sender, coalesce, drop and count when full."""

from __future__ import annotations

import threading
import time

from timeline_pipeline.receiver.wakeups import Delivery, Wakeup, WakeupHub

A = Wakeup("inc-1", "oc_a")
B = Wakeup("inc-1", "oc_b")
C = Wakeup("inc-2", "oc_a")


def test_without_subscribers_nothing_is_sent_or_dropped() -> None:
    assert WakeupHub().notify([A, B]) == Delivery()


def test_pending_wakeups_coalesce_and_a_full_inbox_drops() -> None:
    hub = WakeupHub()
    inbox = hub.subscribe(capacity=2)

    delivery = hub.notify([A, B, A, C])

    assert delivery == Delivery(sent=2, coalesced=1, dropped=1)
    assert inbox.drain() == [A, B]
    assert inbox.drain() == []
    assert hub.notify([C]) == Delivery(sent=1)


def test_every_subscriber_gets_its_own_bounded_copy() -> None:
    hub = WakeupHub()
    small, large = hub.subscribe(capacity=1), hub.subscribe(capacity=10)

    assert hub.notify([A, B]) == Delivery(sent=3, dropped=1)
    assert small.drain() == [A]
    assert large.drain() == [A, B]

    hub.unsubscribe(small)
    assert hub.notify([C]) == Delivery(sent=1)
    assert small.drain() == []


def test_drain_waits_for_the_first_wakeup_up_to_a_timeout() -> None:
    hub = WakeupHub()
    inbox = hub.subscribe()
    started = time.monotonic()
    assert inbox.drain(timeout=0.05) == []
    assert time.monotonic() - started >= 0.04

    timer = threading.Timer(0.05, lambda: hub.notify([A]))
    timer.start()
    try:
        assert inbox.drain(timeout=5) == [A]
    finally:
        timer.cancel()
