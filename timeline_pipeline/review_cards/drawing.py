"""Every card the bot draws, as Lark JSON, from the stored request and decisions. Pure.

The card is always drawn whole from the stored state (never patched by delta), so drawing it
twice gives the same card and a patch that is retried after a crash is harmless. Text that came
from a model or a person goes into `plain_text` elements only, so it cannot inject markup.
Buttons carry the callback token in their `value` (DESIGN, "Interfaces"), with the entry revision
the card shows, so a click names the revision its curator saw (docs/review-cards.md).

Everything a person reads on the card is in the workspace's language and zone (docs/i18n.md):
the words come from the `chat` catalog, category names from `i18n.labels`, and times from
`i18n.times`, with the date wherever the card's times span more than one local day and always
for its expiry. The button values, the option values and the stored request never change with
the language; only the text does.

A pin's reply card ("Pinned to the timeline of INC-... as finding") is drawn here too: a review
card of kind `chat_pin` (docs/pins.md), posted in the message's thread through the same durable
delivery, whose one control, the category select, goes through the same callback admission and
worker. It offers no Confirm or Hide: a pin is confirmed when it is made, and unpinning is taking
the reaction back. `draw_card` is what the worker and the admission draw any stored card with.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, Concatenate, Final, ParamSpec

from timeline_pipeline.domain.card_requests import (
    CardEntry,
    CardRequest,
    Decision,
    Decisions,
    PinNote,
    closing_decision,
)
from timeline_pipeline.domain.interactions import CardAction, CardStatus
from timeline_pipeline.i18n.catalogs import Domain, translations
from timeline_pipeline.i18n.labels import category_label
from timeline_pipeline.i18n.locales import Locale, Presentation
from timeline_pipeline.i18n.times import show_datetime, show_time, spans_days

__all__ = [
    "EDIT_FIELD",
    "ENGLISH",
    "HEADER_TITLE",
    "N_",
    "VALUE_ACTION",
    "VALUE_ENTRY",
    "VALUE_REVISION",
    "VALUE_TOKEN",
    "CardText",
    "action_value",
    "category_in_text",
    "describe",
    "draw_card",
    "headline",
    "render_card",
    "render_pin_card",
]


def N_(message: str) -> str:
    """Marks `message` for extraction (Babel knows gettext's `N_`); it is translated where it is
    shown. The chat surface's modules share this one."""
    return message


HEADER_TITLE: Final = N_("Timeline drafts to review")
VALUE_TOKEN: Final = "t"  # noqa: S105 - the key under which the token travels
VALUE_ENTRY: Final = "e"
VALUE_ACTION: Final = "a"
VALUE_REVISION: Final = "r"
EDIT_FIELD: Final = "title"
ENGLISH: Final = Presentation.default()
"""What a card drawn without a workspace's presentation reads as: English and UTC."""

_DECIDED: Final = {
    CardAction.CONFIRM: N_("Confirmed by {actor} at {time}"),
    CardAction.HIDE: N_("Hidden by {actor} at {time}"),
    CardAction.CATEGORY: N_("Category set by {actor} at {time}"),
    CardAction.EDIT: N_("Title edited by {actor} at {time}"),
}
_NOT_APPLIED: Final = {
    "stale_revision": N_("the draft changed meanwhile"),
    "invalid_transition": N_("the draft's status changed meanwhile"),
    "entry_not_found": N_("the draft no longer exists"),
    "invalid_input": N_("the value was not accepted"),
}
_FOOTERS: Final = {
    CardStatus.SUBMITTED: N_("Every draft on this card has been decided"),
    CardStatus.EXPIRED: N_("This card has expired; review the drafts on the timeline page"),
    CardStatus.CANCELLED: N_("This card was withdrawn"),
}


class CardText:
    """One card's words and times in a presentation: its catalog, and whether its times need
    their date (they span more than one local day in the workspace's zone)."""

    def __init__(self, presentation: Presentation, moments: Iterable[datetime]) -> None:
        self.presentation = presentation
        self.t = translations(Domain.CHAT, presentation.locale)
        self.dated = spans_days(moments, presentation.time_zone)

    def time(self, moment: datetime) -> str:
        """A time on the card: `14:08 UTC+8`, with its date when the card spans days."""
        zone, locale = self.presentation.time_zone, self.presentation.locale
        return show_time(moment, zone, locale, with_date=self.dated)

    def deadline(self, moment: datetime) -> str:
        """An expiry: always with its date (docs/i18n.md)."""
        return show_datetime(moment, self.presentation.time_zone, self.presentation.locale)

    def category(self, category: str) -> str:
        """A category inside a line of text (`category_in_text`)."""
        return category_in_text(category, self.presentation.locale)

    def option(self, category: str) -> str:
        """A category as the select offers it: its name (`Root cause`, `根因`)."""
        return category_label(category, self.presentation.locale)


def category_in_text(category: str, locale: Locale) -> str:
    """A category named inside a line of text: its shared name (`i18n.labels`), which English
    writes in lower case mid-sentence (`as finding`, `· root cause ·`)."""
    label = category_label(category, locale)
    return label.lower() if locale is Locale.EN else label


def card_moments(request: CardRequest, decisions: Decisions) -> list[datetime]:
    """Every time the card shows: its drafts' and its decisions'."""
    moments = [entry.occurred_at for entry in request.entries]
    moments.extend(d.at for made in decisions.values() for d in made)
    return moments


def _plain(text: str) -> dict[str, Any]:
    return {"tag": "plain_text", "content": text}


def action_value(token: str, entry: CardEntry, action: CardAction) -> dict[str, Any]:
    return {
        VALUE_TOKEN: token,
        VALUE_ENTRY: entry.id,
        VALUE_ACTION: action.value,
        VALUE_REVISION: entry.revision,
    }


def describe(decision: Decision, text: CardText | None = None) -> str:
    """One line saying who decided what and when; `<at>` names the curator by open_id."""
    text = text or CardText(ENGLISH, [decision.at])
    t = text.t
    fields = {"actor": f"<at id={decision.actor}></at>", "time": text.time(decision.at)}
    if decision.action is CardAction.CATEGORY and decision.value:
        line = t.gettext("Category set to {category} by {actor} at {time}").format(
            category=text.category(decision.value), **fields
        )
    else:
        line = t.gettext(_DECIDED[decision.action]).format(**fields)
    if decision.state == "admitted":
        return t.gettext("{decision} (being applied)").format(decision=line)
    if decision.state == "failed":
        outcome = decision.outcome
        reason = (
            t.gettext(_NOT_APPLIED[outcome])
            if outcome in _NOT_APPLIED
            else outcome or t.gettext("refused")
        )
        return t.gettext("{decision} - not applied: {reason}").format(decision=line, reason=reason)
    return line


def entry_line(entry: CardEntry, text: CardText) -> str:
    """A draft as the card lists it: `10:00 UTC · finding · title`."""
    return f"{text.time(entry.occurred_at)} · {text.category(entry.category)} · {entry.title}"


def _entry_elements(
    entry: CardEntry,
    decisions: list[Decision],
    request: CardRequest,
    token: str | None,
    link: str | None,
    text: CardText,
) -> list[dict[str, Any]]:
    t = text.t
    elements: list[dict[str, Any]] = [{"tag": "div", "text": _plain(entry_line(entry, text))}]
    notes = [describe(d, text) for d in decisions]
    messages = t.gettext("{count} message(s)").format(count=entry.message_count)
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
                    "text": _plain(t.gettext("Confirm")),
                    "type": "primary",
                    "value": action_value(token, entry, CardAction.CONFIRM),
                },
                {
                    "tag": "button",
                    "text": _plain(t.gettext("Hide")),
                    "type": "danger",
                    "value": action_value(token, entry, CardAction.HIDE),
                },
                category_select(token, entry, request, text),
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
                    "placeholder": _plain(t.gettext("New title")),
                    "default_value": entry.title,
                    "max_length": request.title_max_chars,
                },
                {
                    "tag": "button",
                    "text": _plain(t.gettext("Save title")),
                    "action_type": "form_submit",
                    "name": f"save_{entry.id}",
                    "value": action_value(token, entry, CardAction.EDIT),
                },
            ],
        }
    )
    return elements


