"""Plan a window's review card: the drafts it offers and where it goes.

Planned after the window finished, not with it (docs/review-cards.md, "How a card is planned"):
the transaction that completes a window with review cards on only sets the window's
`review_card_pending` flag; the card worker's pass (`plan_flagged_cards`, at the start of each
round, before it posts) reads the flagged windows by keyset and, for each, clears the flag by
compare-and-set and plans the card in one transaction of its own. So a completed window with
drafts always gets its card queued, exactly once: a pass that fails before its commit leaves the
flag for the next one, and a second pass finds the flag taken. A window with no drafts has its
flag cleared and no card. A flagged window replayed meanwhile is planned once its drafts are
final: when the replay finishes, or fails with no attempt left (`store/review_card_outbox.py`
`plannable`), so a failed replay's drafts still get their card.

The card is a reply in the thread when every draft's evidence comes from one thread, a message
in the chat otherwise. A rerun of the same window and processor version finds the card planned
before (one idempotency uuid) and plans nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final

from sqlalchemy import Connection, Engine

from timeline_pipeline.curation.rules import CATEGORIES, TITLE_MAX_CHARS
from timeline_pipeline.db.engine import transaction
from timeline_pipeline.domain.card_requests import KIND_DRAFT_REVIEW, CardEntry, CardRequest
from timeline_pipeline.domain.sync_states import SyncState
from timeline_pipeline.observability.logs import get_logger
from timeline_pipeline.security.callback_tokens import card_uuid
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import entries, evidence
from timeline_pipeline.store import interaction_requests as cards
from timeline_pipeline.store import review_card_outbox as outbox
from timeline_pipeline.store.interaction_requests import CardRow

log = get_logger("timeline_pipeline.review_cards")

MAX_CARD_ENTRIES: Final = 20
"""A window proposes a handful of drafts; a card with more would not fit Lark's size limit."""

PLAN_BATCH: Final = 16
"""Flagged windows one pass reads: a worker round stays short however many windows finished."""


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
    """The window's card, queued for delivery; None when there is none to plan (review cards
    off, no chat, no drafts) or it was planned before (the same window and version)."""
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


@dataclass(frozen=True, slots=True)
class PlanPass:
    """What one pass over the flagged windows did."""

    planned: int = 0
    """Cards queued."""
    cleared: int = 0
    """Flags taken, with a card or without (a window with no drafts, or one planned before)."""
    failed: int = 0
    """Windows whose planning raised: their flag stays for a later pass."""
    after: int | None = None
    """Where the next pass goes on (the last window id read) when this one read a full batch;
    None when it read to the end, so the next pass starts again from the first flagged window."""


def plan_flagged_cards(
    engine: Engine,
    settings: LarkTimelineSettings,
    *,
    now: datetime,
    limit: int = PLAN_BATCH,
    after: int | None = None,
) -> PlanPass:
    """Plan the cards of up to `limit` flagged windows (after window id `after`), each in its
    own transaction: the flag is cleared by compare-and-set and the card row written together,
    so a crash before the commit leaves the flag, and of two passes racing on a window the
    second finds the flag gone and plans nothing.

    A window whose planning raises is logged and skipped, not retried in this pass: it cannot
    hold up the cards behind it, and the scan comes back to it once it wraps around. With
    review cards off nothing is read: no window is flagged then, and flags left from before
    stay for when they are on again.
    """
    if not settings.review_cards_enabled:
        return PlanPass()
    with transaction(engine) as conn:
        flagged = outbox.windows_awaiting_card(
            conn, limit=limit, max_attempts=settings.synthesis_window_max_attempts, after=after
        )
    planned = cleared = failed = 0
    for window in flagged:
        try:
            with transaction(engine) as conn:
                card = None
                taken = outbox.take_card_flag(
                    conn, window.id, max_attempts=settings.synthesis_window_max_attempts
                )
                if taken:
                    card = plan_review_card(conn, window, settings, now=now)
        except Exception as error:  # the flag stays: a later pass plans it
            failed += 1
            log.warning(
                "review_card.plan_failed",
                window_state_id=window.id,
                error_type=type(error).__name__,
            )
            continue
        cleared += taken
        if card is not None:
            planned += 1
            log.info(
                "review_card.planned",
                card_id=card.id,
                window_state_id=window.id,
                window_status=window.status,
            )
    resume = flagged[-1].id if len(flagged) == limit else None
    return PlanPass(planned=planned, cleared=cleared, failed=failed, after=resume)
