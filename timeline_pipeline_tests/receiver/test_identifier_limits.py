"""Identifiers at their limit are stored; one past it is a 400 with a reason, never a 5xx.

Normalization's limits are the columns' sizes: a sender's open_id is the evidence row's
`actor_id`, a chat id its `scope_key` and, with the message id, its `source_key`. Were they to
disagree, PostgreSQL (which enforces VARCHAR lengths, unlike SQLite) would refuse the insert and
answer 500 to every redelivery of the same event.
"""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from timeline_pipeline.db.schema import workspace_timeline_evidence as ev
from timeline_pipeline.domain.keys import check_lark_id, message_source_key
from timeline_pipeline.lark.normalize import (
    MAX_CHAT_ID_CHARS,
    MAX_MESSAGE_ID_CHARS,
    MAX_OPEN_ID_CHARS,
)
from timeline_pipeline_tests.receiver.conftest import ReceiverFactory, add_workspace
from timeline_pipeline_tests.receiver.lark_events import receive


def _id(prefix: str, length: int) -> str:
    return prefix + "x" * (length - len(prefix))


def _column_chars(name: str) -> int:
    length = getattr(ev.c[name].type, "length", None)
    assert isinstance(length, int)
    return length


def test_the_limits_fit_the_columns_they_are_stored_in() -> None:
    assert _column_chars("actor_id") >= MAX_OPEN_ID_CHARS
    assert _column_chars("scope_key") >= MAX_CHAT_ID_CHARS
    longest = message_source_key(_id("oc_", MAX_CHAT_ID_CHARS), _id("om_", MAX_MESSAGE_ID_CHARS))
    assert len(longest) <= _column_chars("source_key")
    check_lark_id(_id("oc_", MAX_CHAT_ID_CHARS))  # every chat normalization accepts is bindable


def test_every_identifier_at_its_limit_is_stored(
    make_receiver: ReceiverFactory, engine: Engine
) -> None:
    chat = _id("oc_", MAX_CHAT_ID_CHARS)
    add_workspace(engine, chats=(chat,))
    receiver = make_receiver()
    message_id = _id("om_", MAX_MESSAGE_ID_CHARS)
    sender = _id("ou_", MAX_OPEN_ID_CHARS)

    response = receiver.post(receive(message_id, chat_id=chat, sender=sender))

    assert response.status_code == 200, response.text
    [row] = receiver.rows()
    assert row.source_key == message_source_key(chat, message_id)
    assert (row.actor_id, row.scope_key) == (sender, chat)


@pytest.mark.parametrize(
    ("field", "reason"),
    [("message_id", "bad_message_id"), ("chat_id", "bad_chat_id"), ("sender", "bad_sender_id")],
)
def test_one_past_a_limit_is_refused_with_its_reason(
    make_receiver: ReceiverFactory, engine: Engine, field: str, reason: str
) -> None:
    chat = _id("oc_", MAX_CHAT_ID_CHARS)
    add_workspace(engine, chats=(chat,))
    receiver = make_receiver()
    ids = {
        "message_id": _id("om_", MAX_MESSAGE_ID_CHARS),
        "chat_id": chat,
        "sender": _id("ou_", MAX_OPEN_ID_CHARS),
    }
    ids[field] += "y"
    message_id = ids.pop("message_id")

    responses = [receiver.post(receive(message_id, event_id=f"ev-{i}", **ids)) for i in (1, 2)]

    assert [r.status_code for r in responses] == [400, 400]  # a redelivery too, never a 5xx
    assert reason in responses[0].text
    assert receiver.rows() == []
