"""The review card's Lark JSON, drawn from the stored request and decisions. Pure.

The card is always drawn whole from the stored state (never patched by delta), so drawing it
twice gives the same card and a patch that is retried after a crash is harmless. Text that came
from a model or a person goes into `plain_text` elements only, so it cannot inject markup.
Buttons carry the callback token in their `value` (DESIGN, "Interfaces"), with the entry revision
the card shows, so a click names the revision its curator saw (docs/review-cards.md).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from timeline_pipeline.domain.card_requests import (
    CardEntry,
    CardRequest,
    Decision,
    Decisions,
    closing_decision,
)
from timeline_pipeline.domain.interactions import CardAction, CardStatus

HEADER_TITLE: Final = "Timeline drafts to review"
VALUE_TOKEN: Final = "t"  # noqa: S105 - the key under which the token travels
VALUE_ENTRY: Final = "e"
VALUE_ACTION: Final = "a"
VALUE_REVISION: Final = "r"
EDIT_FIELD: Final = "title"

_PAST: Final = {
    CardAction.CONFIRM: "Confirmed",
    CardAction.HIDE: "Hidden",
    CardAction.CATEGORY: "Category set",
    CardAction.EDIT: "Title edited",
}


def _plain(text: str) -> dict[str, Any]:
    return {"tag": "plain_text", "content": text}


def _hhmm(moment: datetime) -> str:
    return moment.strftime("%H:%M UTC")


_NOT_APPLIED: Final = {
    "stale_revision": "the draft changed meanwhile",
    "invalid_transition": "the draft's status changed meanwhile",
    "entry_not_found": "the draft no longer exists",
    "invalid_input": "the value was not accepted",
}


def action_value(token: str, entry: CardEntry, action: CardAction) -> dict[str, Any]:
    return {
        VALUE_TOKEN: token,
        VALUE_ENTRY: entry.id,
        VALUE_ACTION: action.value,
        VALUE_REVISION: entry.revision,
    }


def describe(decision: Decision) -> str:
    """One line saying who decided what; `<at>` names the curator by open_id."""
    what = _PAST[decision.action]
    if decision.action is CardAction.CATEGORY and decision.value:
        what = f"Category set to {decision.value}"
    suffix = {
        "admitted": " (being applied)",
        "applied": "",
        "failed": " - not applied: "
        + _NOT_APPLIED.get(decision.outcome or "", decision.outcome or "refused"),
    }.get(decision.state, "")
    return f"{what} by <at id={decision.actor}></at> at {_hhmm(decision.at)}{suffix}"


def _entry_elements(
    entry: CardEntry,
    decisions: list[Decision],
    request: CardRequest,
    token: str | None,
    link: str | None,
) -> list[dict[str, Any]]:
    line = f"{_hhmm(entry.occurred_at)} · {entry.category} · {entry.title}"
    elements: list[dict[str, Any]] = [{"tag": "div", "text": _plain(line)}]
    notes = [describe(d) for d in decisions]
    messages = f"{entry.message_count} message(s)"
    notes.insert(0, f"[{messages}]({link})" if link else messages)
    elements.append({"tag": "div", "text": {"tag": "lark_md", "content": "\n".join(notes)}})
    if token is None or closing_decision(decisions) is not None:
        return elements
    elements.append(
        {
            "tag": "action",
            "actions": [
                {
                    "tag": "button",
                    "text": _plain("Confirm"),
                    "type": "primary",
                    "value": action_value(token, entry, CardAction.CONFIRM),
                },
                {
                    "tag": "button",
                    "text": _plain("Hide"),
                    "type": "danger",
                    "value": action_value(token, entry, CardAction.HIDE),
                },
                {
                    "tag": "select_static",
                    "placeholder": _plain("Category"),
                    "initial_option": entry.category,
                    "options": [
                        {"text": _plain(option), "value": option} for option in request.options
                    ],
                    "value": action_value(token, entry, CardAction.CATEGORY),
                },
            ],
        }
    )
    elements.append(
        {
            "tag": "form",
            "name": f"edit_{entry.id}",
            "elements": [
                {
                    "tag": "input",
                    "name": EDIT_FIELD,
                    "placeholder": _plain("New title"),
                    "default_value": entry.title,
                    "max_length": request.title_max_chars,
                },
                {
                    "tag": "button",
                    "text": _plain("Save title"),
                    "action_type": "form_submit",
                    "name": f"save_{entry.id}",
                    "value": action_value(token, entry, CardAction.EDIT),
                },
            ],
        }
    )
    return elements


def render_card(
    request: CardRequest,
    decisions: Decisions,
    *,
    token: str | None,
    status: str,
    expires_at: datetime,
    workspace_id: str,
    link_base_url: str = "",
) -> dict[str, Any]:
    """The whole card. With `token` None (expired, cancelled) it shows the state, no controls."""
    open_card = status == CardStatus.PENDING
    elements: list[dict[str, Any]] = []
    for position, entry in enumerate(request.entries):
        if position:
            elements.append({"tag": "hr"})
        link = (
            f"{link_base_url.rstrip('/')}/ui/workspaces/{workspace_id}#entry-{entry.id}"
            if link_base_url
            else None
        )
        elements.extend(
            _entry_elements(
                entry, decisions.get(entry.id, []), request, token if open_card else None, link
            )
        )
    footer = {
        CardStatus.PENDING: f"Open for decisions until {expires_at.strftime('%Y-%m-%d %H:%M UTC')}",
        CardStatus.SUBMITTED: "Every draft on this card has been decided",
        CardStatus.EXPIRED: "This card has expired; review the drafts on the timeline page",
        CardStatus.CANCELLED: "This card was withdrawn",
    }.get(CardStatus(status), "")
    elements.append({"tag": "note", "elements": [_plain(footer)]})
    return {
        "config": {"wide_screen_mode": True, "update_multi": True},
        "header": {
            "title": _plain(HEADER_TITLE),
            "template": "blue" if open_card else "grey",
        },
        "elements": elements,
    }
