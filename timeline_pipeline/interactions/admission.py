"""Answer a `card.action.trigger` callback: check it against the interaction store, then admit
the decision and its resume intent in one transaction, and answer with a toast and the card
redrawn (README, "Review cards").

The database is the only authority: the card is found by the message id of the callback's
context, its token by hash, its curators, expiry and the entry's current revision are read in
the same transaction that admits. Nothing here is kept in memory between callbacks, so a
restarted or another replica answers the same. Every answer is HTTP 200 (Lark must not
redeliver a refusal); a refusal changes no row and is counted by reason.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import OperationalError

from timeline_pipeline.db.engine import DatabaseUnavailable, transaction
from timeline_pipeline.domain.interactions import CardAction
from timeline_pipeline.interactions.callbacks import (
    Admissible,
    CallbackRefused,
    CardCallback,
    CardFacts,
    Refusal,
    check,
    parse,
)
from timeline_pipeline.interactions.model import Decision
from timeline_pipeline.interactions.pin_card import draw_card
from timeline_pipeline.observability.logs import get_logger
from timeline_pipeline.observability.metrics import ReviewCardMetrics
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import entries, workspaces
from timeline_pipeline.store import interaction_admissions as admissions
from timeline_pipeline.store import interaction_requests as cards
from timeline_pipeline.store import interaction_tokens as tokens
from timeline_pipeline.store.interaction_requests import CardRow

log = get_logger("timeline_pipeline.interactions")

ADMITTED: Final = "admitted"
DUPLICATE: Final = "duplicate"
REFUSED: Final = "refused"
_CAS_ATTEMPTS: Final = 5
_DONE_TOAST: Final = {
    CardAction.CONFIRM: "Confirmed",
    CardAction.HIDE: "Hidden",
    CardAction.CATEGORY: "Category changed",
    CardAction.EDIT: "Title saved",
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


class _Moved(Exception):
    """The card changed between read and write: read it again."""


class _Duplicate(Exception):
    """The decision was admitted before (another event id, or another replica just now)."""

    def __init__(self, card: CardRow) -> None:
        super().__init__("duplicate")
        self.card = card


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

    def handle(self, payload: Mapping[str, Any]) -> CardAnswer:
        """Never raises: every outcome, a database outage included, is a toast."""
        started = time.perf_counter()
        ids: dict[str, Any] = {}
        try:
            callback = parse(payload)
            ids.update(event_id=callback.event_id, message_id=callback.message_id)
            answer = self._admit(callback)
        except CallbackRefused as refused:
            answer = self._refused(refused, ids)
        except (DatabaseUnavailable, OperationalError) as error:
            log.error("card_callback.unavailable", error_type=type(error).__name__, **ids)
            answer = self._refused(CallbackRefused(Refusal.UNAVAILABLE), ids)
        self._metrics.callbacks.labels(answer.outcome).inc()
        self._metrics.answer_seconds.labels(answer.outcome).observe(time.perf_counter() - started)
        return answer

    def _refused(self, refused: CallbackRefused, ids: dict[str, Any]) -> CardAnswer:
        self._metrics.refused.labels(refused.reason.value).inc()
        log.info("card_callback.refused", reason=refused.reason.value, **ids)
        return CardAnswer(toast("error", refused.toast), REFUSED, refused.reason.value)

    def _admit(self, callback: CardCallback) -> CardAnswer:
        for _ in range(_CAS_ATTEMPTS):
            try:
                with transaction(self._engine) as conn:
                    return self._admit_once(conn, callback)
            except _Moved:
                continue
            except _Duplicate as duplicate:  # the transaction rolled back: nothing written
                return self._duplicate(duplicate.card, callback, None)
        raise CallbackRefused(Refusal.UNAVAILABLE)

    def _admit_once(self, conn: Connection, callback: CardCallback) -> CardAnswer:
        """One read of each thing the checks need, then the write; the happy path is eight
        statements, so that admission stays cheap (bench/callbacks)."""
        now = self._clock()
        card = cards.get_by_message(conn, callback.message_id)
        if card is None:
            raise CallbackRefused(Refusal.UNKNOWN_CARD)
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
            # A redelivery of a click already admitted finds its own decision on the card.
            if refused.reason is Refusal.ALREADY_DECIDED:
                earlier = admissions.by_event(conn, callback.event_id)
                if earlier is not None and earlier.request_id == card.id:
                    return self._duplicate(card, callback, earlier.id)
            raise
        entry = entries.revision_of(conn, admissible.entry_id)
        if entry is None or entry[0] != card.workspace_id:
            raise CallbackRefused(Refusal.ENTRY_GONE)
        if entry[1] != admissible.entry_revision:
            raise CallbackRefused(Refusal.STALE_REVISION)
        limit = self._settings.review_card_admission_limit_per_workspace
        if admissions.working_count(conn, card.workspace_id) >= limit:
            raise CallbackRefused(Refusal.ADMISSION_LIMIT)
        return self._write(conn, card, callback, admissible, now)

    def _write(
        self,
        conn: Connection,
        card: CardRow,
        callback: CardCallback,
        admissible: Admissible,
        now: datetime,
    ) -> CardAnswer:
        decisions = {k: list(v) for k, v in card.decisions.items()}
        decision = Decision(admissible.action, callback.operator, now, value=admissible.value)
        decisions.setdefault(admissible.entry_id, []).append(decision)
        written = cards.write_state(
            conn, card, request=card.request, decisions=decisions, status=card.status, now=now
        )
        if written is None:
            raise _Moved
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
        )
        if admission_id is None:
            raise _Duplicate(card)  # rolls the card's write back with the transaction
        log.info(
            "card_callback.admitted",
            event_id=callback.event_id,
            card_id=card.id,
            entry_id=admissible.entry_id,
            action=admissible.action.value,
            admission_id=admission_id,
        )
        title = _DONE_TOAST[admissible.action]
        return CardAnswer(
            {
                **toast("success", f"{title}; the timeline is being updated."),
                **self._card(written, callback),
            },
            ADMITTED,
            admission_id=admission_id,
        )

    def _duplicate(
        self, card: CardRow, callback: CardCallback, admission_id: int | None
    ) -> CardAnswer:
        log.info("card_callback.duplicate", event_id=callback.event_id, card_id=card.id)
        return CardAnswer(
            {**toast("info", "Already recorded."), **self._card(card, callback)},
            DUPLICATE,
            admission_id=admission_id,
        )

    def _card(self, card: CardRow, callback: CardCallback) -> dict[str, Any]:
        """The card redrawn from the stored state, with the token the callback came with."""
        data = draw_card(
            card.request,
            card.decisions,
            token=callback.token,
            status=card.status,
            expires_at=card.expires_at,
            workspace_id=card.workspace_id,
            link_base_url=self._settings.review_card_link_base_url,
        )
        return {"card": {"type": "raw", "data": data}}


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
