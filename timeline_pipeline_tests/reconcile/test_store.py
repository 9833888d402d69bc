"""The two statements reconciliation adds: the progress marker's CAS and the thread lookup."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from sqlalchemy import Engine

from timeline_pipeline.domain.evidence import EvidenceRecord
from timeline_pipeline.reconcile.planning import MARKER_KEY
from timeline_pipeline.reconcile.store import active_thread_ids, record_progress
from timeline_pipeline.store import evidence, sync_states
from timeline_pipeline_tests.store.factories import T0, make_workspace, message


def test_progress_is_compare_and_set_and_leaves_the_high_water_mark_alone(engine: Engine) -> None:
    make_workspace(engine)
    with engine.begin() as conn:
        state = sync_states.ensure_checkpoint(conn, "inc-1", "oc_chat")
        assert sync_states.advance_checkpoint(
            conn, state, cursor="000000000000001/om_a", covered_until=T0, metadata={}
        )
        read = sync_states.get(conn, state.id)
        assert read is not None
        state = read

        moved = record_progress(conn, state, {"pages": 1}, now=T0)
        assert moved is not None
        stale = record_progress(conn, state, {"pages": 99}, now=T0)

        stored = sync_states.get(conn, state.id)
    assert stale is None
    assert stored is not None
    assert stored.revision == moved.revision == state.revision + 1
    assert stored.metadata[MARKER_KEY] == {"pages": 1}
    assert (stored.status, stored.processing_started_at) == ("processing", T0)
    assert (stored.last_seen_cursor, stored.last_seen_updated_at) == ("000000000000001/om_a", T0)


def test_active_threads_are_those_with_evidence_in_the_range_most_recent_first(
    engine: Engine,
) -> None:
    make_workspace(engine)

    def in_thread(message_id: str, thread_id: str | None, minutes: int) -> EvidenceRecord:
        record = message(message_id=message_id, at=T0 + timedelta(minutes=minutes))
        return replace(record, metadata={**record.metadata, "thread_id": thread_id})

    records = [
        in_thread("om_1", "omt_old", 0),
        in_thread("om_2", "omt_a", 20),
        in_thread("om_3", "omt_b", 30),
        in_thread("om_4", "omt_a", 40),
        in_thread("om_5", None, 50),
        in_thread("om_6", "omt_c", 25),
    ]
    with engine.begin() as conn:
        evidence.upsert_many(conn, records)
        since = T0 + timedelta(minutes=10)
        found = active_thread_ids(conn, "inc-1", "oc_chat", since, limit=10)
        limited = active_thread_ids(conn, "inc-1", "oc_chat", since, limit=2)
        other_chat = active_thread_ids(conn, "inc-1", "oc_other", since, limit=10)
        none = active_thread_ids(conn, "inc-1", "oc_chat", since, limit=0)
    assert found == ["omt_a", "omt_b", "omt_c"]
    assert limited == ["omt_a", "omt_b"]
    assert other_chat == none == []
