"""A pin's reply card: "Pinned to the timeline of INC-... as finding", drawn from the stored
request and decisions. Pure.

It is a review card of kind `chat_pin` (docs/pins.md): posted in the message's thread through the
same durable delivery as review cards, and its one control, the category select, goes through
the same callback admission and worker. It offers no Confirm or Hide: a pin is confirmed when
it is made, and unpinning is taking the reaction back. `draw_card` is what the worker and the
admission draw any stored card with: a pin's card here, a review card by `cards.render_card`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Concatenate, Final, ParamSpec

from timeline_pipeline.domain.card_requests import CardRequest, Decisions, PinNote
from timeline_pipeline.domain.interactions import CardAction, CardStatus
from timeline_pipeline.interactions.cards import action_value, describe, render_card

CATEGORY_ACTION: Final = CardAction.CATEGORY
_P = ParamSpec("_P")


def headline(note: PinNote, category: str) -> str:
    """The reply's one line, the same on the card and in the docs."""
    return f"Pinned to the timeline of {note.workspace_label} as {category}"


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
) -> dict[str, Any]:
    """The whole card; with `token` None (expired) it shows the pin, no control."""
    assert request.pin is not None
    entry = request.entries[0]
    note = request.pin
    elements: list[dict[str, Any]] = [
        {"tag": "div", "text": _plain(entry.title)},
        {
            "tag": "div",
            "text": {
                "tag": "lark_md",
                "content": f"Pinned by <at id={note.operator}></at> at "
                f"{entry.occurred_at.strftime('%H:%M UTC')} message time",
            },
        },
    ]
    notes = [describe(d) for d in decisions.get(entry.id, [])]
    if link_base_url:
        link = f"{link_base_url.rstrip('/')}/ui/workspaces/{workspace_id}#entry-{entry.id}"
        notes.insert(0, f"[Open the timeline]({link})")
    if notes:
        elements.append({"tag": "div", "text": {"tag": "lark_md", "content": "\n".join(notes)}})
    if token is not None and status == CardStatus.PENDING:
        elements.append(
            {
                "tag": "action",
                "actions": [
                    {
                        "tag": "select_static",
                        "placeholder": _plain("Category"),
                        "initial_option": entry.category,
                        "options": [
                            {"text": _plain(option), "value": option} for option in request.options
                        ],
                        "value": action_value(token, entry, CATEGORY_ACTION),
                    }
                ],
            }
        )
        footer = f"Change the category until {expires_at.strftime('%Y-%m-%d %H:%M UTC')}"
    else:
        footer = "Change the category on the timeline page"
    elements.append({"tag": "note", "elements": [_plain(footer)]})
    return {
        "config": {"wide_screen_mode": True, "update_multi": True},
        "header": {"title": _plain(headline(note, entry.category)), "template": "green"},
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
