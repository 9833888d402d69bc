"""A pin's reply card: "Pinned to the timeline of INC-... as finding", drawn from the stored
request and decisions. Pure.

It is a review card of kind `chat_pin` (docs/pins.md): posted in the message's thread through the
same durable delivery as review cards, and its one control, the category select, goes through
the same callback admission and worker. It offers no Confirm or Hide: a pin is confirmed when
it is made, and unpinning is taking the reaction back. `draw_card` is what the worker and the
admission draw any stored card with: a pin's card here, a review card by `cards.render_card`.
Like a review card it reads in the workspace's language and zone (docs/i18n.md).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Concatenate, Final, ParamSpec

from timeline_pipeline.domain.card_requests import CardRequest, Decisions, PinNote
from timeline_pipeline.domain.interactions import CardAction, CardStatus
from timeline_pipeline.i18n.catalogs import Domain, translations
from timeline_pipeline.i18n.locales import Presentation
from timeline_pipeline.interactions.cards import (
    ENGLISH,
    CardText,
    card_moments,
    category_in_text,
    category_select,
    describe,
    render_card,
)

CATEGORY_ACTION: Final = CardAction.CATEGORY
_P = ParamSpec("_P")


def headline(note: PinNote, category: str, presentation: Presentation = ENGLISH) -> str:
    """The reply's one line, the same on the card and in the docs."""
    t = translations(Domain.CHAT, presentation.locale)
    return t.gettext("Pinned to the timeline of {workspace} as {category}").format(
        workspace=note.workspace_label,
        category=category_in_text(category, presentation.locale),
    )


def _plain(text: str) -> dict[str, Any]:
    return {"tag": "plain_text", "content": text}


def render_pin_card(
    request: CardRequest,
    decisions: Decisions,
    *,
    token: str | None,
    status: str,
    expires_at: datetime,
    workspace_id: str,
    link_base_url: str = "",
    presentation: Presentation = ENGLISH,
) -> dict[str, Any]:
    """The whole card; with `token` None (expired) it shows the pin, no control."""
    assert request.pin is not None
    entry = request.entries[0]
    note = request.pin
    text = CardText(presentation, card_moments(request, decisions))
    t = text.t
    elements: list[dict[str, Any]] = [
        {"tag": "div", "text": _plain(entry.title)},
        {
            "tag": "div",
            "text": {
                "tag": "lark_md",
                "content": t.gettext("Pinned by {actor} at {time} message time").format(
                    actor=f"<at id={note.operator}></at>", time=text.time(entry.occurred_at)
                ),
            },
        },
    ]
    notes = [describe(d, text) for d in decisions.get(entry.id, [])]
    if link_base_url:
        link = f"{link_base_url.rstrip('/')}/ui/workspaces/{workspace_id}#entry-{entry.id}"
        opener = t.gettext("Open the timeline")
        notes.insert(0, f"[{opener}]({link})")
    if notes:
        elements.append({"tag": "div", "text": {"tag": "lark_md", "content": "\n".join(notes)}})
    if token is not None and status == CardStatus.PENDING:
        elements.append(
            {"tag": "action", "actions": [category_select(token, entry, request, text)]}
        )
        footer = t.gettext("Change the category until {time}").format(
            time=text.deadline(expires_at)
        )
    else:
        footer = t.gettext("Change the category on the timeline page")
    elements.append({"tag": "note", "elements": [_plain(footer)]})
    return {
        "config": {"wide_screen_mode": True, "update_multi": True},
        "header": {
            "title": _plain(headline(note, entry.category, presentation)),
            "template": "green",
        },
        "elements": elements,
    }


def _by_kind(
    review: Callable[Concatenate[CardRequest, _P], dict[str, Any]],
    pin: Callable[Concatenate[CardRequest, _P], dict[str, Any]],
) -> Callable[Concatenate[CardRequest, _P], dict[str, Any]]:
    def draw(request: CardRequest, /, *args: _P.args, **kwargs: _P.kwargs) -> dict[str, Any]:
        """Any stored card, drawn whole: a pin's reply card or a review card."""
        return (pin if request.pin is not None else review)(request, *args, **kwargs)

    return draw


draw_card = _by_kind(render_card, render_pin_card)
