"""Pin and unpin a chat message from a curator's reaction (docs/pins.md).

A reaction with `pinEmojiType` by a curator of a workspace the message's chat is bound to makes
the message a `source=human`, `status=confirmed` entry of that workspace, bound to the message's
evidence, and queues one reply in the message's thread (a `chat_pin` card in the interaction
store, posted by the review-card worker: the same durable delivery, so a restart neither loses
nor repeats it). Every bound workspace is decided on its own, with its own curators.

Idempotency is durable: the pin row (one per workspace, message and curator) decides whether a
reaction is new, the entry is unique by its fingerprint in the workspace, and the reply card by
its idempotency uuid. Each workspace's pin, entry, audit event and reply card commit together.

The message is looked up first in the stored evidence of the chats the curator's workspaces are
bound to (the event names no chat); when it is not stored yet it is read from Lark, but only
when a workspace the curator curates could take it, and it is stored through the shared ingest
path only in the bound workspaces the curator curates, so the same eligibility rules decide
where it may go and no workspace gets a message because another workspace's curator asked
(docs/pins.md, "What a reaction does"). That Lark call is the only I/O besides the database,
and it happens outside any transaction.

Unpinning counts only current curators of a workspace the chat is still bound to; a removal that
arrives before its creation leaves a tombstone (`store.pin_tombstones`) that the creation, when
older, honours (docs/pins.md, "A removal before its creation", "A removed curator").
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Protocol

from sqlalchemy import Connection, Engine

from timeline_pipeline.curation.presentation import presentation_of
from timeline_pipeline.curation.rules import CATEGORIES, DETAIL_MAX_CHARS, TITLE_MAX_CHARS, Action
from timeline_pipeline.curation.service import CurationService, NewEntry
from timeline_pipeline.db.engine import transaction
from timeline_pipeline.domain.card_requests import KIND_CHAT_PIN, CardEntry, CardRequest, PinNote
from timeline_pipeline.domain.entries import EntryStatus
from timeline_pipeline.domain.evidence import EvidenceRow
from timeline_pipeline.domain.keys import (
    SOURCE_LARK,
    SOURCE_TYPE_LARK_MESSAGE,
    message_source_key,
)
from timeline_pipeline.domain.workspaces import Workspace
from timeline_pipeline.i18n.catalogs import Domain, translations
from timeline_pipeline.i18n.locales import Locale
from timeline_pipeline.ingest.eligibility import ingestion_start, workspace_skip
from timeline_pipeline.ingest.writer import ingest
from timeline_pipeline.lark.client import LarkApiError
from timeline_pipeline.lark.normalize import MalformedMessageError, normalize_list_item
from timeline_pipeline.observability.logs import get_logger
from timeline_pipeline.observability.metrics import PinMetrics
from timeline_pipeline.pins.reactions import Reaction, Refusal
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import chat_pins, entries, evidence, pin_tombstones, workspaces
from timeline_pipeline.store import interaction_requests as cards

log = get_logger("timeline_pipeline.pins")

PIN_CATEGORY: Final = "finding"
"""A pin's category until the curator changes it (page or reply card): a message someone
thought worth pinning is most often something found out."""
PIN_PROCESSOR: Final = "pin"
DUPLICATE: Final = "duplicate"
_SPACES: Final = re.compile(r"\s+")


class MessageSource(Protocol):
    """Reads one message from Lark (the product's `LarkClient`)."""

    def get_message(self, message_id: str) -> dict[str, Any] | None: ...


class LarkUnavailable(Exception):
    """Lark did not answer the message lookup; the event should be delivered again."""


@dataclass(frozen=True, slots=True)
class PinResult:
    """What one reaction did: `pinned`/`unpinned` name the workspaces it changed; `reasons`
    counts why the rest changed nothing (refusal codes, or `duplicate`)."""

    pinned: tuple[str, ...] = ()
    unpinned: tuple[str, ...] = ()
    reasons: Counter[str] = field(default_factory=Counter)
    chat_id: str | None = None

    @property
    def changed(self) -> bool:
        return bool(self.pinned or self.unpinned)

    @property
    def reason(self) -> str | None:
        """The answer's reason when nothing changed: the most frequent one (ties by name)."""
        if self.changed or not self.reasons:
            return None
        return min(self.reasons.items(), key=lambda item: (-item[1], item[0]))[0]


def pin_fingerprint(message_id: str) -> str:
    """The pin entry's key in its workspace: one entry per pinned message, whoever pinned it."""
    return "pin-" + hashlib.sha256(message_id.encode()).hexdigest()[:56]


def pin_uuid(workspace_id: str, message_id: str) -> str:
    """The reply's idempotency uuid (Lark dedupes a send by it; at most 50 characters)."""
    digest = hashlib.sha256(f"pin:{workspace_id}:{message_id}".encode()).hexdigest()
    return f"pn-{digest[:40]}"


def actor_of(open_id: str) -> str:
    """How a pin names its curator in the audit log (as a review-card decision does)."""
    return f"lark:{open_id}"


def entry_text(
    content: str, message_type: str, locale: Locale = Locale.EN
) -> tuple[str, str | None]:
    """The entry's title (one line, the message's words) and, when the title had to be cut,
    the whole text as its detail. A message without words (an image, a file) is named by its
    type, in the workspace's language (docs/i18n.md)."""
    flat = _SPACES.sub(" ", content).strip()
    if not flat:
        t = translations(Domain.CHAT, locale)
        return t.gettext("Pinned {kind} message").format(kind=message_type or "message"), None
    limit = min(TITLE_MAX_CHARS, 200)
    if len(flat) <= limit:
        return flat, None
    return flat[: limit - 1].rstrip() + "…", content.strip()[:DETAIL_MAX_CHARS]


def _utcnow() -> datetime:
    return datetime.now(UTC)


class PinService:
    def __init__(
        self,
        engine: Engine,
        settings: LarkTimelineSettings,
        metrics: PinMetrics,
        *,
        lark: MessageSource | None,
        app_id: str | None,
        clock: Callable[[], datetime] = _utcnow,
    ) -> None:
        self._engine = engine
        self._settings = settings
        self._metrics = metrics
        self._lark = lark
        self._app_id = app_id or None
        self._clock = clock
        self._curation = CurationService(engine, clock=clock)

    def handle(self, reaction: Reaction) -> PinResult:
        """Apply one reaction; raises LarkUnavailable or a database error when it should be
        delivered again (nothing was written then)."""
        if not self._settings.pin_from_chat_enabled:
            result = PinResult(reasons=Counter({Refusal.PINS_DISABLED.value: 1}))
        elif reaction.emoji_type != self._settings.pin_emoji_type:
            result = PinResult(reasons=Counter({Refusal.OTHER_EMOJI.value: 1}))
        elif reaction.operator_type != "user":
            result = PinResult(reasons=Counter({Refusal.NOT_A_PERSON.value: 1}))
        elif reaction.removed:
            result = self._unpin(reaction)
        else:
            result = self._pin(reaction)
        self._count(result)
        log.info(
            "pin_reaction.handled",
            message_id=reaction.message_id,
            removed=reaction.removed,
            pinned=list(result.pinned),
            unpinned=list(result.unpinned),
            reasons=dict(result.reasons),
        )
        return result

    def _count(self, result: PinResult) -> None:
        if result.pinned:
            self._metrics.created.inc(len(result.pinned))
        if result.unpinned:
            self._metrics.removed.inc(len(result.unpinned))
        for reason, count in result.reasons.items():
            self._metrics.refused.labels(reason).inc(count)

    # --- pin --------------------------------------------------------------------------------

    def _pin(self, reaction: Reaction) -> PinResult:
        with transaction(self._engine) as conn:
            curated = workspaces.chats_curated_by(conn, reaction.operator)
            if not curated:
                return PinResult(reasons=Counter({Refusal.NOT_CURATOR.value: 1}))
            if cards.get_by_message(conn, reaction.message_id) is not None:
                # One of the product's own cards (a review card or a pin's reply).
                return PinResult(reasons=Counter({Refusal.OWN_MESSAGE.value: 1}))
            chat_id = self._stored_chat(conn, curated, reaction.message_id)
            if chat_id is None and not self._may_collect(conn, curated):
                # No workspace this curator curates could take the message: Lark is not asked.
                return PinResult(reasons=Counter({Refusal.NOT_ELIGIBLE.value: 1}))
        item: dict[str, Any] | None = None
        if chat_id is None:
            item, refusal = self._collect(reaction.message_id)
            if refusal is not None:
                return PinResult(reasons=Counter({refusal.value: 1}))
            assert item is not None
            chat_id = str(item["chat_id"])
        with transaction(self._engine) as conn:
            return self._pin_in_chat(conn, reaction, chat_id, item)

    def _stored_chat(
        self, conn: Connection, curated: Sequence[tuple[str, str]], message_id: str
    ) -> str | None:
        """The chat of the message if a workspace the curator curates stored it (one indexed
        probe per curated chat)."""
        for workspace_id, chat_id in curated:
            if self._evidence(conn, workspace_id, chat_id, message_id) is not None:
                return chat_id
        return None

    def _may_collect(self, conn: Connection, curated: Sequence[tuple[str, str]]) -> bool:
        """Whether a workspace the curator curates is in scope now: a message is read from Lark
        only for a workspace that could store it (docs/pins.md, "What a reaction does")."""
        found = workspaces.workspaces_by_ids(conn, [workspace_id for workspace_id, _ in curated])
        now = self._clock()
        return any(workspace_skip(w, self._settings, now) is None for w in found.values())

    def _collect(self, message_id: str) -> tuple[dict[str, Any] | None, Refusal | None]:
        """The message from Lark, or the refusal that reading it leads to."""
        if self._lark is None:
            return None, Refusal.MESSAGE_UNAVAILABLE
        try:
            item = self._lark.get_message(message_id)
        except LarkApiError as error:
            if error.retryable:
                raise LarkUnavailable(error.code) from None
            log.info("pin_reaction.message_unreadable", message_id=message_id, code=error.code)
            return None, Refusal.MESSAGE_UNAVAILABLE
        if item is None or not isinstance(item.get("chat_id"), str) or not item["chat_id"]:
            return None, Refusal.MESSAGE_UNAVAILABLE
        raw_sender = item.get("sender")
        sender: dict[str, Any] = raw_sender if isinstance(raw_sender, dict) else {}
        if sender.get("sender_type") == "app" and self._app_id and sender.get("id") == self._app_id:
            return None, Refusal.OWN_MESSAGE
        if item.get("msg_type") == "interactive":
            return None, Refusal.CARD
        return item, None

    def _pin_in_chat(
        self, conn: Connection, reaction: Reaction, chat_id: str, item: dict[str, Any] | None
    ) -> PinResult:
        pin_tombstones.lock_reaction(conn, reaction.message_id, reaction.operator)
        bound = [b.workspace for b in workspaces.bindings_for_chat(conn, chat_id)]
        if not bound:
            return PinResult(reasons=Counter({Refusal.UNBOUND_CHAT.value: 1}), chat_id=chat_id)
        now = self._clock()
        curating = {w.id for w in bound if reaction.operator in workspaces.curators_of(conn, w.id)}
        if item is not None:
            try:
                message = normalize_list_item(
                    item, max_text_chars=self._settings.max_message_chars, app_id=self._app_id
                )
            except MalformedMessageError:
                return PinResult(
                    reasons=Counter({Refusal.MESSAGE_UNAVAILABLE.value: 1}), chat_id=chat_id
                )
            # The shared write path, and only into the workspaces whose curator asked: the
            # message goes only where the eligibility rules let it.
            mine = [w for w in bound if w.id in curating]
            if mine:
                ingest(conn, [message], mine, self._settings, now, app_id=self._app_id)
        pinned: list[str] = []
        reasons: Counter[str] = Counter()
        for workspace in bound:
            if workspace.id not in curating:
                reasons[Refusal.NOT_CURATOR.value] += 1
                continue
            outcome = self._pin_workspace(conn, workspace, reaction, chat_id, now)
            if outcome is None:
                pinned.append(workspace.id)
            else:
                reasons[outcome] += 1
        return PinResult(pinned=tuple(pinned), reasons=reasons, chat_id=chat_id)

    def _pin_workspace(
        self,
        conn: Connection,
        workspace: Workspace,
        reaction: Reaction,
        chat_id: str,
        now: datetime,
    ) -> str | None:
        """None when this workspace's pin changed; otherwise why not. The caller checked that
        the person curates the workspace."""
        row = self._evidence(conn, workspace.id, chat_id, reaction.message_id)
        if row is None or row.deleted:
            return Refusal.NOT_ELIGIBLE.value
        if row.metadata.get("message_type") == "interactive":
            return Refusal.CARD.value
        if workspace_skip(
            workspace, self._settings, now
        ) is not None or row.occurred_at < ingestion_start(workspace, self._settings, now):
            return Refusal.NOT_ELIGIBLE.value
        existing = chat_pins.get(conn, workspace.id, reaction.message_id, reaction.operator)
        if existing is None:
            removed_at = pin_tombstones.removed_at(
                conn, workspace.id, reaction.message_id, reaction.operator, reaction.emoji_type
            )
            if removed_at is not None and removed_at >= reaction.action_at:
                return Refusal.SUPERSEDED.value  # its removal arrived first
            entry_id = self._entry(conn, workspace, row, reaction)
            if (
                chat_pins.insert(
                    conn,
                    workspace_id=workspace.id,
                    message_id=reaction.message_id,
                    operator=reaction.operator,
                    chat_id=chat_id,
                    evidence_id=row.id,
                    entry_id=entry_id,
                    action_at=reaction.action_at,
                    now=now,
                )
                is None
            ):
                return DUPLICATE
            self._queue_reply(conn, workspace, entry_id, chat_id, reaction, now)
            return None
        if existing.status == chat_pins.PINNED:
            return DUPLICATE
        moved = chat_pins.move(
            conn, existing, status=chat_pins.PINNED, action_at=reaction.action_at, now=now
        )
        if moved is None:
            return DUPLICATE  # an older reaction delivered late
        self._set_hidden(conn, workspace.id, existing.entry_id, reaction.operator, hidden=False)
        return None

    def _entry(
        self, conn: Connection, workspace: Workspace, row: EvidenceRow, reaction: Reaction
    ) -> int:
        """The message's pin entry in the workspace: made now, or the one another curator's
        pin made (shown again if it was hidden)."""
        fingerprint = pin_fingerprint(reaction.message_id)
        found = entries.get_by_fingerprint(conn, workspace.id, fingerprint)
        if found is not None:
            self._set_hidden(conn, workspace.id, found.id, reaction.operator, hidden=False)
            return found.id
        locale = presentation_of(conn, workspace.id, self._settings).locale
        title, detail = entry_text(row.content, str(row.metadata.get("message_type") or ""), locale)
        view = self._curation.add(
            workspace.id,
            NewEntry(
                occurred_at=row.occurred_at,
                title=title,
                category=PIN_CATEGORY,
                detail=detail,
                evidence_ids=(row.id,),
                fingerprint=fingerprint,
            ),
            actor=actor_of(reaction.operator),
            conn=conn,
        )
        return view.id

    def _queue_reply(
        self,
        conn: Connection,
        workspace: Workspace,
        entry_id: int,
        chat_id: str,
        reaction: Reaction,
        now: datetime,
    ) -> None:
        """The reply in the message's thread, queued in the same transaction as the pin; a
        second pin of the same message in this workspace finds it queued and adds none."""
        entry = entries.get_entry(conn, workspace.id, entry_id)
        assert entry is not None
        request = CardRequest(
            (
                CardEntry(
                    entry.id,
                    entry.revision,
                    entry.occurred_at,
                    entry.title,
                    entry.category,
                    len(entry.evidence_ids),
                ),
            ),
            CATEGORIES,
            TITLE_MAX_CHARS,
            {"category": "select"},
            PinNote(workspace.id, reaction.operator),
        )
        cards.create(
            conn,
            workspace_id=workspace.id,
            kind=KIND_CHAT_PIN,
            window_state_id=None,
            processor_version=PIN_PROCESSOR,
            idempotency_uuid=pin_uuid(workspace.id, reaction.message_id),
            chat_id=chat_id,
            reply_to_message_id=reaction.message_id,
            request=request,
            expires_at=now + self._settings.review_card_ttl,
            now=now,
        )

    # --- unpin ------------------------------------------------------------------------------

    def _unpin(self, reaction: Reaction) -> PinResult:
        """Take the curator's pin back in every workspace where they pinned the message.

        The pin row always follows the reaction (so it says what the chat shows), but only a
        current curator of a workspace the chat is still bound to hides the entry, and a
        removed curator's leftover row no longer counts as a pin. Where the curator has no
        row yet, the removal leaves a tombstone for its creation to honour."""
        now = self._clock()
        unpinned: list[str] = []
        reasons: Counter[str] = Counter()
        with transaction(self._engine) as conn:
            pin_tombstones.lock_reaction(conn, reaction.message_id, reaction.operator)
            pins = chat_pins.of_operator(conn, reaction.message_id, reaction.operator)
            self._leave_tombstones(conn, reaction, {pin.workspace_id for pin in pins}, now)
            if not pins:
                return PinResult(reasons=Counter({Refusal.NOT_PINNED.value: 1}))
            for pin in pins:
                if pin.status != chat_pins.PINNED:
                    reasons[DUPLICATE] += 1
                    continue
                curators = workspaces.curators_of(conn, pin.workspace_id)
                refusal = self._unpin_refusal(conn, pin, reaction.operator, curators)
                moved = chat_pins.move(
                    conn, pin, status=chat_pins.UNPINNED, action_at=reaction.action_at, now=now
                )
                if moved is None:
                    reasons[DUPLICATE] += 1
                    continue
                if refusal is not None:
                    reasons[refusal.value] += 1
                    continue
                if (
                    chat_pins.pinned_count(
                        conn, pin.workspace_id, pin.message_id, curators=curators
                    )
                    == 0
                ):
                    self._set_hidden(
                        conn, pin.workspace_id, pin.entry_id, reaction.operator, hidden=True
                    )
                unpinned.append(pin.workspace_id)
        return PinResult(unpinned=tuple(unpinned), reasons=reasons, chat_id=pins[0].chat_id)

    @staticmethod
    def _unpin_refusal(
        conn: Connection, pin: chat_pins.PinRow, operator: str, curators: Sequence[str]
    ) -> Refusal | None:
        """Why this removal may not hide the pin's entry: the person no longer curates the
        workspace, or the chat is no longer bound to it (docs/pins.md, "A removed curator")."""
        if operator not in curators:
            return Refusal.NOT_CURATOR
        if pin.chat_id not in workspaces.chats_of(conn, pin.workspace_id):
            return Refusal.UNBOUND_CHAT
        return None

    def _leave_tombstones(
        self, conn: Connection, reaction: Reaction, pinned_in: set[str], now: datetime
    ) -> None:
        """A removal with no pin row in a workspace the person curates (its creation may not
        have arrived yet) is remembered there, so the older creation does not pin."""
        curated = {
            workspace_id for workspace_id, _ in workspaces.chats_curated_by(conn, reaction.operator)
        }
        for workspace_id in sorted(curated - pinned_in):
            pin_tombstones.record(
                conn,
                workspace_id=workspace_id,
                message_id=reaction.message_id,
                operator=reaction.operator,
                emoji_type=reaction.emoji_type,
                removed_at=reaction.action_at,
                now=now,
            )

    def _set_hidden(
        self, conn: Connection, workspace_id: str, entry_id: int, operator: str, *, hidden: bool
    ) -> None:
        """Hide the pin's entry (its last pin went) or restore it (pinned again), unless it
        already is so. Hidden, not deleted: the entry stays for traceability (docs/pins.md)."""
        entry = entries.get_entry(conn, workspace_id, entry_id)
        if entry is None or (entry.status == EntryStatus.HIDDEN) == hidden:
            return
        self._curation.transition(
            workspace_id,
            entry_id,
            Action.HIDE if hidden else Action.RESTORE,
            expected_revision=entry.revision,
            actor=actor_of(operator),
            conn=conn,
        )

    @staticmethod
    def _evidence(
        conn: Connection, workspace_id: str, chat_id: str, message_id: str
    ) -> EvidenceRow | None:
        return evidence.get_by_key(
            conn,
            workspace_id,
            SOURCE_LARK,
            SOURCE_TYPE_LARK_MESSAGE,
            message_source_key(chat_id, message_id),
        )
