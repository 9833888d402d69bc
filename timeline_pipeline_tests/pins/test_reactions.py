"""Reading a reaction event (pure): Lark's shape as lark-oapi models it, and every malformed
field refused with its own reason (docs/pins.md, "The reaction events")."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from lark_oapi.api.im.v1.model.p2_im_message_reaction_created_v1 import (
    P2ImMessageReactionCreatedV1,
)

from timeline_pipeline.lark.simulator.events import EventIdentity, reaction_event
from timeline_pipeline.pins.reactions import MalformedReaction, read_reaction

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _event(**changes: Any) -> dict[str, Any]:
    payload = reaction_event(
        EventIdentity(app_id="cli_app"),
        message_id="om_1",
        emoji_type="Pin",
        operator_open_id="ou_curator",
        action_time_ms=1764590400123,
    )
    event: dict[str, Any] = payload["event"]
    event.update(changes)
    return event


def test_the_simulators_event_is_what_lark_oapi_reads_as_a_reaction() -> None:
    payload = reaction_event(
        EventIdentity(app_id="cli_app"),
        message_id="om_1",
        emoji_type="Pin",
        operator_open_id="ou_curator",
        action_time_ms=1764590400123,
    )
    typed = P2ImMessageReactionCreatedV1(payload)
    assert typed.header.event_type == "im.message.reaction.created_v1"
    assert typed.event.message_id == "om_1"
    assert typed.event.reaction_type.emoji_type == "Pin"
    assert typed.event.operator_type == "user"
    assert typed.event.user_id.open_id == "ou_curator"
    assert typed.event.action_time == "1764590400123"
    reaction = read_reaction(payload["event"], removed=False, now=NOW)
    assert (reaction.message_id, reaction.emoji_type, reaction.operator) == (
        "om_1",
        "Pin",
        "ou_curator",
    )
    assert reaction.action_at == datetime(2025, 12, 1, 12, 0, 0, 123000, tzinfo=UTC)


def test_an_apps_reaction_names_the_app_and_a_missing_time_is_now() -> None:
    event = _event(operator_type="app", app_id="cli_other", action_time="")
    event.pop("user_id")
    reaction = read_reaction(event, removed=True, now=NOW)
    assert (reaction.operator_type, reaction.operator, reaction.action_at) == (
        "app",
        "cli_other",
        NOW,
    )
    assert reaction.removed


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"message_id": ""}, "missing_message_id"),
        ({"message_id": "om/1"}, "bad_message_id"),
        ({"message_id": 7}, "bad_message_id"),
        ({"reaction_type": {}}, "bad_emoji_type"),
        ({"reaction_type": "Pin"}, "bad_emoji_type"),
        ({"reaction_type": {"emoji_type": "P i n"}}, "bad_emoji_type"),
        ({"operator_type": "bot"}, "bad_operator_type"),
        ({"user_id": {}}, "missing_open_id"),
        ({"user_id": "ou_x"}, "missing_open_id"),
        ({"operator_type": "app"}, "missing_app_id"),
        ({"action_time": "12:00"}, "bad_action_time"),
        ({"action_time": "9" * 16}, "bad_action_time"),
        ({"action_time": True}, "bad_action_time"),
    ],
)
def test_a_malformed_reaction_is_refused_with_its_reason(
    changes: dict[str, Any], reason: str
) -> None:
    with pytest.raises(MalformedReaction) as refused:
        read_reaction(_event(**changes), removed=False, now=NOW)
    assert refused.value.reason == reason
