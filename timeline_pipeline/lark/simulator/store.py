"""The local Lark's memory: chats as Lark history list items, plus users for the contact lookup.

Items are kept in Lark's own list-item shape so that what the simulator serves is byte-for-byte
what the product would parse from Lark. Edits and recalls happen in place after load, so tests can
change a message after the product has already listed it, as people do in a live incident.
"""

from __future__ import annotations

import bisect
import copy
import json
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

RECALLED_CONTENT: Final = json.dumps({"text": "This message was recalled"})
_MAX_ID: Final = "\uffff"

Key = tuple[int, str]
"""(create_time in ms, message_id): the total order Lark's history uses."""


class StoreError(ValueError):
    """A message or user line that the store cannot accept; the text names ids, never content."""


@dataclass(frozen=True)
class ListSlice:
    items: list[dict[str, Any]]
    last_key: Key | None
    has_more: bool


def _now() -> datetime:
    return datetime.now(UTC)


def _ms(value: datetime) -> int:
    return int(value.timestamp() * 1000)


def is_thread_reply(item: Mapping[str, Any]) -> bool:
    """A message inside a thread other than its root: hidden from a normal chat listing."""
    root = item.get("root_id") or ""
    return bool(item.get("thread_id")) and bool(root) and root != item.get("message_id")


