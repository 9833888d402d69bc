"""The statements reconciliation needs: the progress marker's CAS (sync-state store), the
threads seen in evidence (evidence store) and the thread listings (their own store)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from sqlalchemy import Engine

from timeline_pipeline.domain.evidence import EvidenceRecord
from timeline_pipeline.domain.sync_states import CHECKPOINT_MARKER_KEY
from timeline_pipeline.store import checkpoints, evidence, sync_states
from timeline_pipeline.store.checkpoints import record_progress
from timeline_pipeline.store.evidence import thread_first_seen
from timeline_pipeline.store.reconcile_threads import (
    mark_thread_listed,
    prune_thread_listings,
    threads_last_listed,
)
from timeline_pipeline_tests.store.factories import T0, make_workspace, message


def test_progress_is_compare_and_set_and_leaves_the_high_water_mark_alone(engine: Engine) -> None:
    make_workspace(engine)
    with engine.begin() as conn:
        state = checkpoints.ensure_checkpoint(conn, "inc-1", "oc_chat")
        assert checkpoints.advance_checkpoint(
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
    assert stored.metadata[CHECKPOINT_MARKER_KEY] == {"pages": 1}
    assert (stored.status, stored.processing_started_at) == ("processing", T0)
    assert (stored.last_seen_cursor, stored.last_seen_updated_at) == ("000000000000001/om_a", T0)


def in_thread(message_id: str, thread_id: str | None, minutes: int) -> EvidenceRecord:
    record = message(message_id=message_id, at=T0 + timedelta(minutes=minutes))
    return replace(record, metadata={**record.metadata, "thread_id": thread_id})


def test_known_threads_are_every_thread_with_evidence_since_the_floor_with_its_first_message(
    engine: Engine,
) -> None:
    make_workspace(engine)
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
        found = thread_first_seen(conn, "inc-1", "oc_chat", since)
        other_chat = thread_first_seen(conn, "inc-1", "oc_other", since)
    assert found == {
        "omt_a": T0 + timedelta(minutes=20),
        "omt_b": T0 + timedelta(minutes=30),
        "omt_c": T0 + timedelta(minutes=25),
    }
    assert other_chat == {}


def test_a_thread_listing_is_upserted_per_chat_and_pruned_below_the_floor(engine: Engine) -> None:
    make_workspace(engine)
    with engine.begin() as conn:
        mark_thread_listed(conn, "inc-1", "oc_chat", "omt_a", at=T0)
        mark_thread_listed(conn, "inc-1", "oc_chat", "omt_b", at=T0)
        mark_thread_listed(conn, "inc-1", "oc_other", "omt_a", at=T0)
        mark_thread_listed(conn, "inc-1", "oc_chat", "omt_a", at=T0 + timedelta(hours=2))
    with engine.connect() as conn:
        assert threads_last_listed(conn, "inc-1", "oc_chat") == {
            "omt_a": T0 + timedelta(hours=2),
            "omt_b": T0,
        }
    with engine.begin() as conn:
        pruned = prune_thread_listings(conn, "inc-1", "oc_chat", T0 + timedelta(hours=1))
    with engine.connect() as conn:
        assert threads_last_listed(conn, "inc-1", "oc_chat") == {"omt_a": T0 + timedelta(hours=2)}
        assert threads_last_listed(conn, "inc-1", "oc_other") == {"omt_a": T0}
    assert pruned == 1
