"""Builders for lifecycle tests: bulk rows at chosen instants, chains, and database snapshots."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, func, select

from timeline_pipeline.db.schema import (
    audit_events,
    legal_holds,
    lifecycle_runs,
    metadata,
    workspace_timeline_entries,
    workspace_timeline_entry_evidence,
    workspace_timeline_evidence,
    workspace_timeline_sync_states,
)
from timeline_pipeline.store import workspaces
from timeline_pipeline_tests.support.windows import WINDOW

AS_OF = datetime(2026, 6, 1, tzinfo=UTC)
OLD = AS_OF - timedelta(days=400)
"""Older than every default retention but the audit trail's."""
YOUNG = AS_OF - timedelta(days=1)
EVIDENCE = "evidence.workspace_timeline_evidence"
ENTRIES = "entries.workspace_timeline_entries"
BINDINGS = "entries.workspace_timeline_entry_evidence"
WINDOWS = "sync_states.workspace_timeline_sync_states"


def workspace(engine: Engine, workspace_id: str) -> None:
    with engine.begin() as conn:
        workspaces.create(conn, workspace_id, created_at=OLD - timedelta(days=10))


def evidence(
    engine: Engine,
    workspace_id: str,
    moments: Sequence[datetime],
    *,
    deleted: bool = False,
    prefix: str = "m",
) -> list[int]:
    """One evidence row per moment (moments may repeat); their ids in insertion order."""
    rows = [
        {
            "workspace_id": workspace_id,
            "source": "lark",
            "source_type": "lark_message",
            "source_key": f"chat/oc_1/message/{prefix}{i}",
            "occurred_at": at,
            "source_updated_at": at,
            "observed_at": at,
            "actor_id": "ou_a",
            "content": f"message {i}",
            "content_hash": f"{i:064d}",
            "metadata_json": {"chat_id": "oc_1", "message_type": "text", "secret": "x"},
            "scope_key": "oc_1",
            "ai_eligible": not deleted,
            "deleted": deleted,
            "revision": 1,
            "updated_at": at,
        }
        for i, at in enumerate(moments)
    ]
    t = workspace_timeline_evidence
    with engine.begin() as conn:
        if rows:
            conn.execute(t.insert(), rows)
        ids = conn.execute(
            select(t.c.id)
            .where(
                t.c.workspace_id == workspace_id,
                t.c.source_key.like(f"chat/oc_1/message/{prefix}%"),
            )
            .order_by(t.c.id)
        ).scalars()
        return list(ids)


def entry(
    engine: Engine,
    workspace_id: str,
    at: datetime,
    evidence_ids: Sequence[int],
    *,
    bound_at: datetime | None = None,
) -> int:
    """An entry at `at` bound to `evidence_ids` (bindings made at `bound_at`, default `at`)."""
    en, ee = workspace_timeline_entries, workspace_timeline_entry_evidence
    with engine.begin() as conn:
        entry_id = conn.execute(
            en.insert()
            .values(
                workspace_id=workspace_id,
                occurred_at=at,
                title="db failover",
                category="mitigation",
                source="ai",
                status="draft",
                fingerprint=f"fp-{workspace_id}-{at.isoformat()}-{len(evidence_ids)}-{evidence_ids[:1]}",
                metadata_json={},
                created_at=at,
                updated_at=at,
            )
            .returning(en.c.id)
        ).scalar_one()
        conn.execute(
            ee.insert(),
            [
                {
                    "workspace_id": workspace_id,
                    "entry_id": entry_id,
                    "evidence_id": i,
                    "created_at": bound_at or at,
                }
                for i in evidence_ids
            ],
        )
    return int(entry_id)


def window(engine: Engine, workspace_id: str, start: datetime, status: str) -> int:
    ss = workspace_timeline_sync_states
    with engine.begin() as conn:
        return int(
            conn.execute(
                ss.insert()
                .values(
                    workspace_id=workspace_id,
                    source="system",
                    source_type="lark_timeline_window",
                    source_key=f"chat/oc_1/window/{start.strftime('%Y%m%dT%H%MZ')}",
                    status=status,
                    metadata_json={},
                    scope_key="oc_1",
                    window_start=start,
                    window_end=start + WINDOW,
                    created_at=start,
                    updated_at=start,
                )
                .returning(ss.c.id)
            ).scalar_one()
        )


def count(engine: Engine, table: Any, *where: Any) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table).where(*where)).scalar_one())


def ids(engine: Engine, table: Any, *where: Any) -> set[int]:
    with engine.connect() as conn:
        return set(conn.execute(select(table.c.id).where(*where)).scalars())


def snapshot(engine: Engine) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every product table, in a stable order: before/after comparisons."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    with engine.connect() as conn:
        for table in metadata.sorted_tables:
            rows = conn.execute(select(table)).all()
            out[table.name] = sorted(tuple(repr(v) for v in r) for r in rows)
    return out


__all__ = [
    "AS_OF",
    "audit_events",
    "legal_holds",
    "lifecycle_runs",
]
