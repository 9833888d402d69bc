"""Seeded incident-chat generator for tests, benchmarks and the demo.

Real incident chats mix short text, the odd rich-text post, mentions and threads; code that only
ever sees one of those shapes passes tests and fails in production, so the generator produces all
of them, deterministically for a seed.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Final

SENDERS: Final = (
    ("ou_sim_4f1c2a9e0b7d4c3a", "Alice Chen"),
    ("ou_sim_7a2d9c1e5f3b8e6d", "Bashir Rahman"),
    ("ou_sim_1b8e6d4c3a9f0e2c", "Chiara Rossi"),
    ("ou_sim_9e0b7d4c1f2a6b5e", "Dmitri Volkov"),
    ("ou_sim_3c5a8f1e2d9b7c4a", "Eun-ji Park"),
)

_LINES: Final = (
    "Error rate on checkout-api jumped to 12% since 09:40",
    "Customers report timeouts on payment confirmation",
    "Looking at the gateway dashboards now",
    "Deploy 4812 went out at 09:35, suspect it",
    "Rolling back deploy 4812",
    "Rollback finished, error rate falling",
    "p99 latency back under 300ms",
    "DB connection pool was exhausted on replica 2",
    "Raised the pool limit from 50 to 80 as mitigation",
    "Status page updated",
    "Confirmed recovery with two affected customers",
    "Will write the postmortem draft tomorrow",
    "ok",
    "thanks",
)


def _mention(
    key: str, id_: str, name: str, id_type: str = "open_id", *, tenant_key: str
) -> dict[str, str]:
    return {"key": key, "id": id_, "id_type": id_type, "name": name, "tenant_key": tenant_key}


def message_item(
    message_type: str,
    content: Any,
    *,
    message_id: str,
    chat_id: str,
    create_time: Any,
    update_time: Any = None,
    sender_id: str | None,
    sender_id_type: str = "open_id",
    sender_type: str = "user",
    mentions: Iterable[tuple[str, str, str] | tuple[str, str, str, str]] = (),
    root_id: str | None = None,
    parent_id: str | None = None,
    thread_id: str | None = None,
    deleted: bool = False,
    updated: bool = False,
    tenant_key: str = "sim_tenant",
) -> dict[str, Any]:
    """One history list item (`data.items[]`), in Lark's field names.

    `content` is the message body: a string is taken as it is (already JSON, or deliberately
    not), anything else is JSON-encoded. `mentions` are `(key, id, name)` with an open_id,
    or `(key, id, name, id_type)`. Times are passed
    through unchanged so that tests can build the malformed ones Lark must never send; thread
    fields are present only when given, as in a real listing.
    """
    item: dict[str, Any] = {
        "message_id": message_id,
        "msg_type": message_type,
        "create_time": create_time,
        "update_time": create_time if update_time is None else update_time,
        "deleted": deleted,
        "updated": updated,
        "chat_id": chat_id,
        "sender": {
            "id": sender_id,
            "id_type": sender_id_type,
            "sender_type": sender_type,
            "tenant_key": tenant_key,
        },
        "body": {"content": content if isinstance(content, str) else json.dumps(content)},
        "mentions": [_mention(*mention, tenant_key=tenant_key) for mention in mentions],
    }
    for key, value in (("root_id", root_id), ("parent_id", parent_id), ("thread_id", thread_id)):
        if value is not None:
            item[key] = value
    return item


def _id(prefix: str, *parts: object) -> str:
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).hexdigest()
    return f"{prefix}{digest[:32]}"


def _post_content(rng: random.Random, line: str) -> str:
    title = rng.choice(("Update", "Mitigation", "Findings"))
    return json.dumps(
        {
            "title": title,
            "content": [
                [{"tag": "text", "text": line}],
                [{"tag": "a", "text": "runbook", "href": "https://runbooks.example/checkout"}],
            ],
        },
        ensure_ascii=False,
    )


def make_chat_messages(
    chat_id: str,
    start: datetime,
    count: int,
    *,
    seed: int,
    thread_every: int = 10,
    post_every: int = 7,
    mention_every: int = 5,
    interval_seconds: float = 20.0,
    senders: Iterable[tuple[str, str]] = SENDERS,
    tenant_key: str = "sim_tenant",
) -> list[dict[str, Any]]:
    """`count` list items in creation order, starting at `start` (timezone-aware).

    In each block of `thread_every` messages the first becomes a thread root and the last a reply
    inside that thread (hidden from the chat listing); 0 disables threads. Every `post_every`-th
    message is a rich-text post and every `mention_every`-th mentions someone (0 disables either).
    """
    if start.tzinfo is None:
        raise ValueError("start must be timezone-aware")
    pool = list(senders)
    rng = random.Random(seed)  # noqa: S311 - reproducible fixtures
    base_ms = int(start.timestamp() * 1000)
    items: list[dict[str, Any]] = []
    created = base_ms
    for index in range(count):
        if index:
            step = interval_seconds * 1000 * rng.uniform(0.5, 1.5)
            created += max(1, int(step))
        sender_id, _ = rng.choice(pool)
        line = rng.choice(_LINES)
        mentions: list[dict[str, str]] = []
        if mention_every and index % mention_every == mention_every - 1:
            target_id, target_name = rng.choice(pool)
            mentions.append(
                {
                    "key": "@_user_1",
                    "id": target_id,
                    "id_type": "open_id",
                    "name": target_name,
                    "tenant_key": tenant_key,
                }
            )
            line = f"@_user_1 {line}"
        is_post = bool(post_every) and index % post_every == post_every - 1
        content = _post_content(rng, line) if is_post else json.dumps({"text": line})
        item = message_item(
            "post" if is_post else "text",
            content,
            message_id=_id("om_", chat_id, seed, index),
            chat_id=chat_id,
            create_time=str(created),
            sender_id=sender_id,
            mentions=[(m["key"], m["id"], m["name"]) for m in mentions],
            tenant_key=tenant_key,
        )
        if thread_every and thread_every > 1:
            offset = index % thread_every
            if offset == thread_every - 1:
                root = items[index - offset]
                root.setdefault("thread_id", _id("omt_", chat_id, seed, index - offset))
                item["root_id"] = item["parent_id"] = root["message_id"]
                item["thread_id"] = root["thread_id"]
        items.append(item)
    return items


def user_lines(senders: Iterable[tuple[str, str]] = SENDERS) -> list[dict[str, str]]:
    return [{"kind": "user", "open_id": open_id, "name": name} for open_id, name in senders]


def write_jsonl(path: str | Path, records: Iterable[Mapping[str, Any]]) -> Path:
    """Write messages (and user lines) in the format `lark simulate --chats` reads."""
    target = Path(path)
    with target.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return target
