"""The shared write path against a real database: fan-out, idempotency, eligibility."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import Engine

from timeline_pipeline.domain.evidence import UpsertSummary
from timeline_pipeline.domain.workspaces import Workspace
from timeline_pipeline.ingest.writer import ingest
from timeline_pipeline.lark.normalize import NormalizedLarkMessage, normalize_event_message
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import workspaces
from timeline_pipeline_tests.receiver.conftest import add_workspace, all_rows
from timeline_pipeline_tests.receiver.lark_events import CHAT, NOW, receive

SETTINGS = LarkTimelineSettings(enabled=True, event_ingestion_enabled=True)


def normalized(message_id: str, text: str = "db down", **kwargs: Any) -> NormalizedLarkMessage:
    return normalize_event_message(
        receive(message_id, text, **kwargs)["event"], max_text_chars=4000
    )


def bound(engine: Engine) -> list[Workspace]:
    with engine.connect() as conn:
        return [b.workspace for b in workspaces.bindings_for_chat(conn, CHAT)]


def test_fan_out_to_two_workspaces_gives_two_rows_and_a_replay_gives_none(
    engine: Engine,
) -> None:
    add_workspace(engine, "inc-1")
    add_workspace(engine, "inc-2")

    targets = bound(engine)

    with engine.begin() as conn:
        first = ingest(conn, [normalized("om_1")], targets, SETTINGS, NOW)
    with engine.begin() as conn:
        again = ingest(conn, [normalized("om_1")], targets, SETTINGS, NOW)

    assert first.upserts == UpsertSummary(inserted=2)
    assert first.workspaces == {"inc-1", "inc-2"}
    assert again.upserts == UpsertSummary(duplicate=2)
    rows = all_rows(engine)
    assert [(r.workspace_id, r.source_key) for r in rows] == [
        ("inc-1", f"chat/{CHAT}/message/om_1"),
        ("inc-2", f"chat/{CHAT}/message/om_1"),
    ]


def test_a_page_of_messages_keeps_the_eligible_ones_and_counts_the_rest(engine: Engine) -> None:
    add_workspace(engine, "inc-1")
    page = [
        normalized("om_old", at=NOW - timedelta(hours=2)),  # before the workspace existed
        normalized("om_1"),
        normalized("om_2", "mitigated"),
        normalized("om_dm", chat_type="p2p"),
    ]
    targets = bound(engine)

    with engine.begin() as conn:
        result = ingest(conn, page, targets, SETTINGS, NOW)

    assert result.upserts == UpsertSummary(inserted=2)
    assert dict(result.skipped) == {"before_workspace_created": 1, "not_group_chat": 1}
    assert sorted(r.source_key.rsplit("/", 1)[1] for r in all_rows(engine)) == ["om_1", "om_2"]


def test_recovered_archived_and_aged_out_workspaces_ingest_nothing(engine: Engine) -> None:
    add_workspace(engine, "inc-recovered", status="recovered")
    add_workspace(engine, "inc-archived", status="archived")
    add_workspace(engine, "inc-old", created_at=NOW - timedelta(hours=73))
    targets = bound(engine)

    with engine.begin() as conn:
        result = ingest(conn, [normalized("om_1")], targets, SETTINGS, NOW)

    assert result.stored == 0
    assert dict(result.skipped) == {"workspace_not_firing": 2, "workspace_aged_out": 1}
    assert all_rows(engine) == []


def test_the_caller_owns_the_transaction(engine: Engine) -> None:
    add_workspace(engine, "inc-1")
    targets = bound(engine)

    with engine.connect() as conn:
        conn.begin()
        ingest(conn, [normalized("om_1")], targets, SETTINGS, NOW)
        conn.rollback()

    assert all_rows(engine) == []
