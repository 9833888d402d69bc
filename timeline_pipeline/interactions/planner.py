"""Plan a window's review card: the drafts it offers and where it goes. Called by the window
run in the transaction that finishes the window, so a completed window with drafts always has
its card queued; the worker posts it.

The card is a reply in the thread when every draft's evidence comes from one thread, a message
in the chat otherwise. A rerun of the same window and processor version finds the card planned
before (one idempotency uuid) and plans nothing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from sqlalchemy import Connection

from timeline_pipeline.curation.rules import CATEGORIES, TITLE_MAX_CHARS
from timeline_pipeline.domain.card_requests import KIND_DRAFT_REVIEW, CardEntry, CardRequest
from timeline_pipeline.domain.sync_states import SyncState
from timeline_pipeline.security.callback_tokens import card_uuid
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import entries, evidence
from timeline_pipeline.store import interaction_requests as cards
from timeline_pipeline.store.interaction_requests import CardRow

MAX_CARD_ENTRIES: Final = 20
"""A window proposes a handful of drafts; a card with more would not fit Lark's size limit."""


def thread_root(metadata: list[dict[str, object]]) -> str | None:
    """The one thread every message belongs to (its root message id), or None."""
    roots = {str(m.get("root_id") or "") if m.get("thread_id") else "" for m in metadata}
    if len(roots) != 1:
        return None
    (root,) = roots
    return root or None


def plan_review_card(
    conn: Connection, window: SyncState, settings: LarkTimelineSettings, *, now: datetime
) -> CardRow | None:
    if not settings.review_cards_enabled or window.scope_key is None:
        return None
    drafts = entries.drafts_of_window(conn, window.id, limit=MAX_CARD_ENTRIES)
    if not drafts:
        return None
    ids = sorted({i for d in drafts for i in d.evidence_ids})
    rows = evidence.get_many(conn, window.workspace_id, ids) if ids else []
    request = CardRequest(
        tuple(
            CardEntry(d.id, d.revision, d.occurred_at, d.title, d.category, len(d.evidence_ids))
            for d in drafts
        ),
        CATEGORIES,
        TITLE_MAX_CHARS,
    )
    version = window.processor_version or "unknown"
    return cards.create(
        conn,
        workspace_id=window.workspace_id,
        kind=KIND_DRAFT_REVIEW,
        window_state_id=window.id,
        processor_version=version,
        idempotency_uuid=card_uuid(window.id, version),
        chat_id=window.scope_key,
        reply_to_message_id=thread_root([r.metadata for r in rows]),
        request=request,
        expires_at=now + settings.review_card_ttl,
        now=now,
    )
