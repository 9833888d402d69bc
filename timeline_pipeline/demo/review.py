"""The demo's last step: the incident commander confirms a draft from the chat.

The window runs flagged each window with drafts for its review card; here the card worker plans
the cards and posts them to the local Lark, the commander (a curator of the workspace) clicks
Confirm on the first draft, the signed `card.action.trigger` reaches the real receiver over
HTTP, and the worker applies the decision through the curation service and redraws the card
for everyone.
"""

from __future__ import annotations

from dataclasses import dataclass

from timeline_pipeline.db.engine import transaction
from timeline_pipeline.demo.live import ChatStep, identity, live_receiver, send
from timeline_pipeline.domain.entries import EntryStatus
from timeline_pipeline.lark.simulator.events import card_action_event
from timeline_pipeline.review_cards.drawing import VALUE_ACTION, VALUE_ENTRY
from timeline_pipeline.store import entries, workspaces
from timeline_pipeline.store import interaction_requests as cards


@dataclass
class ReviewResult:
    cards_posted: int = 0
    confirmed_entry: int | None = None
    toast: str = ""
    card_redrawn: bool = False


def _confirm_value(card: dict[str, object], entry_id: int) -> dict[str, object]:
    for element in card.get("elements", []):  # type: ignore[attr-defined]
        for control in element.get("actions", []):
            value = control.get("value") or {}
            if value.get(VALUE_ENTRY) == entry_id and value.get(VALUE_ACTION) == "confirm":
                return dict(value)
    raise LookupError(f"the card shows no Confirm for entry {entry_id}")


def shows_confirmed(card: dict[str, object], entry_id: int, curator: str) -> bool:
    """The redrawn card names who decided (`<at id=...>`, in any language the card speaks:
    docs/review-cards.md) and no longer offers Confirm for the entry."""
    try:
        _confirm_value(card, entry_id)
    except LookupError:
        return f"<at id={curator}>" in str(card)
    return False


def confirm_from_chat(step: ChatStep, curator: str) -> ReviewResult:
    engine, settings, store, workspace_id, progress = step
    result = ReviewResult()
    with transaction(engine) as conn:
        workspaces.add_curator(conn, workspace_id, curator)
    with live_receiver(engine, settings, store) as (review, events_url):
        review.worker.drain(max_seconds=30)
        with engine.connect() as conn:
            posted = [c for c in cards.for_workspace(conn, workspace_id) if c.message_id]
        result.cards_posted = len(posted)
        if not posted:
            progress("review cards: no window created drafts, nothing to review")
            review.worker.close()
            return result
        card = posted[0]
        entry_id = card.request.entries[0].id
        assert card.message_id is not None
        shown = store.card_log(card.message_id)[-1]["card"]
        progress(
            f"review cards: {len(posted)} card(s) posted to the chat; "
            f"the commander confirms draft {entry_id} from the first one"
        )
        payload = card_action_event(
            identity(settings),
            operator_open_id=curator,
            open_message_id=card.message_id,
            open_chat_id=card.chat_id,
            action_value=_confirm_value(shown, entry_id),
        )
        answer = send(settings, events_url, payload)
        result.toast = str((answer.body.get("toast") or {}).get("content", ""))
        review.worker.drain(max_seconds=30)
        review.worker.close()
    with engine.connect() as conn:
        entry = entries.get(conn, entry_id)
    if entry is not None and entry.status == EntryStatus.CONFIRMED:
        result.confirmed_entry = entry_id
    log = store.card_log(card.message_id)
    result.card_redrawn = log[-1]["kind"] == "patched" and shows_confirmed(
        log[-1]["card"], entry_id, curator
    )
    progress(
        f"review cards: Lark showed {result.toast!r}; entry {entry_id} is "
        f"{entry.status if entry else 'gone'}, the card now says who confirmed it"
    )
    return result
