"""What both card writers share, the callback admission and the worker: the retry and the redraw.

Each reads a card and writes it back under its revision (a compare-and-set); when another
replica wrote first, the write raises `CardMoved` and `while_moved` runs the whole transaction
again, a bounded number of times. Each then draws the stored card whole (`draw_stored_card`):
the admission in its answer to the click, the worker when it sends or patches the card.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

from sqlalchemy import Connection, Engine

from timeline_pipeline.db.engine import transaction
from timeline_pipeline.i18n.locales import Presentation
from timeline_pipeline.review_cards.drawing import draw_card
from timeline_pipeline.store.interaction_requests import CardRow

CAS_ATTEMPTS: Final = 5

_T = TypeVar("_T")


class CardMoved(Exception):
    """The card changed between read and write: read it again."""


def while_moved(engine: Engine, once: Callable[[Connection], _T]) -> _T:
    """`once` in a transaction of its own, again while it raises `CardMoved` (its writes
    rolled back), at most `CAS_ATTEMPTS` times; then `CardMoved` is raised to the caller."""
    for _ in range(CAS_ATTEMPTS):
        try:
            with transaction(engine) as conn:
                return once(conn)
        except CardMoved:
            continue
    raise CardMoved


def draw_stored_card(
    card: CardRow, *, token: str | None, link_base_url: str, presentation: Presentation
) -> dict[str, Any]:
    """The stored card drawn whole in its current state, `token` on its controls (None: none)."""
    return draw_card(
        card.request,
        card.decisions,
        token=token,
        status=card.status,
        expires_at=card.expires_at,
        workspace_id=card.workspace_id,
        link_base_url=link_base_url,
        presentation=presentation,
    )
