"""Pin tombstones (store/pin_tombstones.py): one per workspace, message, curator and emoji, the
latest removal time kept, purged by the lifecycle after their retention and not before; a hold
on the workspace keeps them. SQLite and PostgreSQL (the `engine` fixture)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine, func, select

from timeline_pipeline.db.schema import timeline_pin_tombstones as pt
from timeline_pipeline.lifecycle.engine import PurgeEngine
from timeline_pipeline.lifecycle.registry import load_registry
from timeline_pipeline.store import pin_tombstones, workspaces

NOW = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
KEY = "pin_tombstones.timeline_pin_tombstones"


def _record(engine: Engine, emoji: str, removed_at: datetime, *, now: datetime = NOW) -> None:
    with engine.begin() as conn:
        pin_tombstones.record(
            conn,
            workspace_id="inc-1",
            message_id="om_1",
            operator="ou_1",
            emoji_type=emoji,
            removed_at=removed_at,
            now=now,
        )


def _removed_at(engine: Engine, emoji: str) -> datetime | None:
    with engine.connect() as conn:
        return pin_tombstones.removed_at(conn, "inc-1", "om_1", "ou_1", emoji)


def _count(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(pt)).scalar_one())


def test_a_tombstone_keeps_the_latest_removal_per_emoji(engine: Engine) -> None:
    with engine.begin() as conn:
        workspaces.create(conn, "inc-1", created_at=NOW - timedelta(hours=1))
    _record(engine, "Pin", NOW - timedelta(minutes=1))
    _record(engine, "Pin", NOW - timedelta(minutes=5))  # older, delivered late: no change
    assert _removed_at(engine, "Pin") == NOW - timedelta(minutes=1)
    _record(engine, "Pin", NOW)
    assert _removed_at(engine, "Pin") == NOW
    assert _removed_at(engine, "Star") is None
    _record(engine, "Star", NOW - timedelta(minutes=3))
    assert _removed_at(engine, "Star") == NOW - timedelta(minutes=3)
    assert _count(engine) == 2


def test_the_lifecycle_purges_tombstones_after_their_retention_and_not_before(
    engine: Engine,
) -> None:
    with engine.begin() as conn:
        workspaces.create(conn, "inc-1", created_at=NOW - timedelta(hours=1))
    _record(engine, "Pin", NOW)
    registry = load_registry()
    assert registry.get(KEY).default_retention_days == 7
    PurgeEngine(engine, registry).run(descriptor_key=KEY, as_of=NOW + timedelta(days=6))
    assert _count(engine) == 1
    PurgeEngine(engine, registry).run(descriptor_key=KEY, as_of=NOW + timedelta(days=8))
    assert _count(engine) == 0
