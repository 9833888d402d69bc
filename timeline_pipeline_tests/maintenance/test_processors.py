"""The three processors on SQLite and PostgreSQL: what their dry-runs count, what apply
changes, what verification rejects, and how stored state they cannot read fails closed."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, text

from timeline_pipeline.domain.errors import InvalidInput
from timeline_pipeline.domain.keys import SOURCE_SYSTEM, SOURCE_TYPE_WINDOW
from timeline_pipeline.domain.window_keys import WindowRef
from timeline_pipeline.ingest.records import evidence_record
from timeline_pipeline.lark.normalize import normalize_event_message, redact
from timeline_pipeline.maintenance.service import JobService
from timeline_pipeline.store import evidence, sync_states, workspaces
from timeline_pipeline_tests.maintenance.support import (
    FAST,
    drive,
    evidence_snapshot,
    seed_evidence,
    service,
    stale_hashes,
    stored,
)
from timeline_pipeline_tests.receiver.lark_events import CHAT, receive
from timeline_pipeline_tests.store.factories import T0, make_workspace, message


def _job(svc: JobService, job_type: str, parameters: dict[str, Any], key: str, **kw: Any) -> Any:
    job, _ = svc.create(
        job_type=job_type, idempotency_key=key, parameters=parameters, limits=FAST, **kw
    )
    return job


# --- content_hash_backfill ----------------------------------------------------------------


def test_rows_stored_by_ingestion_already_carry_the_hash_the_backfill_computes(
    engine: Engine,
) -> None:
    make_workspace(engine)
    messages = [
        normalize_event_message(receive(f"om_{n}", f"text {n}")["event"], max_text_chars=4000)
        for n in range(12)
    ]
    messages[3] = redact(messages[3], recalled_at=T0)  # a recall keeps its own hash too
    records = [evidence_record(m, "inc-1") for m in messages]
    with engine.begin() as conn:
        evidence.upsert_many(conn, records)
    svc = service(engine)
    done = drive(svc, _job(svc, "content_hash_backfill", {"workspace_id": "inc-1"}, "k"))
    assert done.result == {"v": 1, "scanned": 12, "would_update": 0}


def test_the_backfill_touches_only_its_workspace(engine: Engine) -> None:
    seed_evidence(engine, 12)
    seed_evidence(engine, 5, workspace_id="inc-2")
    svc = service(engine)
    done = drive(
        svc, _job(svc, "content_hash_backfill", {"workspace_id": "inc-1"}, "k", apply=True)
    )
    assert done.status == "completed"
    assert (stale_hashes(engine, "inc-1"), stale_hashes(engine, "inc-2")) == (0, 5)


# --- evidence_redaction ---------------------------------------------------------------------


def _recalled_with_residue(engine: Engine, count: int) -> None:
    """Recalled rows whose text and content metadata survived (stored before the policy)."""
    make_workspace(engine)
    rows = [
        replace(
            message(f"kept {n}", message_id=f"om_r{n}", at=T0 + timedelta(seconds=n), deleted=True),
            content=f"secret {n}",
            metadata={
                "chat_id": "oc_chat",
                "message_type": "file",
                "deleted": True,
                "file_name": f"secret-{n}.pdf",
                "recalled_at": T0.isoformat(),
            },
        )
        for n in range(count)
    ]
    live = [message(f"live {n}", message_id=f"om_l{n}", at=T0) for n in range(3)]
    with engine.begin() as conn:
        evidence.upsert_many(conn, [*rows, *live], now=T0)


def test_redaction_of_recalled_rows_counts_on_dry_run_then_redacts_and_verifies(
    engine: Engine,
) -> None:
    _recalled_with_residue(engine, 14)
    before = evidence_snapshot(engine)
    svc = service(engine)
    params = {"workspace_id": "inc-1", "mode": "recalled"}
    dry = drive(svc, _job(svc, "evidence_redaction", params, "dry"))
    assert dry.result == {"v": 1, "mode": "recalled", "scanned": 14, "would_redact": 14}
    assert evidence_snapshot(engine) == before
    done = drive(svc, _job(svc, "evidence_redaction", params, "apply", apply=True))
    assert done.status == "completed"
    assert done.result == {
        "v": 1,
        "mode": "recalled",
        "redacted": 14,
        "verified": 14,
        "remaining": 0,
    }
    with engine.connect() as conn:
        rows = evidence.id_page(conn, "inc-1", after_id=0, limit=100)
    recalled = [r for r in rows if r.deleted]
    assert all(r.content == "" and "file_name" not in r.metadata for r in recalled)
    assert all(r.metadata["recalled_at"] == T0.isoformat() for r in recalled)  # first recall
    assert sorted(r.content for r in rows if not r.deleted) == ["live 0", "live 1", "live 2"]


def test_redacting_a_whole_workspace_waits_until_it_stops_ingesting(engine: Engine) -> None:
    seed_evidence(engine, 12)
    svc = service(engine)
    params = {"workspace_id": "inc-1", "mode": "workspace"}
    with pytest.raises(InvalidInput, match="firing"):
        _job(svc, "evidence_redaction", params, "k", apply=True)
    with engine.begin() as conn:
        workspaces.set_status(conn, "inc-1", "archived", actor="cli:test")
    job = _job(svc, "evidence_redaction", params, "k2", apply=True)
    job = svc.advance(job.id, revision=job.revision)
    job = svc.advance(job.id, revision=job.revision)
    assert job.phase == "verify"
    with engine.begin() as conn:  # an old writer puts a row back behind the scan cursor
        conn.execute(text("UPDATE workspace_timeline_evidence SET content = 'back' WHERE id = 4"))
    job = svc.advance(job.id, revision=job.revision)
    assert job.status == "paused" and job.error is not None
    assert (job.error["reason"], job.error["evidence_id"]) == ("residual_unredacted_row", 4)


# --- window_rerun ---------------------------------------------------------------------------


def _chat_with_windows(engine: Engine) -> None:
    """Three non-empty 10-minute windows of one chat, long closed."""
    make_workspace(engine)
    with engine.begin() as conn:
        workspaces.bind_chat(conn, "inc-1", CHAT)
    records = [
        message(f"m {n}", chat_id=CHAT, message_id=f"om_{n}", at=T0 + timedelta(minutes=m))
        for n, m in enumerate([1, 2, 3, 14, 35, 36])
    ]
    with engine.begin() as conn:
        evidence.upsert_many(conn, records, now=T0)


def test_a_window_rerun_counts_windows_and_evidence_then_creates_versioned_states(
    engine: Engine,
) -> None:
    _chat_with_windows(engine)
    svc = service(engine)
    params = {"workspace_id": "inc-1", "processor_version": "rules-v9"}
    job, _ = svc.create(
        job_type="window_rerun",
        idempotency_key="dry",
        parameters=params,
        limits=replace(FAST, batch_size=2),
    )
    dry = drive(svc, job)
    assert dry.result is not None
    assert (dry.result["windows"], dry.result["evidence"], dry.result["would_create"]) == (3, 6, 3)
    assert dry.batches == 2  # two windows, then one and the end of the walk
    job, _ = svc.create(
        job_type="window_rerun",
        idempotency_key="apply",
        parameters=params,
        limits=replace(FAST, batch_size=2),
        apply=True,
    )
    done = drive(svc, job)
    assert done.status == "completed" and done.result is not None
    assert (done.result["created"], done.result["verified"]) == (3, 3)
    with engine.connect() as conn:
        for minute in (0, 10, 30):
            key = WindowRef("inc-1", CHAT, T0 + timedelta(minutes=minute), "rules-v9").source_key
            state = sync_states.get_by_key(conn, "inc-1", SOURCE_SYSTEM, SOURCE_TYPE_WINDOW, key)
            assert state is not None and state.status == "pending", key


def test_a_window_rerun_refuses_bad_parameters(engine: Engine) -> None:
    _chat_with_windows(engine)
    svc = service(engine)
    for params, reason in [
        ({"workspace_id": "inc-1"}, "processor_version"),
        ({"workspace_id": "inc-1", "processor_version": "a/b"}, "processor version"),
        ({"workspace_id": "inc-1", "processor_version": "v2", "since": "yesterday"}, "since"),
        ({"workspace_id": "inc-1", "processor_version": "v2", "chat_id": "oc_other"}, "bound"),
    ]:
        with pytest.raises(InvalidInput, match=reason):
            _job(svc, "window_rerun", params, "k")


# --- fail closed ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("column", "value", "code"),
    [
        ("processor_version", "'99'", "unknown_processor"),
        ("checkpoint_json", '\'{"v": 7, "after_id": 3}\'', "malformed_state"),
        ("checkpoint_json", '\'{"v": 1, "after_id": "x"}\'', "malformed_state"),
        ("parameters_json", "'{}'", "malformed_state"),
    ],
)
def test_stored_state_no_processor_can_read_pauses_the_job_and_changes_nothing(
    engine: Engine, column: str, value: str, code: str
) -> None:
    seed_evidence(engine, 12)
    svc = service(engine)
    job = _job(svc, "content_hash_backfill", {"workspace_id": "inc-1"}, "k", apply=True)
    with engine.begin() as conn:
        conn.execute(text(f"UPDATE maintenance_jobs SET {column} = {value}"))
    failed = svc.advance(job.id, revision=job.revision)
    assert failed.status == "paused" and failed.error is not None
    assert failed.error["code"] == code
    assert stale_hashes(engine) == 12
    assert stored(engine, job.id).batches == 0
