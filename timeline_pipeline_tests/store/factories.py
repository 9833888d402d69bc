"""Small builders for store tests: readable defaults, explicit differences."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine

from timeline_pipeline.domain.evidence import EvidenceRecord, content_hash
from timeline_pipeline.domain.keys import (
    SOURCE_LARK,
    SOURCE_TYPE_LARK_MESSAGE,
    message_source_key,
)
from timeline_pipeline.store import workspaces

T0 = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)


def make_workspace(engine: Engine, workspace_id: str = "inc-1", **kwargs: Any) -> None:
    with engine.begin() as conn:
        workspaces.create(conn, workspace_id, created_at=kwargs.pop("created_at", T0), **kwargs)


def message(
    text: str = "db primary is down",
    *,
    workspace_id: str = "inc-1",
    chat_id: str = "oc_chat",
    message_id: str = "om_1",
    at: datetime = T0,
    updated: datetime | None = None,
    deleted: bool = False,
    ai_eligible: bool = True,
) -> EvidenceRecord:
    return EvidenceRecord(
        workspace_id=workspace_id,
        source=SOURCE_LARK,
        source_type=SOURCE_TYPE_LARK_MESSAGE,
        source_key=message_source_key(chat_id, message_id),
        occurred_at=at,
        source_updated_at=updated or at,
        content="" if deleted else text,
        content_hash=content_hash(f"text|{'' if deleted else text}|{deleted}"),
        actor_id="ou_alice",
        scope_key=chat_id,
        ai_eligible=ai_eligible and not deleted,
        deleted=deleted,
        metadata={
            "chat_id": chat_id,
            "message_type": "text",
            **({"deleted": True} if deleted else {}),
        },
    )


def edited(
    record: EvidenceRecord, text: str, after: timedelta = timedelta(minutes=1)
) -> EvidenceRecord:
    return replace(
        record,
        content=text,
        content_hash=content_hash(f"text|{text}|False"),
        source_updated_at=record.source_updated_at + after,
    )
