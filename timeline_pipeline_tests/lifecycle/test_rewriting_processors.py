"""Every maintenance processor whose apply rewrites what a hold keeps declares it, so the job
service asks the legal-hold gate for it (docs/lifecycle.md, "What a hold stops";
docs/maintenance.md, "Legal holds"): under a hold an apply is refused at create, an open one
pauses at its next batch, and nothing is changed. Dry-runs still run."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Engine, func, select

from timeline_pipeline.db.schema import workspace_timeline_sync_states
from timeline_pipeline.domain.errors import LegalHoldActive
from timeline_pipeline.lifecycle.holds import create_hold
from timeline_pipeline.lifecycle.registry import load_registry
from timeline_pipeline.maintenance.processors import default_registry
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import workspaces
from timeline_pipeline_tests.maintenance.support import (
    FAST,
    evidence_snapshot,
    seed_evidence,
    service,
    stale_hashes,
)

WS = "inc-1"
REWRITING = {
    "content_hash_backfill": {"workspace_id": WS},
    "window_rerun": {"workspace_id": WS, "processor_version": "rules-v9"},
    "evidence_redaction": {"workspace_id": WS, "mode": "recalled"},
}


def _hold(engine: Engine, descriptor: str | None = None) -> None:
    with engine.begin() as conn:
        create_hold(
            conn,
            load_registry(),
            workspace_id=WS,
            descriptor_key=descriptor,
            reason="preservation notice 34",
            idempotency_key="notice-34",
            actor="cli:counsel",
        )


def _windows(engine: Engine) -> int:
    ss = workspace_timeline_sync_states
    with engine.connect() as conn:
        return int(
            conn.execute(
                select(func.count()).select_from(ss).where(ss.c.workspace_id == WS)
            ).scalar_one()
        )


def test_every_processor_that_rewrites_declares_descriptors_of_the_registry() -> None:
    registry = default_registry(LarkTimelineSettings())
    lifecycle = load_registry()
    for job_type in REWRITING:
        rewrites = registry.latest(job_type).rewrites
        assert rewrites, f"{job_type} rewrites content and declares nothing"
        for key in rewrites:
            lifecycle.get(key)  # a descriptor the gate knows
    assert "entries.workspace_timeline_entries" in registry.latest("window_rerun").rewrites
    assert (
        "evidence.workspace_timeline_evidence" in registry.latest("content_hash_backfill").rewrites
    )


@pytest.mark.parametrize("job_type", sorted(REWRITING))
def test_an_apply_of_a_rewriting_processor_is_refused_under_a_hold(
    engine: Engine, job_type: str
) -> None:
    seed_evidence(engine, 3)
    with engine.begin() as conn:
        workspaces.bind_chat(conn, WS, "oc_chat")
    _hold(engine)
    jobs = service(engine)
    before = evidence_snapshot(engine)
    with pytest.raises(LegalHoldActive, match="legal hold"):
        jobs.create(
            job_type=job_type,
            idempotency_key=f"{job_type}-apply",
            parameters=REWRITING[job_type],
            limits=FAST,
            apply=True,
            actor="cli:operator",
        )
    # the dry-run reads only, and runs
    dry, _ = jobs.create(
        job_type=job_type,
        idempotency_key=f"{job_type}-dry",
        parameters=REWRITING[job_type],
        limits=FAST,
        actor="cli:operator",
    )
    assert dry.status == "ready"
    assert evidence_snapshot(engine) == before
    assert _windows(engine) == 0


@pytest.mark.parametrize("job_type", ["content_hash_backfill", "window_rerun"])
def test_an_open_apply_pauses_at_its_next_batch_once_a_hold_appears(
    engine: Engine, job_type: str
) -> None:
    seed_evidence(engine, 3)
    with engine.begin() as conn:
        workspaces.bind_chat(conn, WS, "oc_chat")
    jobs = service(engine)
    job, _ = jobs.create(
        job_type=job_type,
        idempotency_key=f"{job_type}-apply",
        parameters=REWRITING[job_type],
        limits=FAST,
        apply=True,
        actor="cli:operator",
    )
    _hold(engine, "entries.workspace_timeline_entries")  # one link holds the whole chain
    before: dict[str, Any] = {
        "evidence": evidence_snapshot(engine),
        "stale": stale_hashes(engine),
        "windows": _windows(engine),
    }
    paused = jobs.advance(job.id, revision=job.revision, actor="cli:operator")
    assert paused.status == "paused"
    assert paused.error is not None and paused.error["code"] == "legal_hold_active"
    assert before == {
        "evidence": evidence_snapshot(engine),
        "stale": stale_hashes(engine),
        "windows": _windows(engine),
    }
    assert before["stale"] == 3
