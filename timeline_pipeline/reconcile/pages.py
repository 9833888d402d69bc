"""Normalize one history page without letting one bad item sink the rest. Pure.

Lark pages come from outside: an item may be missing its sender, carry a broken content JSON or
a type we do not store. Each such item is counted under the normalizer's reason code and left
out; the other items of the page still become evidence (issue 4, "bad input").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from timeline_pipeline.lark.normalize import (
    MalformedMessageError,
    NormalizedLarkMessage,
    normalize_list_item,
)
from timeline_pipeline.reconcile.planning import MessageKey


@dataclass
class NormalizedPage:
    messages: list[NormalizedLarkMessage] = field(default_factory=list)
    rejected: Counter[str] = field(default_factory=Counter)

    @property
    def keys(self) -> list[MessageKey]:
        return [MessageKey.of(m.created_at, m.message_id) for m in self.messages]

    def thread_ids(self) -> list[str]:
        """Threads whose roots this page lists, in page order, each once."""
        seen: dict[str, None] = {}
        for message in self.messages:
            if message.thread_id:
                seen.setdefault(message.thread_id, None)
        return list(seen)

    def extend(self, other: NormalizedPage) -> None:
        """Merge another page; a message seen twice (a thread root is listed by both the chat
        and its thread) is kept once, in its most recently updated form, so counts stay true."""
        position = {message.message_id: i for i, message in enumerate(self.messages)}
        for message in other.messages:
            at = position.get(message.message_id)
            if at is None:
                position[message.message_id] = len(self.messages)
                self.messages.append(message)
            elif message.updated_at > self.messages[at].updated_at:
                self.messages[at] = message
        self.rejected.update(other.rejected)


def normalize_page(
    items: Iterable[Mapping[str, Any]], *, max_text_chars: int, app_id: str | None
) -> NormalizedPage:
    page = NormalizedPage()
    for item in items:
        try:
            page.messages.append(
                normalize_list_item(item, max_text_chars=max_text_chars, app_id=app_id)
            )
        except MalformedMessageError as error:
            page.rejected[error.reason] += 1
    return page
