"""A `card.action.trigger` callback, parsed and checked against the stored card. Pure.

Parsing reads only the token, the entry id, the action and the entry revision the curator saw
from the button value, the message and chat ids from the context, the operator and the app;
everything else the decision means (field types, the options offered) comes from the stored
request, and a click on another revision than the one the card now stands for is refused
(docs/review-cards.md). A title goes through the curation rules' own text check, the one the
API and the page use. Every refusal has a reason code (a metric label) and a toast a person can
act on, in the language of the card's workspace (docs/i18n.md).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Any, Final

from timeline_pipeline.curation.rules import check_text
from timeline_pipeline.domain.card_requests import (
    CardEntry,
    CardRequest,
    Decisions,
    closing_decision,
)
from timeline_pipeline.domain.errors import InvalidInput
from timeline_pipeline.domain.interactions import CardAction, CardStatus
from timeline_pipeline.i18n.catalogs import Domain, translations
from timeline_pipeline.i18n.locales import Presentation
from timeline_pipeline.review_cards.drawing import (
    EDIT_FIELD,
    ENGLISH,
    N_,
    VALUE_ACTION,
    VALUE_ENTRY,
    VALUE_REVISION,
    VALUE_TOKEN,
    CardText,
    entry_line,
)
from timeline_pipeline.security.callback_tokens import MAX_TOKEN_CHARS

_ID: Final = re.compile(r"[\x21-\x7e]{1,256}")


class Refusal(StrEnum):
    MALFORMED_VALUE = "malformed_value"
    UNKNOWN_CARD = "unknown_card"
    FORGED_TOKEN = "forged_token"  # noqa: S105 - a reason code
    TOKEN_OF_ANOTHER_CARD = "token_of_another_card"  # noqa: S105 - a reason code
    WRONG_BOT = "wrong_bot"
    WRONG_CHAT = "wrong_chat"
    NOT_CURATOR = "not_curator"
    EXPIRED = "expired"
    CARD_CLOSED = "card_closed"
    ENTRY_NOT_OFFERED = "entry_not_offered"
    ACTION_NOT_OFFERED = "action_not_offered"
    OPTION_NOT_OFFERED = "option_not_offered"
    INVALID_TITLE = "invalid_title"
    ALREADY_DECIDED = "already_decided"
    STALE_REVISION = "stale_revision"
    ENTRY_GONE = "entry_gone"
    ADMISSION_LIMIT = "admission_limit"
    UNAVAILABLE = "unavailable"


TOASTS: Final[dict[Refusal, str]] = {
    Refusal.MALFORMED_VALUE: N_("This action could not be read; nothing was changed."),
    Refusal.UNKNOWN_CARD: N_("This card is not known to the timeline; nothing was changed."),
    Refusal.FORGED_TOKEN: N_("This card's credentials are not valid; nothing was changed."),
    Refusal.TOKEN_OF_ANOTHER_CARD: N_("This action belongs to another card; nothing was changed."),
    Refusal.WRONG_BOT: N_("This card was sent by another app; nothing was changed."),
    Refusal.WRONG_CHAT: N_("This card belongs to another chat; nothing was changed."),
    Refusal.NOT_CURATOR: N_(
        "Only the workspace's curators can review drafts; nothing was changed."
    ),
    Refusal.EXPIRED: N_("This card has expired; review the drafts on the timeline page."),
    Refusal.CARD_CLOSED: N_("This card is closed; nothing was changed."),
    Refusal.ENTRY_NOT_OFFERED: N_("That draft is not on this card; nothing was changed."),
    Refusal.ACTION_NOT_OFFERED: N_("This card does not offer that action; nothing was changed."),
    Refusal.OPTION_NOT_OFFERED: N_(
        "That category is not one this card offers; nothing was changed."
    ),
    Refusal.INVALID_TITLE: N_(
        "The title must be one line of 1 to {max} characters, without control characters."
    ),
    Refusal.ALREADY_DECIDED: N_("This draft was already decided; nothing was changed."),
    Refusal.STALE_REVISION: N_(
        "This draft changed meanwhile; nothing was changed. Review it on the card or the "
        "timeline page."
    ),
    Refusal.ENTRY_GONE: N_("This draft no longer exists; nothing was changed."),
    Refusal.ADMISSION_LIMIT: N_("Too many decisions are waiting; try again in a minute."),
    Refusal.UNAVAILABLE: N_("The timeline is unavailable right now; try again in a minute."),
}
"""Each refusal's toast in English, the `chat` catalog's msgids (docs/i18n.md)."""


_TOAST_TITLE_CHARS: Final = 120


def stale_toast(entry: CardEntry, presentation: Presentation = ENGLISH) -> str:
    """The stale refusal, saying what the draft reads now (its title cut short for a toast)."""
    title = entry.title
    if len(title) > _TOAST_TITLE_CHARS:
        title = title[: _TOAST_TITLE_CHARS - 1] + "\u2026"
    shown = replace(entry, title=title)
    t = translations(Domain.CHAT, presentation.locale)
    return t.gettext(
        "This draft changed meanwhile; nothing was changed. It now reads: {entry}"
    ).format(entry=entry_line(shown, CardText(presentation, [entry.occurred_at])))


class CallbackRefused(Exception):
    """A refusal and what its toast needs: the draft as it reads now (a stale click) or the
    longest title (an invalid one). The toast's words are chosen when it is shown, in the
    card's workspace's language (`toast`)."""

    def __init__(
        self,
        reason: Refusal,
        *,
        now_reads: CardEntry | None = None,
        max_chars: int | None = None,
    ) -> None:
        super().__init__(reason.value)
        self.reason = reason
        self.now_reads = now_reads
        self.max_chars = max_chars

    def toast(self, presentation: Presentation = ENGLISH) -> str:
        """The toast a person reads, in `presentation`."""
        if self.reason is Refusal.STALE_REVISION and self.now_reads is not None:
            return stale_toast(self.now_reads, presentation)
        text = translations(Domain.CHAT, presentation.locale).gettext(TOASTS[self.reason])
        if self.reason is Refusal.INVALID_TITLE and self.max_chars is not None:
            return text.format(max=self.max_chars)
        return text


def value_digest(value: str | None) -> str:
    """The whole value in a fixed width: two different values never share a decision key."""
    if value is None:
        return "-"
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def decision_key(
    request_id: int, entry_id: int, action: CardAction, revision: int, value: str | None
) -> str:
    """One admission per card, entry, action, revision and whole value: the same click twice,
    from any replica or as a redelivery under a new event id, is admitted once, and a different
    value (a title sharing a long prefix included) is a different decision."""
    return f"{request_id}:{entry_id}:{action.value}:{revision}:{value_digest(value)}"


@dataclass(frozen=True, slots=True)
class CardCallback:
    """What a click says, before anything is trusted."""

    event_id: str
    app_id: str
    token: str
    entry_id: int
    action: CardAction
    message_id: str
    chat_id: str
    operator: str
    option: str | None
    title: str | None
    revision: int | None = None
    """The entry revision the clicked card showed; None from a card drawn before it was sent."""


@dataclass(frozen=True, slots=True)
class CardFacts:
    """The stored card a callback names, as the checks need it."""

    request_id: int
    workspace_id: str
    bot_app_id: str
    chat_id: str
    message_id: str | None
    status: str
    expires_at: datetime
    request: CardRequest
    decisions: Decisions


@dataclass(frozen=True, slots=True)
class Admissible:
    """A checked decision: what the worker will apply, at which entry revision."""

    entry_id: int
    entry_revision: int
    action: CardAction
    value: str | None

    def decision_key(self, request_id: int) -> str:
        return decision_key(request_id, self.entry_id, self.action, self.entry_revision, self.value)


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and _ID.fullmatch(value) else None


def parse(payload: Mapping[str, Any]) -> CardCallback:
    """The callback's claims; CallbackRefused(MALFORMED_VALUE) when any is missing or odd."""
    header = payload.get("header") or {}
    event = payload.get("event") or {}
    action = event.get("action") if isinstance(event, Mapping) else None
    context = event.get("context") if isinstance(event, Mapping) else None
    operator = event.get("operator") if isinstance(event, Mapping) else None
    if not (
        isinstance(header, Mapping)
        and isinstance(action, Mapping)
        and isinstance(context, Mapping)
        and isinstance(operator, Mapping)
    ):
        raise CallbackRefused(Refusal.MALFORMED_VALUE)
    value = action.get("value")
    if not isinstance(value, Mapping):
        raise CallbackRefused(Refusal.MALFORMED_VALUE)
    token = value.get(VALUE_TOKEN)
    entry = value.get(VALUE_ENTRY)
    kind = value.get(VALUE_ACTION)
    if isinstance(entry, str) and entry.isascii() and entry.isdigit() and len(entry) <= 18:
        entry = int(entry)
    seen = _revision(value.get(VALUE_REVISION))
    ids = (
        _str(header.get("event_id")),
        _str(header.get("app_id")),
        _str(context.get("open_message_id")),
        _str(context.get("open_chat_id")),
        _str(operator.get("open_id")),
    )
    if (
        not isinstance(token, str)
        or not 1 <= len(token) <= MAX_TOKEN_CHARS
        or not isinstance(entry, int)
        or isinstance(entry, bool)
        or not 0 < entry < 2**63
        or not isinstance(kind, str)
        or kind not in {a.value for a in CardAction}
        or None in ids
    ):
        raise CallbackRefused(Refusal.MALFORMED_VALUE)
    event_id, app_id, message_id, chat_id, open_id = (str(i) for i in ids)
    option = action.get("option")
    form = action.get("form_value")
    title = form.get(EDIT_FIELD) if isinstance(form, Mapping) else None
    return CardCallback(
        event_id,
        app_id,
        token,
        entry,
        CardAction(kind),
        message_id,
        chat_id,
        open_id,
        option if isinstance(option, str) else None,
        title if isinstance(title, str) else None,
        seen,
    )


