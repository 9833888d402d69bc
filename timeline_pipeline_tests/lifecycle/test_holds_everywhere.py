"""One workspace under a legal hold walks through every path that deletes or redacts
(docs/lifecycle.md, "What a hold stops"): the purge engine, the CLI purge, the Dagster purge,
a live recall, the recall sweep, a maintenance redaction apply and the delegated purge of thread
listings. Every row stays; after the release the purge and the redactions are done."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import dagster as dg
import pytest
from click.testing import CliRunner
from sqlalchemy import Engine, func, select

from timeline_pipeline.cli.main import cli
from timeline_pipeline.db.schema import (
    audit_events,
    workspace_timeline_evidence,
    workspace_timeline_reconcile_threads,
)
from timeline_pipeline.domain.errors import LegalHoldActive
from timeline_pipeline.ingest import recall
from timeline_pipeline.lifecycle import hold_gate
from timeline_pipeline.lifecycle.engine import PurgeEngine
from timeline_pipeline.lifecycle.errors import HoldCannotHold
from timeline_pipeline.lifecycle.holds import create_hold, release_hold
from timeline_pipeline.lifecycle.registry import load_registry
from timeline_pipeline.maintenance.limits import Limits
from timeline_pipeline.maintenance.processors import default_registry
from timeline_pipeline.maintenance.service import JobService
from timeline_pipeline.orchestration.lifecycle import lifecycle_dry_run, lifecycle_purge
from timeline_pipeline.orchestration.resources import DatabaseResource
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import evidence as evidence_store
from timeline_pipeline.store import workspaces
from timeline_pipeline.store.reconcile_threads import mark_thread_listed, prune_thread_listings
from timeline_pipeline_tests.lifecycle.support import OLD, evidence, workspace

ev = workspace_timeline_evidence
rt = workspace_timeline_reconcile_threads
WS = "inc-held"
LIMITS = Limits(batch_size=100, delay_ms=1, lock_timeout_ms=500, statement_timeout_ms=3000)


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    with dg.instance_for_test() as made:
        yield made


def _rows(engine: Engine) -> list[tuple[int, str, bool, object]]:
    with engine.connect() as conn:
        return [
            (r.id, r.content, bool(r.deleted), r.held_content_json)
            for r in conn.execute(
                select(ev.c.id, ev.c.content, ev.c.deleted, ev.c.held_content_json)
                .where(ev.c.workspace_id == WS)
                .order_by(ev.c.id)
            )
        ]


def _listings(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(
            conn.execute(
                select(func.count()).select_from(rt).where(rt.c.workspace_id == WS)
            ).scalar_one()
        )


def _prune(engine: Engine) -> int | None:
    with engine.begin() as conn:
        return hold_gate.unless_held(
            conn,
            hold_gate.THREAD_LISTINGS,
            WS,
            lambda: prune_thread_listings(conn, WS, "oc_1", datetime.now(UTC)),
            what="prune",
        )


def test_a_held_workspace_survives_every_deleting_path_and_goes_once_released(
    db_url: str, engine: Engine, instance: dg.DagsterInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIMELINE_DATABASE_URL", db_url)
    workspace(engine, WS)
    with engine.begin() as conn:
        workspaces.set_status(conn, WS, "recovered", actor="cli:test")
    ids = evidence(engine, WS, [OLD] * 3)
    legacy = evidence(engine, WS, [OLD], deleted=True, prefix="old")  # recalled, text kept
    with engine.begin() as conn:
        mark_thread_listed(conn, WS, "oc_1", "t1", at=OLD)
    service = JobService(engine, default_registry(LarkTimelineSettings()))
    dry, _ = service.create(
        job_type="evidence_redaction",
        idempotency_key="redact-before-hold",
        parameters={"workspace_id": WS, "mode": "workspace"},
        limits=LIMITS,
        apply=True,
        actor="cli:operator",
    )
    with engine.begin() as conn:
        hold = create_hold(
            conn,
            load_registry(),
            workspace_id=WS,
            descriptor_key=None,
            reason="preservation notice 17",
            idempotency_key="notice-17",
            actor="cli:counsel",
        ).hold
    before = _rows(engine)

    # purge engine, every workspace: held rows are counted, none goes
    outcome = PurgeEngine(engine, load_registry()).run()
    assert outcome.total("held") >= 3
    # CLI purge of the held workspace: refused with one line, exit 1
    cli_result = CliRunner().invoke(cli, ["lifecycle", "run", "--workspace", WS])
    assert cli_result.exit_code == 1
    assert "legal_hold_active" in cli_result.stderr or "legal hold" in cli_result.stderr
    # Dagster purge
    result = dg.materialize(
        [lifecycle_dry_run, lifecycle_purge],
        instance=instance,
        resources={"database": DatabaseResource(url=db_url)},
    )
    assert result.success
    # maintenance redaction: a new apply is refused, the open one pauses at its next batch
    with pytest.raises(LegalHoldActive):
        service.create(
            job_type="evidence_redaction",
            idempotency_key="redact-under-hold",
            parameters={"workspace_id": WS, "mode": "recalled"},
            limits=LIMITS,
            apply=True,
        )
    paused = service.advance(dry.id, revision=dry.revision, actor="cli:operator")
    assert paused.status == "paused"
    assert paused.error is not None and paused.error["code"] == "legal_hold_active"
    # delegated purge of thread listings
    assert _prune(engine) is None
    assert _listings(engine) == 1
    assert _rows(engine) == before

    # a live recall: hidden from every read at once, its content kept aside
    with engine.begin() as conn:
        counts = recall.redact_everywhere(
            conn,
            [WS],
            chat_id="oc_1",
            message_id="m0",
            recalled_at=datetime.now(UTC),
            now=datetime.now(UTC),
        )
    assert counts[recall.HELD] == 1
    with engine.connect() as conn:
        shown = evidence_store.get_many(conn, WS, [ids[0]])[0]
        kept = evidence_store.held_content(conn, WS, ids[0])
    assert (shown.content, shown.deleted, shown.ai_eligible, shown.held_content) == (
        "",
        True,
        False,
        True,
    )
    assert kept is not None and kept["content"] == "message 0"
    # the recall sweep of a purge leaves the held workspace alone
    PurgeEngine(engine, load_registry()).run()
    with engine.connect() as conn:
        assert evidence_store.get_many(conn, WS, legacy)[0].content == "message 0"
        assert evidence_store.held_content(conn, WS, ids[0]) is not None
    assert len(_rows(engine)) == 4

    # release: the purge and the redaction are done
    with engine.begin() as conn:
        release_hold(
            conn,
            hold_id=hold.id,
            reason="matter closed, counsel approved",
            idempotency_key="release-17",
            actor="cli:counsel",
        )
    outcome = PurgeEngine(engine, load_registry()).run()
    assert outcome.total("redacted") >= 2
    assert outcome.total("purged") >= 4
    assert _rows(engine) == []
    assert _prune(engine) == 1
    assert _listings(engine) == 0
    with engine.connect() as conn:
        actions = [
            (r.actor, r.action, r.severity)
            for r in conn.execute(
                select(audit_events.c.actor, audit_events.c.action, audit_events.c.severity)
                .where(audit_events.c.workspace_id == WS)
                .order_by(audit_events.c.id)
            )
        ]
    assert ("cli:counsel", "lifecycle.hold.create", "critical") in actions
    assert ("cli:counsel", "lifecycle.hold.release", "critical") in actions
    assert ("cli:operator", "maintenance.create", "info") in actions
    assert ("cli:operator", "maintenance.paused", "info") in actions


def test_a_maintenance_redaction_completes_once_the_hold_is_released(engine: Engine) -> None:
    workspace(engine, WS)
    with engine.begin() as conn:
        workspaces.set_status(conn, WS, "recovered", actor="cli:test")
    evidence(engine, WS, [OLD] * 4)
    with engine.begin() as conn:
        hold = create_hold(
            conn,
            load_registry(),
            workspace_id=WS,
            descriptor_key="evidence.workspace_timeline_evidence",
            reason="preservation notice 18",
            idempotency_key="notice-18",
            actor="cli:counsel",
        ).hold
    service = JobService(engine, default_registry(LarkTimelineSettings()))
    args = {
        "job_type": "evidence_redaction",
        "parameters": {"workspace_id": WS, "mode": "workspace"},
        "limits": LIMITS,
        "apply": True,
    }
    with pytest.raises(LegalHoldActive, match="legal hold"):
        service.create(idempotency_key="r-1", **args)  # type: ignore[arg-type]
    with engine.begin() as conn:
        release_hold(
            conn,
            hold_id=hold.id,
            reason="matter closed, counsel approved",
            idempotency_key="release-18",
            actor="cli:counsel",
        )
    job, _ = service.create(idempotency_key="r-2", **args)  # type: ignore[arg-type]
    for _ in range(10):
        if job.status != "ready":
            break
        job = service.advance(job.id, revision=job.revision)
    assert job.status == "completed"
    assert all(content == "" for _, content, _, _ in _rows(engine))


def test_a_hold_on_a_table_of_no_workspace_is_refused(engine: Engine) -> None:
    workspace(engine, WS)
    with engine.begin() as conn, pytest.raises(HoldCannotHold, match="no workspace column"):
        create_hold(
            conn,
            load_registry(),
            workspace_id=WS,
            descriptor_key="retired_partitions.lifecycle_retired_partitions",
            reason="preservation notice 19",
            idempotency_key="notice-19",
            actor="cli:counsel",
        )


def test_hold_idempotency_keys_are_scoped_per_workspace(engine: Engine) -> None:
    for ws in ("inc-a", "inc-b"):
        workspace(engine, ws)
    made = {}
    for ws in ("inc-a", "inc-b"):
        with engine.begin() as conn:
            made[ws] = create_hold(
                conn,
                load_registry(),
                workspace_id=ws,
                descriptor_key=None,
                reason=f"preservation notice {ws}",
                idempotency_key="same-key",
                actor="token:t1",
            )
    assert made["inc-a"].changed and made["inc-b"].changed
    assert made["inc-a"].hold.id != made["inc-b"].hold.id


def test_a_hold_that_appears_during_a_delegated_purge_rolls_it_back(engine: Engine) -> None:
    workspace(engine, WS)
    with engine.begin() as conn:
        mark_thread_listed(conn, WS, "oc_1", "t1", at=OLD)

    def prune_then_hold(conn: object) -> int:
        deleted = prune_thread_listings(conn, WS, "oc_1", datetime.now(UTC))  # type: ignore[arg-type]
        create_hold(
            conn,  # type: ignore[arg-type]
            load_registry(),
            workspace_id=WS,
            descriptor_key=None,
            reason="preservation notice 20",
            idempotency_key="notice-20",
            actor="cli:counsel",
            now=datetime.now(UTC) - timedelta(seconds=1),
        )
        return deleted

    with engine.begin() as conn:
        assert (
            hold_gate.unless_held(
                conn, hold_gate.THREAD_LISTINGS, WS, lambda: prune_then_hold(conn), what="prune"
            )
            is None
        )
    assert _listings(engine) == 1


def test_a_message_arriving_after_its_recall_in_a_held_workspace_has_its_content_set_aside(
    engine: Engine,
) -> None:
    """docs/lifecycle.md, "A recall under a hold", whichever arrives first: the message that
    follows its recall is redacted in its columns and its content kept aside, as the message
    that precedes its recall is."""
    from timeline_pipeline.ingest.writer import ingest
    from timeline_pipeline.lark.normalize import NormalizedLarkMessage, normalize_event_message
    from timeline_pipeline_tests.receiver.conftest import add_workspace
    from timeline_pipeline_tests.receiver.lark_events import CHAT, NOW, receive

    add_workspace(engine, WS)
    with engine.begin() as conn:
        create_hold(
            conn,
            load_registry(),
            workspace_id=WS,
            descriptor_key=None,
            reason="preservation notice 21",
            idempotency_key="notice-21",
            actor="cli:counsel",
        )
        bound = [b.workspace for b in workspaces.bindings_for_chat(conn, CHAT)]
    at, recalled_at = NOW - timedelta(minutes=5), NOW - timedelta(minutes=1)
    settings = LarkTimelineSettings(enabled=True, event_ingestion_enabled=True)

    def message(message_id: str) -> NormalizedLarkMessage:
        event = receive(message_id, "card 4111 1111 1111 1111 was charged twice", at=at)
        return normalize_event_message(event["event"], max_text_chars=4000)

    def recall_now(message_id: str) -> None:
        with engine.begin() as conn:
            recall.redact_everywhere(
                conn, [WS], chat_id=CHAT, message_id=message_id, recalled_at=recalled_at, now=NOW
            )

    def store(message_id: str) -> None:
        with engine.begin() as conn:
            ingest(conn, [message(message_id)], bound, settings, NOW)

    store("om_usual")
    recall_now("om_usual")
    recall_now("om_early")
    store("om_early")

    with engine.connect() as conn:
        rows = {
            r.source_key.rsplit("/", 1)[1]: r
            for r in conn.execute(select(ev).where(ev.c.workspace_id == WS))
        }
    usual, early = rows["om_usual"], rows["om_early"]
    assert (early.content, early.deleted, early.ai_eligible) == ("", True, False)
    assert early.held_content_json is not None
    assert early.held_content_json["content"] == "card 4111 1111 1111 1111 was charged twice"
    assert early.held_content_json == usual.held_content_json
    assert (early.content_hash, early.metadata_json) == (usual.content_hash, usual.metadata_json)
