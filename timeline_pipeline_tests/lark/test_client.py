"""The real LarkClient (lark-oapi underneath) against the real local Lark over loopback HTTP."""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import structlog.testing

from timeline_pipeline.lark.client import (
    LarkApiError,
    LarkClient,
    LarkClientConfig,
    LarkPermissionError,
    LarkTokenError,
    RateLimiter,
    shared_rate_limiter,
)
from timeline_pipeline.lark.simulator import ChatStore, SimulatorServer, make_chat_messages
from timeline_pipeline.lark.simulator.server import (
    ROUTE_BOT_INFO,
    ROUTE_LIST_MESSAGES,
    ROUTE_TOKEN,
    ROUTE_USERS_BATCH,
)
from timeline_pipeline.retry import RetryPolicy

START = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
CHAT = "oc_incident_1"
SECRET = "test-secret"


class SleepRecorder:
    """Stands in for time.sleep in the retry loop: records the waits instead of taking them."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


@pytest.fixture
def app_id() -> str:
    # lark-oapi caches tenant tokens process-wide by app_id: a fresh id per test isolates them.
    return f"cli_test_{uuid.uuid4().hex[:12]}"


@pytest.fixture
def sim(app_id: str) -> Iterator[SimulatorServer]:
    store = ChatStore(make_chat_messages(CHAT, START, 130, seed=7, thread_every=0))
    with SimulatorServer(store, app_id=app_id, app_secret=SECRET) as server:
        yield server


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()


def make_client(
    server: SimulatorServer,
    sleeps: SleepRecorder,
    *,
    max_attempts: int = 5,
    max_retry_after_seconds: float = 30.0,
    **overrides: Any,
) -> LarkClient:
    config = LarkClientConfig(
        app_id=server.app_id,
        app_secret=server.app_secret,
        base_url=server.base_url,
        retry=RetryPolicy(
            attempts=max_attempts,
            backoff_base=0.001,
            backoff_cap=0.01,
            max_retry_after=max_retry_after_seconds,
        ),
        timeout_seconds=5.0,
    )
    limiter = overrides.pop("rate_limiter", None)
    return LarkClient(replace(config, **overrides), rate_limiter=limiter, sleep=sleeps)


def all_items(
    client: LarkClient, start: datetime = START, end: datetime | None = None
) -> list[Any]:
    end = end or START + timedelta(days=1)
    return [item for page in client.iter_chat_messages(CHAT, start, end) for item in page.items]


# ------------------------------------------------------------------ history


def test_follows_every_page_and_keeps_raw_items(
    sim: SimulatorServer, sleeps: SleepRecorder
) -> None:
    client = make_client(sim, sleeps)

    pages = list(client.iter_chat_messages(CHAT, START, START + timedelta(days=1)))

    assert [(p.page_number, len(p.items), p.has_more) for p in pages] == [
        (1, 50, True),
        (2, 50, True),
        (3, 30, False),
    ]
    assert pages[-1].page_token is None
    assert all(p.page_token and not p.page_token.isdigit() for p in pages[:-1])
    assert [i for p in pages for i in p.items] == sim.store.messages(CHAT)
    assert sim.request_counts[ROUTE_LIST_MESSAGES] == 3
    assert sleeps.calls == []


def test_chat_listing_hides_thread_replies_that_the_thread_listing_returns(
    app_id: str, sleeps: SleepRecorder
) -> None:
    messages = make_chat_messages(CHAT, START, 30, seed=3, thread_every=10)
    replies = [m for m in messages if m.get("root_id")]
    assert len(replies) == 3
    with SimulatorServer(ChatStore(messages), app_id=app_id, app_secret=SECRET) as server:
        client = make_client(server, sleeps)

        listed = all_items(client)
        thread_id = replies[0]["thread_id"]
        in_thread = [i for p in client.iter_thread_messages(thread_id) for i in p.items]

    assert {m["message_id"] for m in listed} == {
        m["message_id"] for m in messages if not m.get("root_id")
    }
    assert [m["message_id"] for m in in_thread] == [
        replies[0]["message_id"],
        replies[0]["root_id"],
    ]


def test_thread_listing_is_newest_first_and_stops_at_not_before(
    app_id: str, sleeps: SleepRecorder
) -> None:
    root = make_chat_messages(CHAT, START, 1, seed=1, thread_every=0)[0]
    root["thread_id"] = "omt_long"
    replies = [
        {
            **root,
            "message_id": f"om_reply_{n:03d}",
            "root_id": root["message_id"],
            "parent_id": root["message_id"],
            "create_time": str(int((START + timedelta(minutes=n + 1)).timestamp() * 1000)),
        }
        for n in range(60)
    ]
    with SimulatorServer(ChatStore([root, *replies]), app_id=app_id, app_secret=SECRET) as server:
        client = make_client(server, sleeps, page_size=10)
        not_before = START + timedelta(minutes=46)

        pages = list(client.iter_thread_messages("omt_long", not_before=not_before))
        fetched = server.request_counts[ROUTE_LIST_MESSAGES]

    items = [i for p in pages for i in p.items]
    assert [i["message_id"] for i in items] == [f"om_reply_{n:03d}" for n in range(59, 44, -1)]
    assert fetched == 2
    assert pages[-1].has_more is False


def test_start_and_end_bound_the_chat_listing_at_second_granularity(
    sim: SimulatorServer, sleeps: SleepRecorder
) -> None:
    messages = sim.store.messages(CHAT)
    low, high = messages[40], messages[59]
    start = datetime.fromtimestamp(int(low["create_time"]) / 1000, UTC)
    end = datetime.fromtimestamp(int(high["create_time"]) / 1000, UTC)

    got = all_items(make_client(sim, sleeps), start, end)

    ids = [i["message_id"] for i in got]
    assert ids[0] == low["message_id"]
    assert ids[-1] == high["message_id"]
    assert len(ids) == 20


def test_a_message_edited_after_listing_shows_up_edited_on_the_next_listing(
    sim: SimulatorServer, sleeps: SleepRecorder
) -> None:
    client = make_client(sim, sleeps)
    first = all_items(client)
    target = first[10]["message_id"]

    sim.store.edit_message(target, {"text": "corrected: rollback done at 10:02"})
    sim.store.recall_message(first[11]["message_id"])
    second = {i["message_id"]: i for i in all_items(client)}

    assert first[10]["updated"] is False
    assert second[target]["updated"] is True
    assert json.loads(second[target]["body"]["content"])["text"].startswith("corrected")
    assert int(second[target]["update_time"]) > int(first[10]["update_time"])
    assert second[first[11]["message_id"]]["deleted"] is True


def test_malformed_items_reach_the_caller_untouched(
    sim: SimulatorServer, sleeps: SleepRecorder
) -> None:
    sim.faults.malformed_item_page = 2

    pages = list(make_client(sim, sleeps).iter_chat_messages(CHAT, START, START + timedelta(1)))

    assert len(pages[1].items) == 51
    assert pages[1].items[-1]["message_id"] == "om_malformed_2"
    assert pages[1].items[-1]["create_time"] == "not-a-timestamp"


def test_naive_datetimes_are_refused(sim: SimulatorServer, sleeps: SleepRecorder) -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        next(make_client(sim, sleeps).iter_chat_messages(CHAT, datetime(2024, 5, 1), START))


# ------------------------------------------------------------------ failures and retries


def test_a_page_failing_twice_with_500_is_retried_then_succeeds(
    sim: SimulatorServer, sleeps: SleepRecorder
) -> None:
    sim.faults.update(fail_page=2, fail_page_attempts=2)

    items = all_items(make_client(sim, sleeps))

    assert len(items) == 130
    assert sim.request_counts[ROUTE_LIST_MESSAGES] == 5
    assert len(sleeps.calls) == 2
    assert all(0 <= s <= 0.01 for s in sleeps.calls)


def test_a_page_failing_beyond_max_attempts_raises(
    sim: SimulatorServer, sleeps: SleepRecorder
) -> None:
    sim.faults.update(fail_page=2, fail_page_http_status=503)
    client = make_client(sim, sleeps, max_attempts=3)
    pages = client.iter_chat_messages(CHAT, START, START + timedelta(days=1))

    assert len(next(pages).items) == 50
    with pytest.raises(LarkApiError) as caught:
        next(pages)

    assert caught.value.http_status == 503
    assert caught.value.retryable is True
    assert sim.request_counts[ROUTE_LIST_MESSAGES] == 1 + 3
    assert len(sleeps.calls) == 2


def test_a_lark_client_error_code_is_not_retried(
    sim: SimulatorServer, sleeps: SleepRecorder
) -> None:
    sim.faults.update(fail_page=1, fail_page_http_status=400, fail_page_code=230001)

    with pytest.raises(LarkApiError) as caught:
        all_items(make_client(sim, sleeps))

    assert (caught.value.code, caught.value.retryable) == (230001, False)
    assert sim.request_counts[ROUTE_LIST_MESSAGES] == 1
    assert sleeps.calls == []


def test_429_retry_after_is_honoured(sim: SimulatorServer, sleeps: SleepRecorder) -> None:
    sim.faults.update(rate_limit_every=2, retry_after_seconds=3)

    items = all_items(make_client(sim, sleeps))

    assert len(items) == 130
    assert sleeps.calls and all(s == 3.0 for s in sleeps.calls)


def test_429_retry_after_is_capped(sim: SimulatorServer, sleeps: SleepRecorder) -> None:
    sim.faults.update(rate_limit_every=2, retry_after_seconds=120)

    items = all_items(make_client(sim, sleeps, max_retry_after_seconds=0.5))

    assert len(items) == 130
    assert sleeps.calls and all(s == 0.5 for s in sleeps.calls)


def test_a_chat_the_bot_cannot_read_raises_permission_error_at_once(
    sim: SimulatorServer, sleeps: SleepRecorder
) -> None:
    sim.faults.permission_denied_chats.add(CHAT)

    with pytest.raises(LarkPermissionError) as caught:
        all_items(make_client(sim, sleeps))

    assert caught.value.code == 230002
    assert sim.request_counts[ROUTE_LIST_MESSAGES] == 1
    assert sleeps.calls == []


def test_wrong_app_secret_is_a_permission_error(
    sim: SimulatorServer, sleeps: SleepRecorder
) -> None:
    with pytest.raises(LarkPermissionError) as caught:
        all_items(make_client(sim, sleeps, app_secret="wrong"))

    assert caught.value.code == 10014
    assert sim.request_counts[ROUTE_LIST_MESSAGES] == 0


def test_an_invalidated_token_is_refreshed_once_transparently(
    sim: SimulatorServer, sleeps: SleepRecorder
) -> None:
    client = make_client(sim, sleeps)
    assert len(all_items(client)) == 130
    assert sim.request_counts[ROUTE_TOKEN] == 1

    sim.invalidate_tokens()
    assert len(all_items(client)) == 130

    assert sim.request_counts[ROUTE_TOKEN] == 2
    assert sim.request_counts[ROUTE_LIST_MESSAGES] == 3 + 1 + 3
    assert sleeps.calls == []


def test_a_token_rejected_even_after_refresh_raises_token_error(
    app_id: str, sleeps: SleepRecorder
) -> None:
    store = ChatStore(make_chat_messages(CHAT, START, 3, seed=1))
    with SimulatorServer(store, app_id=app_id, app_secret=SECRET, token_ttl_seconds=0) as server:
        with pytest.raises(LarkTokenError):
            all_items(make_client(server, sleeps))
        assert server.request_counts[ROUTE_TOKEN] == 2
        assert server.request_counts[ROUTE_LIST_MESSAGES] == 2


def test_timeouts_are_retried_then_reported(sim: SimulatorServer, sleeps: SleepRecorder) -> None:
    all_items(make_client(sim, sleeps))  # cache the token first
    sim.faults.latency_ms = 400

    with pytest.raises(LarkApiError) as caught:
        all_items(make_client(sim, sleeps, timeout_seconds=0.1, max_attempts=2))

    assert caught.value.retryable is True
    assert "Timeout" in caught.value.msg
    assert len(sleeps.calls) == 1


def test_a_refused_connection_is_retried_then_reported(app_id: str, sleeps: SleepRecorder) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = LarkClientConfig(
        app_id=app_id,
        app_secret=SECRET,
        base_url=f"http://127.0.0.1:{port}",
        retry=RetryPolicy(attempts=3, backoff_base=0.001, backoff_cap=0.01, max_retry_after=30.0),
    )

    with pytest.raises(LarkApiError) as caught:
        LarkClient(config, sleep=sleeps).bot_open_id()

    assert caught.value.retryable is True
    assert len(sleeps.calls) == 2


# ------------------------------------------------------------------ rate limiting


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_rate_limiter_never_admits_more_than_the_limit_in_any_window() -> None:
    clock = FakeClock()
    limiter = RateLimiter.per_second_and_minute(5, 12, clock=clock, sleep=clock.sleep)

    stamps = []
    for _ in range(30):
        limiter.acquire()
        stamps.append(clock.now - 1000.0)

    for i, t in enumerate(stamps):
        assert sum(1 for u in stamps[i:] if u < t + 1.0) <= 5
        assert sum(1 for u in stamps[i:] if u < t + 60.0) <= 12
    assert stamps[5] == pytest.approx(1.0)
    assert stamps[12] == pytest.approx(60.0)


def test_fractional_rates_space_requests_evenly() -> None:
    clock = FakeClock()
    limiter = RateLimiter.per_second_and_minute(0.5, 1000, clock=clock, sleep=clock.sleep)

    waits = [limiter.acquire() for _ in range(3)]

    assert waits == [0.0, pytest.approx(2.0), pytest.approx(2.0)]


def test_a_held_request_keeps_its_slot_until_its_response_plus_the_window() -> None:
    # Lark counts a request when it arrives, which may be as late as the response: a slow call
    # must still count in the window that ends one second after its response.
    clock = FakeClock()
    limiter = RateLimiter([(2, 1.0)], clock=clock, sleep=clock.sleep)

    with limiter.hold():
        clock.sleep(5.0)  # the response takes five seconds
    first = limiter.acquire()
    second = limiter.acquire()

    assert first == 0.0
    assert second == pytest.approx(1.0)  # the held slot counts from its response, not its start


def test_requests_in_flight_block_admission_until_one_returns() -> None:
    limiter = RateLimiter([(2, 0.2)])
    admitted_at: list[float] = []
    released_at: list[float] = []
    in_call = threading.Event()

    def slow_call() -> None:
        with limiter.hold(2):
            in_call.set()
            time.sleep(0.3)
            released_at.append(time.monotonic())

    worker = threading.Thread(target=slow_call)
    worker.start()
    assert in_call.wait(5)
    limiter.acquire()
    admitted_at.append(time.monotonic())
    worker.join()

    # Both slots were taken by the call in flight; one frees a window after the response.
    assert admitted_at[0] >= released_at[0] + 0.2 - 0.02


def test_a_hold_asks_for_no_more_slots_than_the_smallest_limit() -> None:
    clock = FakeClock()
    limiter = RateLimiter([(1, 2.0), (10, 60.0)], clock=clock, sleep=clock.sleep)

    with limiter.hold(2) as waited:  # would never fit a 1-request window
        assert waited == 0.0


def test_the_limiter_bounds_real_requests(sim: SimulatorServer, sleeps: SleepRecorder) -> None:
    limiter = RateLimiter([(2, 0.25)])
    client = make_client(sim, sleeps, page_size=25, rate_limiter=limiter)

    began = time.monotonic()
    items = all_items(client)
    elapsed = time.monotonic() - began

    assert len(items) == 130
    assert sim.request_counts[ROUTE_LIST_MESSAGES] == 6
    assert elapsed >= 0.5


class CountingLimiter(RateLimiter):
    def __init__(self) -> None:
        super().__init__([(1000, 1.0)])
        self.acquired = 0

    @contextmanager
    def hold(self, requests: int = 1) -> Iterator[float]:
        self.acquired += requests
        with super().hold(requests) as waited:
            yield waited


def test_the_limiter_counts_the_tenant_token_requests_the_sdk_makes_inside_a_call(
    sim: SimulatorServer, sleeps: SleepRecorder
) -> None:
    limiter = CountingLimiter()
    client = make_client(sim, sleeps, page_size=25, rate_limiter=limiter)

    assert len(all_items(client)) == 130  # a cold token cache: the first call fetches one
    sim.invalidate_tokens()
    assert len(all_items(client)) == 130  # a rejected token: refreshed inside a call

    counts = sim.request_counts
    assert counts[ROUTE_TOKEN] == 2
    assert limiter.acquired == sum(counts.values())  # every request Lark saw was admitted


def test_clients_of_one_app_share_one_limiter(app_id: str) -> None:
    assert shared_rate_limiter(app_id, 50, 1000) is shared_rate_limiter(app_id, 10, 10)
    assert shared_rate_limiter(app_id, 50, 1000) is not shared_rate_limiter(app_id + "x", 50, 1000)


# ------------------------------------------------------------------ messaging and lookups


def test_send_reply_and_patch_are_idempotent(sim: SimulatorServer, sleeps: SleepRecorder) -> None:
    client = make_client(sim, sleeps)
    card = {"header": {"title": {"tag": "plain_text", "content": "Draft"}}, "elements": []}

    sent = client.send_message(CHAT, msg_type="interactive", content=card, idempotency_uuid="u-1")
    again = client.send_message(CHAT, msg_type="interactive", content=card, idempotency_uuid="u-1")
    other = client.send_message(CHAT, msg_type="interactive", content=card, idempotency_uuid="u-2")
    reply = client.reply_message(
        sent, msg_type="text", content={"text": "ok"}, idempotency_uuid="r"
    )
    reply_again = client.reply_message(
        sent, msg_type="text", content={"text": "ok"}, idempotency_uuid="r"
    )
    patched = {**card, "elements": [{"tag": "markdown", "content": "confirmed"}]}
    client.patch_message(sent, content=patched)
    client.patch_message(sent, content=patched)

    assert sent == again != other
    assert reply == reply_again
    stored = sim.store.get(sent)
    assert stored is not None
    assert json.loads(stored["body"]["content"]) == patched
    assert stored["sender"] == {
        "id": sim.app_id,
        "id_type": "app_id",
        "sender_type": "app",
        "tenant_key": "sim_tenant",
    }
    reply_item = sim.store.get(reply)
    assert reply_item is not None and reply_item["parent_id"] == sent
    assert len(sim.store.messages(CHAT)) == 130 + 3


def test_patching_someone_elses_message_fails_without_retry(
    sim: SimulatorServer, sleeps: SleepRecorder
) -> None:
    human = sim.store.messages(CHAT)[0]["message_id"]

    with pytest.raises(LarkApiError) as caught:
        make_client(sim, sleeps).patch_message(human, content={"elements": []})

    assert (caught.value.code, caught.value.retryable) == (230012, False)


def test_batch_user_names_asks_fifty_at_a_time(sim: SimulatorServer, sleeps: SleepRecorder) -> None:
    for n in range(120):
        sim.store.add_user(f"ou_user_{n:03d}", f"User {n}")
    wanted = [f"ou_user_{n:03d}" for n in range(120)] + ["ou_user_000", "ou_unknown"]

    names = make_client(sim, sleeps).batch_user_names(wanted)

    assert len(names) == 120
    assert names["ou_user_042"] == "User 42"
    assert "ou_unknown" not in names
    assert sim.request_counts[ROUTE_USERS_BATCH] == 3


def test_bot_open_id_is_read_once(sim: SimulatorServer, sleeps: SleepRecorder) -> None:
    client = make_client(sim, sleeps)

    first, second = client.bot_open_id(), client.bot_open_id()

    assert first == second == sim.state.bot_open_id(sim.app_id)
    assert sim.request_counts[ROUTE_BOT_INFO] == 1


def test_config_rejects_pages_larger_than_lark_allows() -> None:
    with pytest.raises(ValueError, match="page_size"):
        LarkClientConfig(app_id="a", app_secret="b", base_url="http://127.0.0.1:1", page_size=51)


def test_logs_carry_ids_but_never_bodies_or_tokens(
    sim: SimulatorServer, sleeps: SleepRecorder
) -> None:
    sim.faults.update(fail_page=2, fail_page_attempts=1)
    client = make_client(sim, sleeps)
    with structlog.testing.capture_logs() as logged:
        all_items(client)
        sim.invalidate_tokens()
        client.send_message(
            CHAT, msg_type="text", content={"text": "secret words"}, idempotency_uuid="x"
        )

    text = "\n".join(repr(entry) for entry in logged)
    assert any(
        e["event"] == "lark.history_page.read" and e["chat_id"] == CHAT and e["page_number"] == 2
        for e in logged
    )
    assert any(
        e["event"] == "lark.call.retry" and e["chat_id"] == CHAT and e["page"] == "2"
        for e in logged
    )
    assert any(
        e["event"] == "lark.tenant_token.refreshed" and e["app_id"] == sim.app_id for e in logged
    )
    assert "t-sim-" not in text
    assert "secret words" not in text
    for item in sim.store.messages(CHAT)[:5]:
        assert item["body"]["content"] not in text
