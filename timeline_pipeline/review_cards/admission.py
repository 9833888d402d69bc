"""Answer a `card.action.trigger` callback: check it against the interaction store, then admit
the decision and its resume intent in one transaction, and answer with a toast and the card
redrawn (docs/review-cards.md).

The database is the only authority: the card is found by the message id of the callback's
context, its token by hash, its curators, expiry and the entry's current revision are read in
the same transaction that admits. Nothing here is kept in memory between callbacks, so a
restarted or another replica answers the same. Every answer is HTTP 200 (Lark must not
redeliver a refusal), a database that fails in any way included; a refusal applies nothing and
is counted by reason.

A decision is admitted only on the revision the card stands for (the entry's stored revision
plus the card's decisions still being applied): a click on an older drawing of the card, or on
a draft changed elsewhere (the timeline page, the API), is refused as stale with a toast saying
what the draft reads now, and the answer redraws the card as it stands. When the draft changed
elsewhere, the card's copy of it is brought up to date in that answer's transaction, so that
the redrawn card can be decided on.

The toast and the redrawn card are in the language and zone of the card's workspace
(docs/i18n.md), read in the same transaction; a callback refused before its card is known (one
that cannot be read, or names no card) is answered in the `locale` and `timeZone` settings'.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import OperationalError

from timeline_pipeline.curation.presentation import presentation_of
from timeline_pipeline.db.engine import DatabaseUnavailable
from timeline_pipeline.domain.card_requests import CardRequest, Decision, pending_count
from timeline_pipeline.domain.interactions import CardAction
from timeline_pipeline.i18n.catalogs import Domain, translations
from timeline_pipeline.i18n.locales import Presentation, check_time_zone, resolve_locale
from timeline_pipeline.observability.logs import get_logger
from timeline_pipeline.observability.metrics import ReviewCardMetrics
from timeline_pipeline.review_cards.callbacks import (
    Admissible,
    CallbackRefused,
    CardCallback,
    CardFacts,
    Refusal,
    check,
    claimed_key,
    parse,
)
from timeline_pipeline.review_cards.card_writers import CardMoved, draw_stored_card, while_moved
from timeline_pipeline.review_cards.drawing import N_
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import entries, workspaces
from timeline_pipeline.store import interaction_admissions as admissions
from timeline_pipeline.store import interaction_requests as cards
from timeline_pipeline.store import interaction_tokens as tokens
from timeline_pipeline.store.interaction_admissions import AdmissionLimitReached
from timeline_pipeline.store.interaction_requests import CardRow

log = get_logger("timeline_pipeline.review_cards")

ADMITTED: Final = "admitted"
DUPLICATE: Final = "duplicate"
REFUSED: Final = "refused"


_DONE_TOAST: Final = {
    CardAction.CONFIRM: N_("Confirmed; the timeline is being updated."),
    CardAction.HIDE: N_("Hidden; the timeline is being updated."),
    CardAction.CATEGORY: N_("Category changed; the timeline is being updated."),
    CardAction.EDIT: N_("Title saved; the timeline is being updated."),
}


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class CardAnswer:
    """The callback's answer body (toast, and the card on success) and how it ended."""

    body: dict[str, Any]
    outcome: str
    reason: str | None = None
    admission_id: int | None = None


class _Duplicate(Exception):
    """The decision was admitted before (another event id, or another replica just now)."""

    def __init__(self, card: CardRow, presentation: Presentation) -> None:
        super().__init__("duplicate")
        self.card = card
        self.presentation = presentation


class _RefusedOnCard(Exception):
    """A refusal once its card, and so its workspace's presentation, is known."""

    def __init__(self, refused: CallbackRefused, presentation: Presentation) -> None:
        super().__init__(refused.reason.value)
        self.refused = refused
        self.presentation = presentation


def settings_presentation(settings: LarkTimelineSettings) -> Presentation:
    """The presentation of a callback that names no card: the settings' explicit locale (`auto`
    has no messages to read here, so English) and zone."""
    return Presentation(resolve_locale(settings.locale, ()), check_time_zone(settings.time_zone))


def toast(kind: str, content: str) -> dict[str, Any]:
    return {"toast": {"type": kind, "content": content}}