class ChatStore:
    """Thread-safe message and user store with the indexes the history API pages over."""

    def __init__(
        self,
        messages: Iterable[Mapping[str, Any]] = (),
        users: Mapping[str, str] | None = None,
        *,
        clock: Callable[[], datetime] = _now,
        tenant_key: str = "sim_tenant",
    ) -> None:
        self._lock = threading.RLock()
        self._clock = clock
        self.tenant_key = tenant_key
        self._by_id: dict[str, dict[str, Any]] = {}
        self._chat_keys: dict[str, list[Key]] = {}
        self._thread_keys: dict[str, list[Key]] = {}
        self._thread_chat: dict[str, str] = {}
        self._users: dict[str, str] = dict(users or {})
        self._sent_by_uuid: dict[tuple[str, str], str] = {}
        self._card_log: list[dict[str, Any]] = []
        for item in messages:
            self.add_message(item)

    # ------------------------------------------------------------------ loading

    @classmethod
    def load_jsonl(cls, path: str | Path, **kwargs: Any) -> ChatStore:
        """Read one JSON object per line: messages, or `{"kind": "user", "open_id", "name"}`."""
        store = cls(**kwargs)
        with Path(path).open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except ValueError:
                    raise StoreError(f"line {number}: not JSON") from None
                if not isinstance(record, dict):
                    raise StoreError(f"line {number}: not a JSON object")
                kind = record.pop("kind", "message")
                try:
                    if kind == "user":
                        store.add_user(str(record["open_id"]), str(record["name"]))
                    elif kind == "message":
                        store.add_message(record)
                    else:
                        raise StoreError(f"unknown kind {kind!r}")
                except (KeyError, StoreError) as exc:
                    raise StoreError(f"line {number}: {exc}") from None
        return store

    def add_user(self, open_id: str, name: str) -> None:
        with self._lock:
            self._users[open_id] = name

    def add_message(self, item: Mapping[str, Any]) -> dict[str, Any]:
        """Insert a list item (copied); the ids and create_time decide where it pages."""
        message = copy.deepcopy(dict(item))
        message_id = message.get("message_id")
        chat_id = message.get("chat_id")
        if not isinstance(message_id, str) or not message_id:
            raise StoreError("message without message_id")
        if not isinstance(chat_id, str) or not chat_id:
            raise StoreError(f"message {message_id} without chat_id")
        try:
            created = int(message["create_time"])
        except (KeyError, TypeError, ValueError):
            raise StoreError(f"message {message_id} without a millisecond create_time") from None
        message["create_time"] = str(created)
        message.setdefault("update_time", str(created))
        message.setdefault("deleted", False)
        message.setdefault("updated", False)
        message.setdefault("body", {"content": "{}"})
        with self._lock:
            if message_id in self._by_id:
                raise StoreError(f"duplicate message_id {message_id}")
            self._by_id[message_id] = message
            self._index(message)
        return copy.deepcopy(message)

    def _index(self, message: dict[str, Any]) -> None:
        key: Key = (int(message["create_time"]), message["message_id"])
        chat_id = message["chat_id"]
        self._chat_keys.setdefault(chat_id, [])
        if not is_thread_reply(message):
            bisect.insort(self._chat_keys[chat_id], key)
        thread_id = message.get("thread_id")
        if thread_id:
            self._thread_chat[thread_id] = chat_id
            bisect.insort(self._thread_keys.setdefault(thread_id, []), key)

    # ------------------------------------------------------------------ reading

    def has_chat(self, chat_id: str) -> bool:
        with self._lock:
            return chat_id in self._chat_keys

    def chat_of_thread(self, thread_id: str) -> str | None:
        with self._lock:
            return self._thread_chat.get(thread_id)

    def get(self, message_id: str) -> dict[str, Any] | None:
        with self._lock:
            message = self._by_id.get(message_id)
            return copy.deepcopy(message) if message is not None else None

    def messages(self, chat_id: str | None = None) -> list[dict[str, Any]]:
        """Every stored message (thread replies included) in creation order."""
        with self._lock:
            chosen = [m for m in self._by_id.values() if chat_id in (None, m["chat_id"])]
            chosen.sort(key=lambda m: (int(m["create_time"]), m["message_id"]))
            return copy.deepcopy(chosen)

    def users(self, open_ids: Iterable[str]) -> list[dict[str, str]]:
        with self._lock:
            return [
                {"open_id": open_id, "name": self._users[open_id]}
                for open_id in open_ids
                if open_id in self._users
            ]

    def list_chat(
        self,
        chat_id: str,
        *,
        start_ms: int | None,
        end_ms: int | None,
        descending: bool,
        after: Key | None,
        limit: int,
    ) -> ListSlice:
        """Top-level messages and thread roots of a chat within [start_ms, end_ms]."""
        with self._lock:
            keys = self._chat_keys.get(chat_id, [])
            lo = 0 if start_ms is None else bisect.bisect_left(keys, (start_ms, ""))
            hi = len(keys) if end_ms is None else bisect.bisect_right(keys, (end_ms, _MAX_ID))
            return self._slice(keys[lo:hi], descending=descending, after=after, limit=limit)

    def list_thread(
        self, thread_id: str, *, descending: bool, after: Key | None, limit: int
    ) -> ListSlice:
        """A thread's root and replies; Lark offers no time bounds for this container."""
        with self._lock:
            keys = self._thread_keys.get(thread_id, [])
            return self._slice(keys, descending=descending, after=after, limit=limit)

    def _slice(
        self, keys: list[Key], *, descending: bool, after: Key | None, limit: int
    ) -> ListSlice:
        if descending:
            end = len(keys) if after is None else bisect.bisect_left(keys, after)
            chosen = list(reversed(keys[max(0, end - limit) : end]))
            has_more = end - limit > 0
        else:
            begin = 0 if after is None else bisect.bisect_right(keys, after)
            chosen = keys[begin : begin + limit]
            has_more = begin + limit < len(keys)
        items = [copy.deepcopy(self._by_id[message_id]) for _, message_id in chosen]
        return ListSlice(items, chosen[-1] if chosen else None, has_more)

    # ------------------------------------------------------------------ editing

    def edit_message(
        self, message_id: str, content: Mapping[str, Any] | str, *, at: datetime | None = None
    ) -> dict[str, Any]:
        """Change a message's body as its sender would; Lark then marks it `updated`."""
        with self._lock:
            message = self._require(message_id)
            message["body"] = {
                "content": content if isinstance(content, str) else json.dumps(content)
            }
            message["updated"] = True
            message["update_time"] = str(_ms(at or self._clock()))
            return copy.deepcopy(message)

    def recall_message(self, message_id: str, *, at: datetime | None = None) -> dict[str, Any]:
        """Recall keeps the identity, drops the content and marks the item `deleted`."""
        with self._lock:
            message = self._require(message_id)
            message["deleted"] = True
            message["body"] = {"content": RECALLED_CONTENT}
            message["update_time"] = str(_ms(at or self._clock()))
            return copy.deepcopy(message)

    def _require(self, message_id: str) -> dict[str, Any]:
        message = self._by_id.get(message_id)
        if message is None:
            raise KeyError(message_id)
        return message

    # ------------------------------------------------------------ bot messages

    def create_bot_message(
        self,
        *,
        app_id: str,
        chat_id: str,
        msg_type: str,
        content: str,
        idempotency_uuid: str | None,
        parent: Mapping[str, Any] | None = None,
        in_thread: bool = False,
    ) -> tuple[dict[str, Any], bool]:
        """Store a message sent by the app; a repeated (app, uuid) returns the first one.

        Returns the message and whether it was newly created.
        """
        with self._lock:
            if idempotency_uuid:
                existing = self._sent_by_uuid.get((app_id, idempotency_uuid))
                if existing is not None:
                    return copy.deepcopy(self._by_id[existing]), False
            now = str(_ms(self._clock()))
            message: dict[str, Any] = {
                "message_id": f"om_{uuid.uuid4().hex}",
                "msg_type": msg_type,
                "create_time": now,
                "update_time": now,
                "deleted": False,
                "updated": False,
                "chat_id": chat_id,
                "sender": {
                    "id": app_id,
                    "id_type": "app_id",
                    "sender_type": "app",
                    "tenant_key": self.tenant_key,
                },
                "body": {"content": content},
                "mentions": [],
            }
            if parent is not None:
                self._attach_reply(message, parent, in_thread=in_thread)
            self._by_id[message["message_id"]] = message
            self._index(message)
            if idempotency_uuid:
                self._sent_by_uuid[(app_id, idempotency_uuid)] = message["message_id"]
            if msg_type == "interactive":
                self._record_card("sent", message)
            return copy.deepcopy(message), True

    def _attach_reply(
        self, message: dict[str, Any], parent: Mapping[str, Any], *, in_thread: bool
    ) -> None:
        root_id = parent.get("root_id") or parent["message_id"]
        message["root_id"] = root_id
        message["parent_id"] = parent["message_id"]
        thread_id = parent.get("thread_id")
        if in_thread and not thread_id:
            root = self._by_id[root_id]
            thread_id = f"omt_{uuid.uuid4().hex[:16]}"
            root["thread_id"] = thread_id
            self._thread_chat[thread_id] = root["chat_id"]
            bisect.insort(
                self._thread_keys.setdefault(thread_id, []),
                (int(root["create_time"]), root["message_id"]),
            )
        if thread_id:
            message["thread_id"] = thread_id

    def patch_content(self, message_id: str, content: str) -> dict[str, Any]:
        with self._lock:
            message = self._require(message_id)
            message["body"] = {"content": content}
            message["update_time"] = str(_ms(self._clock()))
            self._record_card("patched", message)
            return copy.deepcopy(message)

    # ------------------------------------------------------------ cards

    def _record_card(self, kind: str, message: Mapping[str, Any]) -> None:
        self._card_log.append(
            {
                "kind": kind,
                "message_id": message["message_id"],
                "chat_id": message["chat_id"],
                "root_id": message.get("root_id"),
                "at": message["update_time"],
                "card": json.loads(message["body"]["content"]),
            }
        )

    def card_log(self, message_id: str | None = None) -> list[dict[str, Any]]:
        """Every card sent and every patch, in order (what people in the chat saw)."""
        with self._lock:
            return [
                copy.deepcopy(item)
                for item in self._card_log
                if message_id is None or item["message_id"] == message_id
            ]
