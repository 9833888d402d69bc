"""What the per-event short cuts of the hot path must not change (docs/http.md).

The accepted answer is sent pre-encoded, metric children are looked up once per label, and the
debug line of an accepted event is built only when debug is on: the bytes on the wire, every
counter and histogram series, and the log lines must be exactly what the long way gives.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
import structlog

from timeline_pipeline.observability.logs import configure_logging
from timeline_pipeline.web.responses import SafeJSONResponse
from timeline_pipeline_tests.receiver.conftest import Receiver
from timeline_pipeline_tests.receiver.lark_events import challenge, receive

HANDLING = "timeline_lark_event_handling_seconds_count"


@pytest.fixture
def restore_logging() -> Iterator[None]:
    yield
    logging.getLogger().setLevel(logging.WARNING)
    structlog.reset_defaults()


def _configure(level: int) -> tuple[io.StringIO, logging.Handler]:
    stream = io.StringIO()
    return stream, configure_logging(json=True, level=level, stream=stream)


def test_the_accepted_answer_is_the_safe_encoding_byte_for_byte(receiver: Receiver) -> None:
    response = receiver.post(receive("om_1"))
    long_way = SafeJSONResponse({"status": "accepted"})

    assert response.status_code == 200
    assert response.content == long_way.body == b'{"status":"accepted"}'
    assert response.headers["content-type"] == long_way.headers["content-type"]
    assert response.headers["content-length"] == str(len(long_way.body))


def test_a_challenge_is_still_echoed_although_it_is_also_accepted(receiver: Receiver) -> None:
    response = receiver.post(challenge("echo-me"))

    assert response.status_code == 200
    assert response.json() == {"challenge": "echo-me"}


def test_every_result_and_event_type_keeps_its_own_series(receiver: Receiver) -> None:
    for message_id in ("om_1", "om_2"):
        assert receiver.post(receive(message_id)).status_code == 200
    assert receiver.post(receive("om_3", chat_type="p2p")).json()["status"] == "ignored"
    assert receiver.post(challenge()).status_code == 200
    assert receiver.post_raw(b"not json").status_code == 401

    assert receiver.metric(HANDLING, result="accepted") == 3
    assert receiver.metric(HANDLING, result="ignored") == 1
    assert receiver.metric(HANDLING, result="rejected") == 1
    accepted = "timeline_lark_events_accepted_total"
    assert receiver.metric(accepted, event_type="im.message.receive_v1") == 2
    assert receiver.metric(accepted, event_type="url_verification") == 1
    assert receiver.metric("timeline_lark_events_received_total") == 5


@pytest.mark.parametrize(("level", "logged"), [(logging.DEBUG, True), (logging.INFO, False)])
def test_the_accepted_line_follows_the_level_set_after_the_app_was_built(
    receiver: Receiver, restore_logging: None, level: int, logged: bool
) -> None:
    stream, handler = _configure(level)  # after `receiver` was built: read per event
    try:
        assert receiver.post(receive("om_1", event_id="ev-accepted")).status_code == 200
    finally:
        logging.getLogger().removeHandler(handler)

    records = [json.loads(line) for line in stream.getvalue().splitlines()]
    accepted = [r for r in records if r.get("event") == "lark_event_accepted"]
    assert bool(accepted) is logged
    if logged:
        [line] = accepted
        assert line["event_id"] == "ev-accepted"
        assert line["message_id"] == "om_1"