class CardCallbacks:
    def __init__(
        self,
        engine: Engine,
        settings: LarkTimelineSettings,
        metrics: ReviewCardMetrics,
        *,
        clock: Callable[[], datetime] = _utcnow,
    ) -> None:
        self._engine = engine
        self._settings = settings
        self._metrics = metrics
        self._clock = clock
        self._unknown = settings_presentation(settings)

    def handle(self, payload: Mapping[str, Any]) -> CardAnswer:
        """Never raises: every outcome, a database outage included, is a toast."""
        started = time.perf_counter()
        ids: dict[str, Any] = {}
        try:
            callback = parse(payload)
            ids.update(event_id=callback.event_id, message_id=callback.message_id)
            answer = self._admit(callback)
        except _RefusedOnCard as on_card:
            answer = self._refused(on_card.refused, ids, on_card.presentation)
        except CallbackRefused as refused:
            answer = self._refused(refused, ids, self._unknown)
        except (DatabaseUnavailable, OperationalError) as error:
            log.error("card_callback.unavailable", error_type=type(error).__name__, **ids)
            answer = self._refused(CallbackRefused(Refusal.UNAVAILABLE), ids, self._unknown)
        except Exception as error:  # the callback's boundary: see below
            # A value the database would not take (a check above should have refused it), a
            # constraint it broke, or a fault of our own: still a 200 with a toast, never a 500
            # that Lark redelivers. Logged with ids and the error's type only.
            log.error("card_callback.failed", error_type=type(error).__name__, **ids)
            answer = self._refused(CallbackRefused(Refusal.UNAVAILABLE), ids, self._unknown)
        self._metrics.callbacks.labels(answer.outcome).inc()
        self._metrics.answer_seconds.labels(answer.outcome).observe(time.perf_counter() - started)
        return answer

    def _refused(
        self,
        refused: CallbackRefused,
        ids: dict[str, Any],
        presentation: Presentation,
        card: dict[str, Any] | None = None,
    ) -> CardAnswer:
        self._metrics.refused.labels(refused.reason.value).inc()
        log.info("card_callback.refused", reason=refused.reason.value, **ids)
        return CardAnswer(
            {**toast("error", refused.toast(presentation)), **(card or {})},
            REFUSED,
            refused.reason.value,
        )

    def _admit(self, callback: CardCallback) -> CardAnswer:
        try:
            return while_moved(self._engine, lambda conn: self._admit_once(conn, callback))
        except _Duplicate as duplicate:  # the transaction rolled back: nothing written
            return self._duplicate(duplicate.card, callback, None, duplicate.presentation)
        except CardMoved:
            raise CallbackRefused(Refusal.UNAVAILABLE) from None

    def _admit_once(self, conn: Connection, callback: CardCallback) -> CardAnswer:
        """One read of each thing the checks need, then the write; the happy path stays a
        handful of statements, so that admission stays cheap (bench/callbacks)."""
        now = self._clock()
        card = cards.get_by_message(conn, callback.message_id)
        if card is None:
            raise CallbackRefused(Refusal.UNKNOWN_CARD)
        presentation = presentation_of(conn, card.workspace_id, self._settings)
        try:
            return self._decide(conn, card, callback, presentation, now)
        except CallbackRefused as refused:  # rolls back whatever was written
            raise _RefusedOnCard(refused, presentation) from None

    def _decide(
        self,
        conn: Connection,
        card: CardRow,
        callback: CardCallback,
        presentation: Presentation,
        now: datetime,
    ) -> CardAnswer:
        token_card = tokens.card_of(conn, callback.token)
        try:
            admissible = check(
                callback,
                _facts(card),
                token_request_id=token_card,
                curators=workspaces.curators_of(conn, card.workspace_id),
                now=now,
            )
        except CallbackRefused as refused:
            if refused.reason in (Refusal.ALREADY_DECIDED, Refusal.STALE_REVISION):
                # The same click again (a redelivery, a second tap) finds its own decision.
                earlier = admissions.by_event(conn, callback.event_id)
                if earlier is None:
                    key = claimed_key(callback, card.id, card.request.title_max_chars)
                    earlier = admissions.by_decision_key(conn, key) if key else None
                if earlier is not None and earlier.request_id == card.id:
                    return self._duplicate(card, callback, earlier.id, presentation)
            if refused.reason is Refusal.STALE_REVISION:
                return self._stale(card, callback, refused, presentation)
            raise
        entry = entries.get(conn, admissible.entry_id)
        if entry is None or entry.workspace_id != card.workspace_id:
            raise CallbackRefused(Refusal.ENTRY_GONE)
        shown = card.request.entry(admissible.entry_id)
        assert shown is not None  # check() found it
        pending = pending_count(card.decisions.get(admissible.entry_id, []))
        if entry.revision + pending != admissible.entry_revision:
            # Changed elsewhere (the page, the API) since the card was drawn. With nothing of
            # the card's own in flight, the card's copy catches up, so the redrawn card works.
            if pending == 0:
                request = card.request.with_revision(
                    entry.id, entry.revision, title=entry.title, category=entry.category
                )
                refreshed = cards.write_state(
                    conn,
                    card,
                    request=request,
                    decisions=card.decisions,
                    status=card.status,
                    now=now,
                )
                if refreshed is None:
                    raise CardMoved
                card = refreshed
                shown = card.request.entry(entry.id) or shown
            stale = CallbackRefused(Refusal.STALE_REVISION, now_reads=shown)
            return self._stale(card, callback, stale, presentation)
        return self._write(conn, card, callback, admissible, presentation, now)

    def _stale(
        self,
        card: CardRow,
        callback: CardCallback,
        refused: CallbackRefused,
        presentation: Presentation,
    ) -> CardAnswer:
        """A stale click's answer: the toast says what the draft reads now, and the card is
        redrawn as it stands, so the clicker sees it before deciding again."""
        ids = {"event_id": callback.event_id, "message_id": callback.message_id}
        return self._refused(refused, ids, presentation, self._card(card, callback, presentation))

    def _write(
        self,
        conn: Connection,
        card: CardRow,
        callback: CardCallback,
        admissible: Admissible,
        presentation: Presentation,
        now: datetime,
    ) -> CardAnswer:
        decisions = {k: list(v) for k, v in card.decisions.items()}
        decision = Decision(
            admissible.action,
            callback.operator,
            now,
            value=admissible.value,
            revision=admissible.entry_revision,
        )
        decisions.setdefault(admissible.entry_id, []).append(decision)
        written = cards.write_state(
            conn,
            card,
            request=_ahead(card, admissible),
            decisions=decisions,
            status=card.status,
            now=now,
        )
        if written is None:
            raise CardMoved
        try:
            admission_id = admissions.admit(
                conn,
                request_id=card.id,
                workspace_id=card.workspace_id,
                event_id=callback.event_id,
                decision_key=admissible.decision_key(card.id),
                entry_id=admissible.entry_id,
                entry_revision=admissible.entry_revision,
                action=admissible.action,
                value=admissible.value,
                actor_open_id=callback.operator,
                now=now,
                limit=self._settings.review_card_admission_limit_per_workspace,
            )
        except AdmissionLimitReached:
            raise CallbackRefused(Refusal.ADMISSION_LIMIT) from None  # rolls the card back
        if admission_id is None:
            raise _Duplicate(card, presentation)  # rolls the card's write back with the transaction
        log.info(
            "card_callback.admitted",
            event_id=callback.event_id,
            card_id=card.id,
            entry_id=admissible.entry_id,
            action=admissible.action.value,
            admission_id=admission_id,
        )
        done = translations(Domain.CHAT, presentation.locale).gettext(
            _DONE_TOAST[admissible.action]
        )
        return CardAnswer(
            {**toast("success", done), **self._card(written, callback, presentation)},
            ADMITTED,
            admission_id=admission_id,
        )

    def _duplicate(
        self,
        card: CardRow,
        callback: CardCallback,
        admission_id: int | None,
        presentation: Presentation,
    ) -> CardAnswer:
        log.info("card_callback.duplicate", event_id=callback.event_id, card_id=card.id)
        recorded = translations(Domain.CHAT, presentation.locale).gettext("Already recorded.")
        return CardAnswer(
            {**toast("info", recorded), **self._card(card, callback, presentation)},
            DUPLICATE,
            admission_id=admission_id,
        )

    def _card(
        self, card: CardRow, callback: CardCallback, presentation: Presentation
    ) -> dict[str, Any]:
        """The card redrawn from the stored state, with the token the callback came with."""
        data = draw_stored_card(
            card,
            token=callback.token,
            link_base_url=self._settings.review_card_link_base_url,
            presentation=presentation,
        )
        return {"card": {"type": "raw", "data": data}}


def _ahead(card: CardRow, admissible: Admissible) -> CardRequest:
    """The card's request with the draft one revision on, showing the admitted change: the
    revision and values the draft will have once the worker applies this decision."""
    shown = card.request.entry(admissible.entry_id)
    assert shown is not None
    changes: dict[str, Any] = {}
    if admissible.action is CardAction.CATEGORY and admissible.value is not None:
        changes["category"] = admissible.value
    elif admissible.action is CardAction.EDIT and admissible.value is not None:
        changes["title"] = admissible.value
    return card.request.with_revision(shown.id, shown.revision + 1, **changes)


def _facts(card: CardRow) -> CardFacts:
    return CardFacts(
        card.id,
        card.workspace_id,
        card.bot_app_id or "",
        card.chat_id,
        card.message_id,
        card.status,
        card.expires_at,
        card.request,
        card.decisions,
    )
