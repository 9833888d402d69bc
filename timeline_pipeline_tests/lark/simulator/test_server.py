"""The local Lark's wire contract, checked with plain HTTP rather than through the SDK."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime

import httpx
import pytest

from timeline_pipeline.lark.simulator import ChatStore, SimulatorServer, make_chat_messages
from timeline_pipeline.lark.simulator.server import (
    ROUTE_LIST_MESSAGES,
    ROUTE_PATCH_MESSAGE,
    ROUTE_TOKEN,
)

START = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
CHAT = "oc_wire"
APP_ID, SECRET = "cli_wire", "wire-secret"


@pytest.fixture
def server() -> Iterator[SimulatorServer]:
    store = ChatStore(make_chat_messages(CHAT, START, 60, seed=9, thread_every=10))
    with SimulatorServer(store, app_id=APP_ID, app_secret=SECRET) as running:
        yield running


@pytest.fixture
def http(server: SimulatorServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.base_url, trust_env=False, timeout=5) as client:
        token = client.post(
            "/open-apis/auth/v3/tenant_access_token/internal",
            content=json.dumps({"app_id": APP_ID, "app_secret": SECRET}),
        ).json()["tenant_access_token"]
        client.headers["Authorization"] = f"Bearer {token}"
        yield client


def list_page(http: httpx.Client, **params: str | int) -> httpx.Response:
    query = {"container_id_type": "chat", "container_id": CHAT, **params}
    return http.get("/open-apis/im/v1/messages", params=query)


def test_token_endpoint_checks_credentials(server: SimulatorServer) -> None:
    with httpx.Client(base_url=server.base_url, trust_env=False) as client:
        good = client.post(
            "/open-apis/auth/v3/tenant_access_token/internal",
            content=json.dumps({"app_id": APP_ID, "app_secret": SECRET}),
        ).json()
        bad = client.post(
            "/open-apis/auth/v3/tenant_access_token/internal",
            content=json.dumps({"app_id": APP_ID, "app_secret": "nope"}),
        )
        unknown = client.post(
            "/open-apis/auth/v3/tenant_access_token/internal",
            content=json.dumps({"app_id": "cli_other", "app_secret": SECRET}),
        )

    assert good["code"] == 0 and good["expire"] == 7200
    assert good["tenant_access_token"].startswith("t-")
    assert bad.json()["code"] == 10014
    assert unknown.json()["code"] == 10003


def test_api_calls_need_a_valid_bearer_token(server: SimulatorServer, http: httpx.Client) -> None:
    missing = httpx.get(
        f"{server.base_url}/open-apis/im/v1/messages",
        params={"container_id_type": "chat", "container_id": CHAT},
        trust_env=False,
    )
    assert missing.json()["code"] == 99991661

    server.invalidate_tokens()
    revoked = list_page(http)
    assert revoked.status_code == 400
    assert revoked.json() == {
        "code": 99991663,
        "msg": "Invalid access token for authorization",
        "data": {},
    }


def test_listing_replies_in_lark_envelope_with_opaque_tokens(http: httpx.Client) -> None:
    first = list_page(http, page_size=20, sort_type="ByCreateTimeAsc").json()
    token = first["data"]["page_token"]
    second = list_page(http, page_size=20, sort_type="ByCreateTimeAsc", page_token=token).json()

    assert first["code"] == 0 and set(first) == {"code", "msg", "data"}
    assert set(first["data"]) == {"has_more", "page_token", "items"}
    assert first["data"]["has_more"] is True
    assert len(first["data"]["items"]) == 20
    assert not token.isdigit()
    assert first["data"]["items"][-1]["create_time"] < second["data"]["items"][0]["create_time"]
    # 60 messages with a thread reply in every block of 10: 54 are listable in the chat.
    assert len(second["data"]["items"]) == 20
    assert not any(i.get("root_id") for i in first["data"]["items"] + second["data"]["items"])


def test_default_page_size_is_twenty_and_larger_than_fifty_is_refused(
    http: httpx.Client,
) -> None:
    assert len(list_page(http).json()["data"]["items"]) == 20
    assert len(list_page(http, page_size=50).json()["data"]["items"]) == 50

    refused = list_page(http, page_size=51)

    assert refused.status_code == 400
    assert refused.json()["code"] == 230001


def test_a_page_token_only_works_for_its_own_query(http: httpx.Client) -> None:
    token = list_page(http, page_size=10).json()["data"]["page_token"]

    reused = list_page(http, page_size=10, page_token=token, sort_type="ByCreateTimeDesc")
    forged = list_page(
        http, page_size=10, page_token=token[:-1] + ("0" if token[-1] != "0" else "1")
    )

    assert reused.json()["code"] == 230001
    assert forged.json()["code"] == 230001


def test_thread_container_takes_no_time_bounds(http: httpx.Client, server: SimulatorServer) -> None:
    thread_id = next(m["thread_id"] for m in server.store.messages(CHAT) if m.get("thread_id"))
    params = {"container_id_type": "thread", "container_id": thread_id}

    ok = http.get("/open-apis/im/v1/messages", params=params).json()
    bounded = http.get("/open-apis/im/v1/messages", params={**params, "start_time": "1"}).json()

    assert [bool(i.get("root_id")) for i in ok["data"]["items"]] == [False, True]
    assert bounded["code"] == 230001


def test_requests_are_counted_per_route_including_failures(
    http: httpx.Client, server: SimulatorServer
) -> None:
    server.faults.update(fail_page=1, fail_page_attempts=1)

    assert list_page(http).status_code == 500
    assert list_page(http).status_code == 200
    http.patch("/open-apis/im/v1/messages/om_nope", content=json.dumps({"content": "{}"}))

    counts = server.request_counts
    assert counts[ROUTE_LIST_MESSAGES] == 2
    assert counts[ROUTE_PATCH_MESSAGE] == 1
    assert counts[ROUTE_TOKEN] == 1
    server.reset_counts()
    assert server.page_requests == 0


def test_rate_limit_answers_429_with_retry_hints(
    http: httpx.Client, server: SimulatorServer
) -> None:
    server.faults.update(rate_limit_every=2, retry_after_seconds=4)

    statuses = [list_page(http) for _ in range(4)]

    assert [r.status_code for r in statuses] == [200, 429, 200, 429]
    assert statuses[1].headers["retry-after"] == "4"
    assert statuses[1].headers["x-ogw-ratelimit-reset"] == "4"
    assert statuses[1].json()["code"] == 99991400


def test_unknown_and_denied_chats_are_not_readable(
    http: httpx.Client, server: SimulatorServer
) -> None:
    server.faults.permission_denied_chats.add(CHAT)

    denied = list_page(http).json()
    unknown = http.get(
        "/open-apis/im/v1/messages",
        params={"container_id_type": "chat", "container_id": "oc_elsewhere"},
    ).json()

    assert denied["code"] == unknown["code"] == 230002


def test_create_validates_content_and_bot_info_has_lark_shape(http: httpx.Client) -> None:
    bad = http.post(
        "/open-apis/im/v1/messages",
        params={"receive_id_type": "chat_id"},
        content=json.dumps({"receive_id": CHAT, "msg_type": "text", "content": "not json"}),
    )
    bot = http.get("/open-apis/bot/v3/info").json()

    assert bad.json()["code"] == 230001
    assert bot["code"] == 0 and bot["bot"]["open_id"].startswith("ou_")


def test_user_batch_is_capped_at_fifty(http: httpx.Client) -> None:
    ids = [("user_ids", f"ou_{n}") for n in range(51)]

    refused = http.get(
        "/open-apis/contact/v3/users/batch", params=[*ids, ("user_id_type", "open_id")]
    )

    assert refused.json()["code"] == 99992402


def test_non_loopback_hosts_are_refused() -> None:
    with pytest.raises(ValueError, match="loopback"):
        SimulatorServer(ChatStore(), host="0.0.0.0")
