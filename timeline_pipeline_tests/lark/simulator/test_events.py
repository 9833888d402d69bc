"""Event signing and encryption, proven against lark-oapi's own dispatcher, and the pusher."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import lark_oapi as lark
import pytest
from fastapi import FastAPI, Request, Response
from lark_oapi.event.callback.model.p2_card_action_trigger import P2CardActionTriggerResponse

from timeline_pipeline.lark.simulator import (
    EventIdentity,
    EventPusher,
    LoopbackUvicorn,
    card_action_event,
    make_chat_messages,
    message_recalled_event,
    message_receive_event,
    sign_payload,
    url_verification_event,
)
from timeline_pipeline.lark.simulator.signing import (
    HEADER_NONCE,
    HEADER_SIGNATURE,
    HEADER_TIMESTAMP,
    SignedRequest,
)

ENCRYPT_KEY = "sim-encrypt-key"
TOKEN = "sim-verification-token"
IDENTITY = EventIdentity(app_id="cli_events", verification_token=TOKEN)
ITEMS = make_chat_messages("oc_events", datetime(2024, 5, 1, tzinfo=UTC), 20, seed=4)


class Received:
    def __init__(self) -> None:
        self.messages: list[Any] = []
        self.recalls: list[Any] = []
        self.cards: list[Any] = []
        self._lock = threading.Lock()

    def handler(self, encrypt_key: str = ENCRYPT_KEY) -> lark.EventDispatcherHandler:
        def on_message(data: Any) -> None:
            with self._lock:
                self.messages.append(data)

        def on_recall(data: Any) -> None:
            with self._lock:
                self.recalls.append(data)

        def on_card(data: Any) -> P2CardActionTriggerResponse:
            with self._lock:
                self.cards.append(data)
            return P2CardActionTriggerResponse({"toast": {"type": "success", "content": "ok"}})

        return (
            lark.EventDispatcherHandler.builder(encrypt_key, TOKEN)
            .register_p2_im_message_receive_v1(on_message)
            .register_p2_im_message_recalled_v1(on_recall)
            .register_p2_card_action_trigger(on_card)
            .build()
        )


def dispatch(handler: lark.EventDispatcherHandler, signed: SignedRequest) -> Any:
    request = lark.RawRequest()
    request.uri = "/lark/events"
    request.headers = dict(signed.headers)
    request.body = signed.body
    return handler.do(request)


@pytest.mark.parametrize("encrypt_body", [True, False], ids=["encrypted", "plain"])
def test_receive_event_round_trips_through_lark_oapi(encrypt_body: bool) -> None:
    received = Received()
    item = next(i for i in ITEMS if i["mentions"])

    signed = sign_payload(
        message_receive_event(item, IDENTITY), encrypt_key=ENCRYPT_KEY, encrypt_body=encrypt_body
    )
    response = dispatch(received.handler(), signed)

    assert response.status_code == 200
    assert ("encrypt" in json.loads(signed.body)) is encrypt_body
    (event,) = received.messages
    message = event.event.message
    assert message.message_id == item["message_id"]
    assert message.message_type == item["msg_type"]
    assert message.content == item["body"]["content"]
    assert message.chat_type == "group"
    assert event.event.sender.sender_id.open_id == item["sender"]["id"]
    assert message.mentions[0].id.open_id == item["mentions"][0]["id"]
    assert event.header.event_type == "im.message.receive_v1"


def test_recall_and_card_action_round_trip() -> None:
    received = Received()
    handler = received.handler()

    recall = dispatch(
        handler,
        sign_payload(
            message_recalled_event("om_1", "oc_events", IDENTITY, recall_time_ms=1714554000000),
            encrypt_key=ENCRYPT_KEY,
        ),
    )
    card = dispatch(
        handler,
        sign_payload(
            card_action_event(
                IDENTITY,
                operator_open_id="ou_curator",
                open_message_id="om_card",
                open_chat_id="oc_events",
                action_value={"action": "confirm", "entry_id": 7},
            ),
            encrypt_key=ENCRYPT_KEY,
        ),
    )

    assert recall.status_code == card.status_code == 200
    assert received.recalls[0].event.message_id == "om_1"
    assert received.recalls[0].event.recall_time == "1714554000000"
    action = received.cards[0].event
    assert action.action.value == {"action": "confirm", "entry_id": 7}
    assert action.context.open_message_id == "om_card"
    assert action.operator.open_id == "ou_curator"
    assert json.loads(card.content)["toast"]["content"] == "ok"


def test_url_verification_echoes_the_challenge() -> None:
    signed = sign_payload(url_verification_event("challenge-123", TOKEN), encrypt_key=ENCRYPT_KEY)

    response = dispatch(Received().handler(), signed)

    assert json.loads(response.content) == {"challenge": "challenge-123"}


def _flip_byte(data: bytes, index: int) -> bytes:
    return data[:index] + bytes([data[index] ^ 0x01]) + data[index + 1 :]


def _alter_body(signed: SignedRequest) -> SignedRequest:
    return SignedRequest(_flip_byte(signed.body, len(signed.body) // 2), signed.headers)


def _alter_header(name: str) -> Callable[[SignedRequest], SignedRequest]:
    def alter(signed: SignedRequest) -> SignedRequest:
        value = signed.headers[name]
        changed = value[:-1] + ("1" if value[-1] != "1" else "2")
        return SignedRequest(signed.body, {**signed.headers, name: changed})

    return alter


@pytest.mark.parametrize("encrypt_body", [True, False], ids=["encrypted", "plain"])
@pytest.mark.parametrize(
    "alter",
    [
        _alter_body,
        _alter_header(HEADER_SIGNATURE),
        _alter_header(HEADER_TIMESTAMP),
        _alter_header(HEADER_NONCE),
    ],
    ids=["body", "signature", "timestamp", "nonce"],
)
def test_a_single_altered_byte_is_rejected(
    encrypt_body: bool, alter: Callable[[SignedRequest], SignedRequest]
) -> None:
    received = Received()
    signed = sign_payload(
        message_receive_event(ITEMS[0], IDENTITY),
        encrypt_key=ENCRYPT_KEY,
        encrypt_body=encrypt_body,
    )
    assert dispatch(received.handler(), signed).status_code == 200

    tampered = alter(signed)
    assert tampered != signed

    assert dispatch(received.handler(), tampered).status_code == 500
    assert len(received.messages) == 1


def test_wrong_key_or_token_is_rejected() -> None:
    received = Received()
    wrong_token = EventIdentity(app_id="cli_events", verification_token="other")

    wrong_key = dispatch(
        received.handler(), sign_payload(message_receive_event(ITEMS[0], IDENTITY), encrypt_key="x")
    )
    bad_token = dispatch(
        received.handler(),
        sign_payload(message_receive_event(ITEMS[0], wrong_token), encrypt_key=ENCRYPT_KEY),
    )

    assert wrong_key.status_code == bad_token.status_code == 500
    assert received.messages == []


# ------------------------------------------------------------------ the pusher


@pytest.fixture
def receiver() -> Iterator[tuple[str, Received, Counter[str]]]:
    """A real HTTP receiver that hands each request to lark-oapi's dispatcher."""
    received = Received()
    handler = received.handler()
    seen: Counter[str] = Counter()
    app = FastAPI()

    @app.post("/lark/events")
    async def events(request: Request) -> Response:
        raw = lark.RawRequest()
        raw.uri = "/lark/events"
        # ASGI lower-cases header names; the SDK looks them up in Lark's exact case.
        canonical = {h.lower(): h for h in (HEADER_TIMESTAMP, HEADER_NONCE, HEADER_SIGNATURE)}
        raw.headers = {canonical.get(k, k): v for k, v in request.headers.items()}
        raw.body = await request.body()
        result = handler.do(raw)
        seen["requests"] += 1
        return Response(result.content, status_code=result.status_code)

    with LoopbackUvicorn(app) as server:
        yield f"{server.base_url}/lark/events", received, seen


