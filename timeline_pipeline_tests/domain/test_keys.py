from datetime import UTC, datetime

import pytest

from timeline_pipeline.domain.keys import (
    InvalidKey,
    chat_checkpoint_key,
    check_lark_id,
    message_source_key,
)
from timeline_pipeline.domain.window_keys import parse_window_start, window_source_key

START = datetime(2026, 11, 29, 10, 20, tzinfo=UTC)


def test_keys_follow_seed_000() -> None:
    assert message_source_key("oc_1", "om_2") == "chat/oc_1/message/om_2"
    assert chat_checkpoint_key("oc_1") == "chat/oc_1"
    assert window_source_key("oc_1", START, None) == "chat/oc_1/window/2026-11-29T10:20:00Z"
    assert (
        window_source_key("oc_1", START, "v2")
        == "chat/oc_1/processor/v2/window/2026-11-29T10:20:00Z"
    )


def test_window_start_round_trips_and_is_utc_whatever_the_input_zone() -> None:
    from datetime import timedelta, timezone

    local = START.astimezone(timezone(timedelta(hours=8)))
    assert window_source_key("oc_1", local, None) == window_source_key("oc_1", START, None)
    assert parse_window_start("2026-11-29T10:20:00Z") == START


@pytest.mark.parametrize("bad", ["", "oc 1", "oc/1", "oc:1", "x" * 201])
def test_lark_ids_that_would_break_keys_are_refused(bad: str) -> None:
    with pytest.raises(InvalidKey):
        check_lark_id(bad)
