"""What each routed event does: bounded work, and the database as the only thing it calls.

Handling is split in two. The first half is pure CPU on the request (normalize, chat type,
cached bindings) and settles most ignorable events without touching the database. What is left
is a `Pending` write, run by the group-commit writer inside a transaction: resolve bindings on a
cache miss, then the shared ingest path (the one reconciliation uses) for received messages
(all those of one chat in the batch in one call), or the deletion policy for a recalled one.
No AI call, no attachment download and no contact lookup happens anywhere here (docs/design.md §2).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Final

from sqlalchemy import Connection

from timeline_pipeline.domain.workspaces import Workspace
from timeline_pipeline.ingest import recall
from timeline_pipeline.ingest.eligibility import chat_skip, message_skip, sender_skip
from timeline_pipeline.ingest.writer import ingest
from timeline_pipeline.lark.message_policy import is_self_message
from timeline_pipeline.lark.normalize import (
    MalformedMessageError,
    NormalizedLarkMessage,
    UnsupportedMessageTypeError,
    normalize_event_message,
    read_identifier,
    read_time,
)
from timeline_pipeline.pins.reactions import MalformedReaction, Reaction, read_reaction
from timeline_pipeline.receiver import event_types
from timeline_pipeline.receiver.bindings import BindingCache
from timeline_pipeline.receiver.outcomes import Outcome, Pending, Reason, Rejected
from timeline_pipeline.receiver.registry import (
    BlockingReply,
    EventHandlerRegistry,
    HandlerReply,
    HandlerResult,
)
from timeline_pipeline.receiver.verification import VerifiedCallback
from timeline_pipeline.settings import LarkTimelineSettings

# Group keys: the batch writes groups in key order (receiver/batching.py), so a transaction
# takes its chats in chat order and, within a chat, the recalls before the messages. A recall
# that misses its message takes the chat's lock alone, a message write shares it
# (store/recall_tombstones.py): taken in that one order everywhere, no two batches wait for
# each other in a circle, and no batch asks for the lock alone while it shares it.
_RECALLS: Final = "1-recalls"
_MESSAGES: Final = "2-messages"


@dataclass(frozen=True)
class _Recall:
    message_id: str
    chat_id: str
    recalled_at: datetime
    now: datetime


class EventHandlers:
    def __init__(
        self,
        settings: LarkTimelineSettings,
        bindings: BindingCache,
        *,
        app_id: str | None,
        clock: Callable[[], datetime],
    ) -> None:
        self._settings = settings
        self._bindings = bindings
        self._app_id = app_id or None
        self._clock = clock

    # --- im.message.receive_v1 --------------------------------------------------------------

    def message(self, event: Mapping[str, Any]) -> Outcome | Pending:
        try:
            message = normalize_event_message(
                event, max_text_chars=self._settings.max_message_chars, app_id=self._app_id
            )
        except UnsupportedMessageTypeError as error:
            return Outcome(error.message_id, ignored=Reason.UNSUPPORTED_MESSAGE_TYPE)
        except MalformedMessageError as error:
            raise Rejected(400, error.reason) from None
        base = self._base(message)
        if not message.chat_type:
            # Every message event names its chat type; one that does not is not a group message
            # we know how to place, whatever its chat id says.
            return replace(base, ignored=Reason.UNKNOWN_CHAT_TYPE)
        if chat_skip(message) is not None:
            return replace(base, ignored=Reason.NOT_GROUP_CHAT)
        if sender_skip(message, self._app_id) is not None:
            return replace(base, ignored=Reason.SELF_GENERATED)
        if self._bindings.cached(message.chat_id) == ():
            return replace(base, ignored=Reason.UNBOUND_CHAT)
        group = (message.chat_id, _MESSAGES)
        return Pending(self._write_messages, message, group, message.message_id, message.chat_id)

    def _write_messages(
        self, conn: Connection, messages: Sequence[NormalizedLarkMessage]
    ) -> list[Outcome]:
        """Messages of one chat: one ingest call, so one batch upsert for the lot."""
        chat_id = messages[0].chat_id
        bases = [self._base(message) for message in messages]
        workspaces = self._bindings.resolve(conn, chat_id)
        if not workspaces:
            return [replace(base, ignored=Reason.UNBOUND_CHAT) for base in bases]
        now = self._clock()
        result = ingest(conn, messages, workspaces, self._settings, now, app_id=self._app_id)
        outcomes = [
            self._placed(base, message, workspaces, now)
            for base, message in zip(bases, messages, strict=True)
        ]
        # The group's row counts ride on its first event, so that per-event counts add up.
        upserts = result.upserts
        outcomes[0] = replace(
            outcomes[0],
            writes=Counter(
                inserted=upserts.inserted, updated=upserts.updated, duplicate=upserts.duplicate
            ),
        )
        return outcomes

    def _placed(
        self,
        base: Outcome,
        message: NormalizedLarkMessage,
        workspaces: Sequence[Workspace],
        now: datetime,
    ) -> Outcome:
        """Where this message went: the same eligibility decision `ingest` made for it."""
        stored: list[str] = []
        skipped: Counter[str] = Counter()
        for workspace in workspaces:
            reason = message_skip(message, workspace, self._settings, now, app_id=self._app_id)
            if reason is None:
                stored.append(workspace.id)
            else:
                skipped[reason] += 1
        ignored = None if stored else _main_reason(skipped)
        return replace(base, ignored=ignored, workspace_ids=tuple(stored), skipped=skipped)

    def _base(self, message: NormalizedLarkMessage) -> Outcome:
        return Outcome(message.message_id, message.chat_id, excluded=self._exclusion(message))

    def _exclusion(self, message: NormalizedLarkMessage) -> str | None:
        """Why the message can never reach synthesis on account of its sender, if it cannot."""
        if not is_self_message(
            sender_type=message.sender_type, sender_id=message.sender_id, app_id=self._app_id
        ):
            return None
        return "self" if message.sender_id == self._app_id else "bot"

    # --- im.message.recalled_v1 -------------------------------------------------------------

    def recall(self, event: Mapping[str, Any], now: datetime) -> Outcome | Pending:
        message_id = _identifier(event, "message_id")
        chat_id = _identifier(event, "chat_id")
        recalled_at = _recall_time(event.get("recall_time"), now)
        if self._bindings.cached(chat_id) == ():
            return Outcome(message_id, chat_id, ignored=Reason.UNBOUND_CHAT)
        request = _Recall(message_id, chat_id, recalled_at, now)
        return Pending(self._write_recalls, request, (chat_id, _RECALLS), message_id, chat_id)

    def _write_recalls(self, conn: Connection, recalls: Sequence[_Recall]) -> list[Outcome]:
        """Recalls of one chat, redacted in message id order (each redaction locks its row, and
        another replica may be redacting the same messages: one order for all, see
        receiver/batching.py); the outcomes come back in the order given."""
        order = sorted(range(len(recalls)), key=lambda index: recalls[index].message_id)
        outcomes: dict[int, Outcome] = {}
        for index in order:
            outcomes[index] = self._write_recall(conn, recalls[index])
        return [outcomes[index] for index in range(len(recalls))]

    def _write_recall(self, conn: Connection, request: _Recall) -> Outcome:
        base = Outcome(request.message_id, request.chat_id)
        workspaces = [w.id for w in self._bindings.resolve(conn, request.chat_id)]
        if not workspaces:
            return replace(base, ignored=Reason.UNBOUND_CHAT)
        counts = recall.redact_everywhere(
            conn,
            workspaces,
            chat_id=request.chat_id,
            message_id=request.message_id,
            recalled_at=request.recalled_at,
            now=request.now,
        )
        missing = counts[recall.NOT_FOUND] == len(workspaces)
        return replace(
            base,
            ignored=Reason.MESSAGE_NOT_FOUND if missing else None,
            workspace_ids=tuple(workspaces),
            writes=Counter(redacted=counts[recall.REDACTED], tombstoned=counts[recall.TOMBSTONED]),
        )


def register_lark_handlers(
    registry: EventHandlerRegistry,
    handlers: EventHandlers,
    *,
    ingestion_enabled: bool,
    clock: Callable[[], datetime],
    card_actions: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None,
    reactions: Callable[[Reaction], HandlerReply] | None = None,
) -> EventHandlerRegistry:
    """Today's callbacks: the URL check, received and recalled messages, card actions,
    reactions added and removed.

    `card_actions` answers a verified `card.action.trigger` payload with its toast (and card)
    body; None while review cards are off (docs/review-cards.md). Its answer is always a 200,
    so that Lark never redelivers a refused click. `reactions` pins or unpins from a reaction
    (docs/pins.md); None while pins from the chat are off. It may block (a Lark read of a
    message not collected yet), so it runs off the event loop like a card action.

    A new event type is one more `registry.register(...)` here (see receiver/registry.py).
    """

    def url_verification(callback: VerifiedCallback) -> HandlerResult:
        return HandlerReply(200, {"challenge": callback.challenge})

    def message_received(callback: VerifiedCallback) -> HandlerResult:
        if not ingestion_enabled:
            return Outcome(ignored=Reason.INGESTION_DISABLED)
        return handlers.message(callback.payload["event"])

    def message_recalled(callback: VerifiedCallback) -> HandlerResult:
        # Applied even with ingestion off: stored content must still be forgotten.
        return handlers.recall(callback.payload["event"], clock())

    def card_action(callback: VerifiedCallback) -> HandlerResult:
        if card_actions is None:
            # Acknowledged so that Lark does not retry.
            return Outcome(ignored=Reason.REVIEW_CARDS_DISABLED)
        answer = card_actions
        return BlockingReply(lambda: HandlerReply(200, answer(callback.payload)))

    def reaction(removed: bool) -> Callable[[VerifiedCallback], HandlerResult]:
        def handle(callback: VerifiedCallback) -> HandlerResult:
            if reactions is None:
                return Outcome(ignored=Reason.PINS_DISABLED)
            try:
                parsed = read_reaction(callback.payload["event"], removed=removed, now=clock())
            except MalformedReaction as error:
                raise Rejected(400, error.reason) from None
            answer = reactions
            return BlockingReply(lambda: answer(parsed))

        return handle

    return (
        registry.register(event_types.URL_VERIFICATION, url_verification)
        .register(event_types.MESSAGE_RECEIVE, message_received)
        .register(event_types.MESSAGE_RECALLED, message_recalled)
        .register(event_types.CARD_ACTION, card_action)
        .register(event_types.REACTION_CREATED, reaction(removed=False))
        .register(event_types.REACTION_DELETED, reaction(removed=True))
    )


def _main_reason(skipped: Counter[str]) -> str:
    """The most frequent skip reason (ties by name), so the event-level label is stable."""
    if not skipped:
        return Reason.UNBOUND_CHAT
    return min(skipped.items(), key=lambda item: (-item[1], item[0]))[0]


def _bad_request(reason: str) -> Rejected:
    return Rejected(400, reason)


def _identifier(event: Mapping[str, Any], key: str) -> str:
    return read_identifier(event.get(key), key, _bad_request)


def _recall_time(value: object, now: datetime) -> datetime:
    """Epoch milliseconds as Lark sends them; absent means "now" (the recall just happened)."""
    return read_time(value, "recall_time", _bad_request, absent=now)
