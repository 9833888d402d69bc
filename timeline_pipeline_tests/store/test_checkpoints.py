"""Chat collection checkpoints, docs/design.md §3 (repository tests of `store/checkpoints.py`)."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from timeline_pipeline.domain.sync_states import decode_message_cursor, encode_message_cursor
from timeline_pipeline.store import checkpoints
from timeline_pipeline_tests.store.factories import T0, make_workspace


def test_checkpoint_advances_only_forward_and_only_with_the_read_revision(engine: Engine) -> None:
    make_workspace(engine)
    with engine.begin() as conn:
        cp = checkpoints.ensure_checkpoint(conn, "inc-1", "oc_chat")
        assert cp.source_key == "chat/oc_chat" and cp.source_type == "lark_messages"
        assert checkpoints.ensure_checkpoint(conn, "inc-1", "oc_chat").id == cp.id
    high = encode_message_cursor(1_700_000_000_000, "om_9")
    with engine.begin() as conn:
        assert checkpoints.advance_checkpoint(
            conn, cp, cursor=high, covered_until=T0, metadata={"pages": 3}
        )
        # a concurrent run that read the old revision cannot move the mark
        assert not checkpoints.advance_checkpoint(
            conn, cp, cursor=high + "x", covered_until=T0, metadata={}
        )
    with engine.begin() as conn:
        fresh = checkpoints.ensure_checkpoint(conn, "inc-1", "oc_chat")
        lower = encode_message_cursor(1_600_000_000_000, "om_1")
        assert checkpoints.advance_checkpoint(
            conn, fresh, cursor=lower, covered_until=T0, metadata={}
        )
        final = checkpoints.ensure_checkpoint(conn, "inc-1", "oc_chat")
    assert final.last_seen_cursor == high  # never moved backwards
    assert final.metadata["pages"] == 3
    assert decode_message_cursor(high) == (1_700_000_000_000, "om_9")


def test_a_failed_run_keeps_the_checkpoint(engine: Engine) -> None:
    make_workspace(engine)
    high = encode_message_cursor(1_700_000_000_000, "om_9")
    with engine.begin() as conn:
        cp = checkpoints.ensure_checkpoint(conn, "inc-1", "oc_chat")
        checkpoints.advance_checkpoint(conn, cp, cursor=high, covered_until=T0, metadata={})
        cp = checkpoints.ensure_checkpoint(conn, "inc-1", "oc_chat")
        assert checkpoints.record_checkpoint_failure(conn, cp, "page 3 failed: code 500")
        after = checkpoints.ensure_checkpoint(conn, "inc-1", "oc_chat")
    assert (after.status, after.last_seen_cursor, after.attempt_count) == ("failed", high, 1)


@pytest.mark.parametrize("cursor", ["", "abc", "12/", "/om_1", "-1/om"])
def test_malformed_checkpoint_cursors_are_refused(cursor: str) -> None:
    with pytest.raises(ValueError, match="cursor"):
        decode_message_cursor(cursor)
