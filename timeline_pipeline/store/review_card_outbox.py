"""The review card's outbox on the window state (docs/review-cards.md, "How a card is planned"):
the windows whose card is still to be planned, and the compare-and-set that takes one off.

`finish_window` (`store/window_states.py`) sets `review_card_pending` in the transaction that
completes the window; the card worker reads the flagged windows here, plans each card and clears
the flag in the same transaction as the card row, so a card is planned once and a crash before
that commit leaves the flag for the next pass.

A flagged window is planned once its drafts are the ones it ends with: finished, or failed with
no attempt left (an operator's replay that failed for good keeps the drafts it had, and they
still get their card). While it runs again or waits for a retry it is left alone, yet counted:
the health figure is every flagged window whatever its status (issue 35, item 9).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, and_, func, or_, select, true

from timeline_pipeline.db.rows import records
from timeline_pipeline.db.schema import workspace_timeline_sync_states as ss
from timeline_pipeline.domain.states import TERMINAL_WINDOW_STATUSES, WindowStatus
from timeline_pipeline.domain.sync_states import SyncState
from timeline_pipeline.store.sync_states import to_state

FLAGGED = ss.c.review_card_pending == true()
"""A window whose card is still to be planned, whatever its status."""


def plannable(max_attempts: int) -> Any:
    """A flagged window whose drafts are final: finished, or failed with its `max_attempts`
    (`synthesisWindowMaxAttempts`) spent, so no retry will change them. A window flagged and
    then replayed is left out while it runs or may be retried: its card is planned from the
    drafts it ends with."""
    return and_(
        FLAGGED,
        or_(
            ss.c.status.in_(TERMINAL_WINDOW_STATUSES),
            and_(ss.c.status == WindowStatus.FAILED, ss.c.attempt_count >= max_attempts),
        ),
    )


def windows_awaiting_card(
    conn: Connection, *, limit: int, max_attempts: int, after: int | None = None
) -> list[SyncState]:
    """Plannable flagged windows (`plannable`), by id, at most `limit`, after the window id
    `after`.

    A keyset read on the (review_card_pending, id) index. A flagged window that runs again (an
    operator's replay) is left out while it runs or may still be retried: its card is planned
    from the drafts it ends with, as when the card was planned with the finish."""
    stmt = select(ss).where(plannable(max_attempts))
    if after is not None:
        stmt = stmt.where(ss.c.id > after)
    return records(conn, stmt.order_by(ss.c.id).limit(limit), to_state)


def take_card_flag(conn: Connection, state_id: int, *, max_attempts: int) -> bool:
    """Clear the window's flag if it is still set and the window still plannable; the rowcount
    says whether this transaction took it (another pass or a replay may have meanwhile).

    The revision is left alone: the flag is no transition of the window, and a run that read
    the window must not lose its compare-and-set to the card worker."""
    result = conn.execute(
        ss.update()
        .where(ss.c.id == state_id, plannable(max_attempts))
        .values(review_card_pending=False)
    )
    return result.rowcount == 1


def awaiting_card(conn: Connection) -> tuple[int, datetime | None]:
    """How many flagged windows still wait for their card to be planned, whatever their status
    (finished, running a replay, waiting for a retry, failed for good), and when the longest
    waiting one last changed: one read of the (review_card_pending, id) index's flagged range,
    for the health asset. A window whose replay fails is counted, never hidden as none."""
    row = conn.execute(select(func.count(), func.min(ss.c.updated_at)).where(FLAGGED)).one()
    return int(row[0]), row[1]
