"""Small builders for synthesis tests: evidence items in a window without boilerplate."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from timeline_pipeline.synthesis.contract import EvidenceItem
from timeline_pipeline_tests.support.windows import WINDOW

WINDOW_START = datetime(2025, 3, 14, 2, 10, tzinfo=UTC)
WINDOW_END = WINDOW_START + WINDOW


def evidence(
    id: int,
    text: str = "",
    *,
    at: float | None = None,
    actor: str = "ou_alice",
    thread: str | None = None,
    root: str | None = None,
    parent: str | None = None,
    message_type: str = "text",
) -> EvidenceItem:
    """Evidence `id`, `at` seconds after the window start (default: `id` * 10 seconds)."""
    seconds = id * 10 if at is None else at
    return EvidenceItem(
        id=id,
        occurred_at=WINDOW_START + timedelta(seconds=seconds),
        actor_id=actor,
        actor_display_name=None,
        text=text or f"message {id}",
        content_hash=f"hash-{id}",
        message_id=f"om_{id}",
        chat_id="oc_chat",
        thread_id=thread,
        root_id=root,
        parent_id=parent,
        message_type=message_type,
    )