def test_pusher_drops_duplicates_and_reorders_reproducibly(
    receiver: tuple[str, Received, Counter[str]],
) -> None:
    url, received, seen = receiver
    events = [message_receive_event(item, IDENTITY) for item in ITEMS]
    options: dict[str, Any] = {
        "encrypt_key": ENCRYPT_KEY,
        "drop_ids": {ITEMS[0]["message_id"]},
        "drop_fraction": 0.2,
        "duplicate_fraction": 0.3,
        "shuffle": True,
        "seed": 42,
        "concurrency": 4,
    }
    planned, _ = EventPusher(url, **options).plan(events)

    report = EventPusher(url, **options).push(events)

    assert report.all_accepted and report.errors == 0
    assert report.status_counts == Counter({200: len(planned)})
    assert seen["requests"] == len(report.sent) == len(planned)
    assert events[0]["header"]["event_id"] in report.dropped
    assert report.dropped and report.duplicated
    delivered = Counter(m.event.message.message_id for m in received.messages)
    dropped_messages = {
        e["event"]["message"]["message_id"]
        for e in events
        if e["header"]["event_id"] in report.dropped
    }
    assert set(delivered) == {i["message_id"] for i in ITEMS} - dropped_messages
    assert sum(delivered.values()) == len(events) - len(report.dropped) + len(report.duplicated)
    kept_in_order = [e for e in events if e["header"]["event_id"] not in report.dropped]
    assert [e["header"]["event_id"] for e in planned] != [
        e["header"]["event_id"] for e in kept_in_order
    ]


def test_pusher_counts_rejections(receiver: tuple[str, Received, Counter[str]]) -> None:
    url, received, _ = receiver

    report = EventPusher(url, encrypt_key="not-the-key").push(
        [message_receive_event(ITEMS[0], IDENTITY)]
    )

    assert report.status_counts == Counter({500: 1})
    assert not report.all_accepted
    assert received.messages == []


def test_pusher_only_delivers_to_loopback() -> None:
    with pytest.raises(ValueError, match="loopback"):
        EventPusher("http://192.0.2.10/lark/events")
