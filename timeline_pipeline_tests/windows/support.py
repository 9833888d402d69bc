"""Builders for discovery and synthesis tests: chats with evidence at given times, ticks, and a
stand-in for "the run finished" that goes through the real state transitions."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine

from timeline_pipeline.domain.sync_states import SyncState
from timeline_pipeline.domain.window_keys import WindowRef
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import evidence, sync_states, workspaces
from timeline_pipeline.store import window_states as window_store
from timeline_pipeline.windows.discovery import DiscoveryTick, RunLookup, TickOutcome
from timeline_pipeline.windows.planning import DiscoveryCursor
from timeline_pipeline_tests.store.factories import message
from timeline_pipeline_tests.support.windows import WINDOW as WINDOW

T0 = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
MIN = timedelta(minutes=1)


def settings(**overrides: Any) -> LarkTimelineSettings:
    values: dict[str, Any] = {"enabled": True, "synthesis_window_close_grace": "3m"}
    values.update(overrides)
    return LarkTimelineSettings(**values)


def workspace(
    engine: Engine,
    workspace_id: str = "inc-1",
    chats: Sequence[str] = ("oc_chat",),
    *,
    created_at: datetime = T0 - timedelta(hours=1),
    status: str = "firing",
) -> None:
    with engine.begin() as conn:
        workspaces.create(conn, workspace_id, created_at=created_at, status=status)
        for chat in chats:
            workspaces.bind_chat(conn, workspace_id, chat)


def post(
    engine: Engine,
    times: Iterable[datetime],
    *,
    workspace_id: str = "inc-1",
    chat_id: str = "oc_chat",
    text: str = "checkout latency is above 2s for all EU customers",
    prefix: str = "om",
    **fields: Any,
) -> list[int]:
    """Store one message per time; returns the evidence ids."""
    ids: list[int] = []
    with engine.begin() as conn:
        for at in times:
            message_id = f"{prefix}_{workspace_id}_{chat_id}_{at.strftime('%H%M%S%f')}"
            record = message(
                text, workspace_id=workspace_id, chat_id=chat_id, message_id=message_id, at=at
            )
            if fields:
                record = replace(record, **fields)
            evidence.upsert(conn, record, now=at)
            row = evidence.get_by_key(
                conn, workspace_id, record.source, record.source_type, record.source_key
            )
            assert row is not None
            ids.append(row.id)
    return ids


def tick(
    engine: Engine,
    config: LarkTimelineSettings,
    cursor: DiscoveryCursor,
    now: datetime,
    run_lookup: RunLookup | None = None,
) -> TickOutcome:
    return DiscoveryTick(engine, config, cursor, now, run_lookup=run_lookup).run()


def keys(outcome: TickOutcome) -> list[str]:
    return [r.ref.partition_key for r in outcome.requests]


def finish(
    engine: Engine,
    state: SyncState,
    now: datetime,
    *,
    status: str = "completed",
    max_attempts: int = 3,
) -> SyncState:
    """What a successful run does to the state: claim, then finish."""
    with engine.begin() as conn:
        claimed = window_store.claim_window(
            conn,
            state,
            owner="test-run",
            max_attempts=max_attempts,
            stale_timeout=timedelta(minutes=15),
            now=now,
        )
        assert claimed is not None, "the requested window could not be claimed"
        done = window_store.finish_window(
            conn, claimed, status=status, aggregate_hash="h", metadata={}, now=now
        )
    assert done is not None
    return done


def claim(engine: Engine, state: SyncState, now: datetime) -> SyncState:
    with engine.begin() as conn:
        claimed = window_store.claim_window(
            conn,
            state,
            owner="test-run",
            max_attempts=3,
            stale_timeout=timedelta(minutes=15),
            now=now,
        )
    assert claimed is not None
    return claimed


def window_states(engine: Engine, workspace_id: str = "inc-1") -> dict[str, SyncState]:
    """Window states by partition key."""
    from sqlalchemy import select

    from timeline_pipeline.db.schema import workspace_timeline_sync_states as ss

    with engine.connect() as conn:
        ids = [
            row.id
            for row in conn.execute(
                select(ss.c.id).where(
                    ss.c.workspace_id == workspace_id, ss.c.source_type == "lark_timeline_window"
                )
            )
        ]
        found: dict[str, SyncState] = {}
        for state_id in ids:
            state = sync_states.get(conn, state_id)
            assert state is not None and state.scope_key and state.window_start
            ref = WindowRef(
                workspace_id, state.scope_key, state.window_start, state.processor_version
            )
            found[ref.partition_key] = state
        return found


def no_runs(_keys: Sequence[str]) -> Mapping[str, bool]:
    return {}