def _revision(raw: object) -> int | None:
    if isinstance(raw, str) and raw.isascii() and raw.isdigit() and len(raw) <= 9:
        raw = int(raw)
    if isinstance(raw, int) and not isinstance(raw, bool) and 0 < raw < 2**31:
        return raw
    return None


def _title(raw: str | None, max_chars: int) -> str:
    """The curation rules' own check (as for the API and the page), then NFC."""
    try:
        text = check_text(raw or "", "title", max_chars, multiline=False)
    except InvalidInput:
        raise CallbackRefused(Refusal.INVALID_TITLE, max_chars=max_chars) from None
    return unicodedata.normalize("NFC", text)


def check(
    callback: CardCallback,
    card: CardFacts,
    *,
    token_request_id: int | None,
    curators: Collection[str],
    now: datetime,
) -> Admissible:
    """The decision a callback may make on its card, or CallbackRefused with the first reason.

    `token_request_id` is the card the callback's token was issued for (None: no such token).
    Identity comes first (token, card, bot, chat, actor), then time, then the revision the
    clicker saw against the one the card stands for, then the values.
    """
    if token_request_id is None:
        raise CallbackRefused(Refusal.FORGED_TOKEN)
    if token_request_id != card.request_id:
        raise CallbackRefused(Refusal.TOKEN_OF_ANOTHER_CARD)
    if callback.app_id != card.bot_app_id:
        raise CallbackRefused(Refusal.WRONG_BOT)
    if callback.chat_id != card.chat_id:
        raise CallbackRefused(Refusal.WRONG_CHAT)
    if callback.operator not in curators:
        raise CallbackRefused(Refusal.NOT_CURATOR)
    if card.status == CardStatus.EXPIRED or now >= card.expires_at:
        raise CallbackRefused(Refusal.EXPIRED)
    if card.status != CardStatus.PENDING:
        raise CallbackRefused(Refusal.CARD_CLOSED)
    entry = card.request.entry(callback.entry_id)
    if entry is None:
        raise CallbackRefused(Refusal.ENTRY_NOT_OFFERED)
    if card.request.pin is not None and callback.action is not CardAction.CATEGORY:
        # A pin's reply card offers only its category (docs/pins.md).
        raise CallbackRefused(Refusal.ACTION_NOT_OFFERED)
    if closing_decision(card.decisions.get(entry.id, [])) is not None:
        raise CallbackRefused(Refusal.ALREADY_DECIDED)
    if callback.revision != entry.revision:
        # Another curator's decision (admitted or applied) or a change on the page moved the
        # draft on since this card was drawn: a decision on what the clicker did not see.
        raise CallbackRefused(Refusal.STALE_REVISION, now_reads=entry)
    value: str | None = None
    if callback.action is CardAction.CATEGORY:
        if callback.option not in card.request.options:
            raise CallbackRefused(Refusal.OPTION_NOT_OFFERED)
        value = callback.option
    elif callback.action is CardAction.EDIT:
        value = _title(callback.title, card.request.title_max_chars)
    return Admissible(entry.id, entry.revision, callback.action, value)


def claimed_key(callback: CardCallback, request_id: int, title_max_chars: int) -> str | None:
    """The decision key a click would have been admitted under: a click refused as stale or
    decided may be the same click again (a redelivery, a second tap), which is answered as
    already recorded rather than refused."""
    if callback.revision is None:
        return None
    value: str | None = None
    if callback.action is CardAction.CATEGORY:
        value = callback.option
    elif callback.action is CardAction.EDIT:
        try:
            value = _title(callback.title, title_max_chars)
        except CallbackRefused:
            return None
    return decision_key(request_id, callback.entry_id, callback.action, callback.revision, value)