def category_select(
    token: str, entry: CardEntry, request: CardRequest, text: CardText
) -> dict[str, Any]:
    """The category select: the options' names in the workspace's language, their values the
    stored categories the callback is checked against."""
    return {
        "tag": "select_static",
        "placeholder": _plain(text.t.gettext("Category")),
        "initial_option": entry.category,
        "options": [
            {"text": _plain(text.option(option)), "value": option} for option in request.options
        ],
        "value": action_value(token, entry, CardAction.CATEGORY),
    }


def _entry_link(link_base_url: str, workspace_id: str, entry_id: int) -> str | None:
    """The entry on the timeline page, when the card links there (`link_base_url` set)."""
    if not link_base_url:
        return None
    return f"{link_base_url.rstrip('/')}/ui/workspaces/{workspace_id}#entry-{entry_id}"


def _card(title: str, template: str, elements: list[dict[str, Any]], footer: str) -> dict[str, Any]:
    """A whole card: its header (`title` in the colour `template`), `elements`, and `footer`
    as the closing note."""
    return {
        "config": {"wide_screen_mode": True, "update_multi": True},
        "header": {"title": _plain(title), "template": template},
        "elements": [*elements, {"tag": "note", "elements": [_plain(footer)]}],
    }


def render_card(
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
    """The whole card. With `token` None (expired, cancelled) it shows the state, no controls."""
    text = CardText(presentation, card_moments(request, decisions))
    open_card = status == CardStatus.PENDING
    elements: list[dict[str, Any]] = []
    for position, entry in enumerate(request.entries):
        if position:
            elements.append({"tag": "hr"})
        link = _entry_link(link_base_url, workspace_id, entry.id)
        elements.extend(
            _entry_elements(
                entry,
                decisions.get(entry.id, []),
                request,
                token if open_card else None,
                link,
                text,
            )
        )
    card_status = CardStatus(status)
    if card_status is CardStatus.PENDING:
        footer = text.t.gettext("Open for decisions until {time}").format(
            time=text.deadline(expires_at)
        )
    else:
        footer = text.t.gettext(_FOOTERS[card_status]) if card_status in _FOOTERS else ""
    return _card(text.t.gettext(HEADER_TITLE), "blue" if open_card else "grey", elements, footer)


# --- a pin's reply card (docs/pins.md) -------------------------------------------------------

CATEGORY_ACTION: Final = CardAction.CATEGORY
_P = ParamSpec("_P")


def headline(note: PinNote, category: str, presentation: Presentation = ENGLISH) -> str:
    """The reply's one line, the same on the card and in the docs."""
    t = translations(Domain.CHAT, presentation.locale)
    return t.gettext("Pinned to the timeline of {workspace} as {category}").format(
        workspace=note.workspace_label,
        category=category_in_text(category, presentation.locale),
    )


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
    if link := _entry_link(link_base_url, workspace_id, entry.id):
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
    return _card(headline(note, entry.category, presentation), "green", elements, footer)


def _by_kind(
    review: Callable[Concatenate[CardRequest, _P], dict[str, Any]],
    pin: Callable[Concatenate[CardRequest, _P], dict[str, Any]],
) -> Callable[Concatenate[CardRequest, _P], dict[str, Any]]:
    def draw(request: CardRequest, /, *args: _P.args, **kwargs: _P.kwargs) -> dict[str, Any]:
        """Any stored card, drawn whole: a pin's reply card or a review card."""
        return (pin if request.pin is not None else review)(request, *args, **kwargs)

    return draw


draw_card = _by_kind(render_card, render_pin_card)
