"""An incident closed the way the pipeline leaves it: messages stored as evidence (an alert from
a bot first), windows synthesized by the real runner and rules, the workspace set recovered.
Shared by the report's service, publisher and sensor tests."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

from sqlalchemy import Engine

from timeline_pipeline.domain.entries import EntryRow
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import evidence, workspaces
from timeline_pipeline_tests.curation.support import (
    NEXT_STEP,
    RECOVERED,
    ROLLBACK,
    ROOT_CAUSE,
    W1,
    W2,
    all_entries,
    incident,
    say,
    synthesize,
)
from timeline_pipeline_tests.store.factories import message

ALERT = "[FIRING] checkout p99 latency > 2s"
IMPACT = "impact: 12% of checkout requests are failing, customers cannot pay"
ACTOR = "cli:test"


def closed_incident(engine: Engine, workspace_id: str = "inc-1") -> dict[str, int]:
    """The incident of `curation/support.py` with a bot's alert before it, synthesized and set
    recovered; the evidence id of each message by its text."""
    incident(engine, workspace_id)
    alert_at = W1 + timedelta(seconds=30)
    record = message(
        ALERT, workspace_id=workspace_id, message_id=f"om_alert_{workspace_id}", at=alert_at
    )
    record = replace(record, metadata={**record.metadata, "sender_type": "app"})
    with engine.begin() as conn:
        evidence.upsert(conn, record, now=alert_at)
    ids: dict[str, int] = {}
    for text, found in zip(
        (IMPACT, ROLLBACK),
        say(engine, W1, (IMPACT, ROLLBACK), workspace_id=workspace_id),
        strict=True,
    ):
        ids[text] = found
    texts = (ROOT_CAUSE, RECOVERED, NEXT_STEP)
    for text, found in zip(texts, say(engine, W2, texts, workspace_id=workspace_id), strict=True):
        ids[text] = found
    synthesize(engine, W1, workspace_id=workspace_id)
    synthesize(engine, W2, workspace_id=workspace_id)
    set_status(engine, workspace_id, "recovered")
    return ids


def set_status(engine: Engine, workspace_id: str, status: str) -> None:
    with engine.begin() as conn:
        workspaces.set_status(conn, workspace_id, status, actor=ACTOR)


def entry_of(engine: Engine, category: str, workspace_id: str = "inc-1") -> EntryRow:
    found = [e for e in all_entries(engine, workspace_id) if e.category == category]
    assert found, f"no {category} entry among {[e.category for e in all_entries(engine)]}"
    return found[0]


def report_settings(**overrides: Any) -> LarkTimelineSettings:
    values: dict[str, Any] = {"enabled": True, "report_enabled": True}
    values.update(overrides)
    return LarkTimelineSettings(**values)


__all__ = [
    "ALERT",
    "IMPACT",
    "W1",
    "W2",
    "closed_incident",
    "entry_of",
    "report_settings",
    "set_status",
]
