"""Recall tombstones (store/recall_tombstones.py): one per workspace and message, the first
recall time kept, read by chat, purged by the lifecycle after their retention. SQLite and
PostgreSQL (the `engine` fixture)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine, func, select

from timeline_pipeline.db.schema import workspace_timeline_recall_tombstones as rt
from timeline_pipeline.lifecycle.engine import PurgeEngine
from timeline_pipeline.lifecycle.registry import load_registry
from timeline_pipeline.store import recall_tombstones, workspaces

NOW = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
KEY = "recall_tombstones.workspace_timeline_recall_tombstones"


def _workspaces(engine: Engine, *ids: str) -> None:
    with engine.begin() as conn:
        for workspace_id in ids:
            workspaces.create(conn, workspace_id, created_at=NOW - timedelta(hours=1))


def test_a_redelivered_recall_keeps_the_first_tombstone_and_its_recall_time(
    engine: Engine,
) -> None:
    _workspaces(engine, "inc-1")
    with engine.begin() as conn:
        first = recall_tombstones.record(
            conn, "inc-1", "oc_1", "om_1", recalled_at=NOW - timedelta(minutes=2), now=NOW
        )
        again = recall_tombstones.record(
            conn, "inc-1", "oc_1", "om_1", recalled_at=NOW, now=NOW + timedelta(minutes=1)
        )
    with engine.connect() as conn:
        found = recall_tombstones.recalled(conn, ["inc-1"], ["oc_1"])
    assert (first, again) == (True, False)
    assert found == {("inc-1", "oc_1", "om_1"): NOW - timedelta(minutes=2)}


def test_tombstones_are_read_for_the_workspaces_and_chats_asked_only(engine: Engine) -> None:
    _workspaces(engine, "inc-1", "inc-2")
    with engine.begin() as conn:
        for workspace_id, chat_id, message_id in (
            ("inc-1", "oc_1", "om_1"),
            ("inc-1", "oc_2", "om_2"),
            ("inc-2", "oc_1", "om_3"),
        ):
            recall_tombstones.record(
                conn, workspace_id, chat_id, message_id, recalled_at=NOW, now=NOW
            )
    with engine.connect() as conn:
        assert set(recall_tombstones.recalled(conn, ["inc-1"], ["oc_1"])) == {
            ("inc-1", "oc_1", "om_1")
        }
        assert len(recall_tombstones.recalled(conn, ["inc-1", "inc-2"], ["oc_1", "oc_2"])) == 3
        assert recall_tombstones.recalled(conn, [], ["oc_1"]) == {}


def test_the_lifecycle_purges_tombstones_after_their_retention_and_not_before(
    engine: Engine,
) -> None:
    _workspaces(engine, "inc-1")
    with engine.begin() as conn:
        recall_tombstones.record(conn, "inc-1", "oc_1", "om_1", recalled_at=NOW, now=NOW)
    registry = load_registry()
    assert registry.get(KEY).default_retention_days == 7

    PurgeEngine(engine, registry).run(descriptor_key=KEY, as_of=NOW + timedelta(days=6))
    assert _count(engine) == 1
    PurgeEngine(engine, registry).run(descriptor_key=KEY, as_of=NOW + timedelta(days=8))
    assert _count(engine) == 0


def _count(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(rt)).scalar_one())
