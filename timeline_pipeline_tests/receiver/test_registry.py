"""Event types are routed through the handler registry: a registered handler's own answer is
what Lark receives, and a type nobody registered keeps today's answer."""

from __future__ import annotations

from typing import Any

import pytest

from timeline_pipeline.receiver.outcomes import Outcome
from timeline_pipeline.receiver.registry import EventHandlerRegistry, HandlerReply, HandlerResult
from timeline_pipeline.receiver.verification import VerifiedCallback
from timeline_pipeline_tests.receiver.conftest import Receiver
from timeline_pipeline_tests.receiver.lark_events import card_click

CARD_LIKE = "test.card_like"


def of_type(event_type: str, event_id: str = "ev-registry-1") -> dict[str, Any]:
    payload = card_click(event_id)
    payload["header"]["event_type"] = event_type
    return payload


def test_a_registered_handlers_body_is_returned_to_lark(receiver: Receiver) -> None:
    seen: list[str | None] = []

    def toast(callback: VerifiedCallback) -> HandlerResult:
        seen.append(callback.event_id)
        card = {"type": "raw", "data": {"elements": []}}
        return HandlerReply(200, {"toast": {"type": "success", "content": "done"}, "card": card})

    receiver.state.event_handlers.register(CARD_LIKE, toast)

    response = receiver.post(of_type(CARD_LIKE))

    assert response.status_code == 200
    assert response.json() == {
        "toast": {"type": "success", "content": "done"},
        "card": {"type": "raw", "data": {"elements": []}},
    }
    assert seen == ["ev-registry-1"]
    assert receiver.metric("timeline_lark_events_accepted_total", event_type="other") == 1


def test_a_handler_refusal_is_its_status_with_its_reason(receiver: Receiver) -> None:
    receiver.state.event_handlers.register(
        CARD_LIKE, lambda _callback: HandlerReply(400, reason="bad_card_action")
    )

    response = receiver.post(of_type(CARD_LIKE))

    assert response.status_code == 400
    assert response.json() == {"status": "rejected", "reason": "bad_card_action"}
    assert receiver.metric("timeline_lark_events_failed_total", reason="bad_card_action") == 1


def test_an_unregistered_event_type_is_still_ignored_as_unknown(receiver: Receiver) -> None:
    response = receiver.post(of_type("im.chat.disbanded_v1"))

    assert response.status_code == 200
    assert response.json() == {"status": "ignored", "reason": "unknown_event_type"}
    assert (
        receiver.metric(
            "timeline_lark_events_ignored_total", event_type="other", reason="unknown_event_type"
        )
        == 1
    )


def test_todays_event_types_are_all_registered(receiver: Receiver) -> None:
    assert set(receiver.state.event_handlers) == {
        "url_verification",
        "im.message.receive_v1",
        "im.message.recalled_v1",
        "card.action.trigger",
        "im.message.reaction.created_v1",
        "im.message.reaction.deleted_v1",
    }


def test_an_event_type_takes_one_handler() -> None:
    registry = EventHandlerRegistry().register(CARD_LIKE, lambda _c: Outcome())

    with pytest.raises(ValueError, match="already has a handler"):
        registry.register(CARD_LIKE, lambda _c: Outcome())
