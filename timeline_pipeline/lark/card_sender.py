"""Posting and redrawing review cards through lark-oapi (the product's `LarkClient`).

A card is posted with an idempotency uuid derived from its window and processor version, so a
retried send lands once; a redraw is a PATCH of the whole card, so repeating it after a crash
is harmless (the patch carries the state, not a delta). Retries, rate limits and typed failures
are the client's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from timeline_pipeline.lark.client import LarkClient

INTERACTIVE = "interactive"


@dataclass(frozen=True, slots=True)
class Posted:
    message_id: str
    thread_id: str | None = None


class CardSender(Protocol):
    app_id: str

    def post(
        self, chat_id: str, card: dict[str, Any], *, uuid: str, reply_to: str | None
    ) -> Posted: ...

    def redraw(self, message_id: str, card: dict[str, Any]) -> None: ...


class LarkCardSender:
    """CardSender over the product's LarkClient (LARK_APP_ID at LARK_BASE_URL)."""

    def __init__(self, client: LarkClient, app_id: str) -> None:
        self._client = client
        self.app_id = app_id

    def post(
        self, chat_id: str, card: dict[str, Any], *, uuid: str, reply_to: str | None
    ) -> Posted:
        if reply_to:
            message_id = self._client.reply_message(
                reply_to, msg_type=INTERACTIVE, content=card, idempotency_uuid=uuid, in_thread=True
            )
        else:
            message_id = self._client.send_message(
                chat_id, msg_type=INTERACTIVE, content=card, idempotency_uuid=uuid
            )
        return Posted(message_id)

    def redraw(self, message_id: str, card: dict[str, Any]) -> None:
        self._client.patch_message(message_id, content=card)
