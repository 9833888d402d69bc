"""The bundled incident chat behind `timeline-pipeline demo`.

One realistic incident group chat (checkout latency and 5xx after a payment-gateway config
deploy) in Lark's history list-item shape, one JSON object per line, preceded by one
`{"kind": "user", "open_id", "name"}` line per person for the contact lookup. The local Lark
(`timeline_pipeline.lark.simulator.store.ChatStore.load_jsonl`) loads the file as it is.

`expected_facts.json` is the incident commander's timeline for the chat, in the gold-set format
(`category`, `evidence_message_ids`, `title`). `negative_examples.json` lists messages that must
not become an entry of a kind on their own (`category`, `message_id`, `why`: an acknowledgement
is no decision), which the quality benchmark counts. All three files are produced by
`tools/generate_demo_chat.py` (outside the installed package); edit the script, never the files.

A second chat, in Chinese (`DemoChat.ZH`: a coupon-service release fills its JVM heap and
stalls every order; `incident_chat_zh.jsonl`, `expected_facts_zh.json`,
`negative_examples_zh.json`), is what `timeline-pipeline demo --chat zh` runs on (docs/i18n.md):
the same kinds of mess, written as a Chinese SRE team writes, with English only for service
names, metrics and commands. Every loader takes the chat, English by default.

Times start at a fixed moment (2026-11-29T08:00:00Z; the Chinese chat 2026-12-03T15:30:00Z, late
evening in UTC+8, so it crosses local midnight); the demo shifts them so the chat ends now.
Message texts therefore avoid wall-clock times and speak in relative terms.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from importlib.resources import files
from pathlib import Path
from typing import Any, Final

__all__ = [
    "CHATS",
    "CHAT_FILE",
    "CHAT_ID",
    "EXPECTED_FACTS_FILE",
    "NEGATIVE_EXAMPLES_FILE",
    "ChatFiles",
    "DemoChat",
    "chat_path",
    "expected_facts_path",
    "load_expected_facts",
    "load_messages",
    "load_negative_examples",
    "load_records",
    "load_users",
]

CHAT_ID: Final = "oc_demo_checkout_incident"
CHAT_FILE: Final = "incident_chat.jsonl"
EXPECTED_FACTS_FILE: Final = "expected_facts.json"
NEGATIVE_EXAMPLES_FILE: Final = "negative_examples.json"


class DemoChat(StrEnum):
    """A bundled chat, by the language it is written in."""

    EN = "en"
    ZH = "zh"


@dataclass(frozen=True)
class ChatFiles:
    """A bundled chat's Lark chat id and its three files."""

    chat_id: str
    chat_file: str
    expected_facts_file: str
    negative_examples_file: str


CHATS: Final[dict[DemoChat, ChatFiles]] = {
    DemoChat.EN: ChatFiles(CHAT_ID, CHAT_FILE, EXPECTED_FACTS_FILE, NEGATIVE_EXAMPLES_FILE),
    DemoChat.ZH: ChatFiles(
        "oc_demo_coupon_incident_zh",
        "incident_chat_zh.jsonl",
        "expected_facts_zh.json",
        "negative_examples_zh.json",
    ),
}


def _resource(name: str) -> Path:
    resource = files(__name__).joinpath(name)
    if not isinstance(resource, Path):
        # Only a zipped install gives a non-file resource; the simulator needs a real path.
        raise RuntimeError(f"demo data {name} is not on the file system (zipped install?)")
    return resource


def chat_path(chat: DemoChat = DemoChat.EN) -> Path:
    """The JSONL chat: user lines first, then every message in creation order."""
    return _resource(CHATS[chat].chat_file)


def expected_facts_path(chat: DemoChat = DemoChat.EN) -> Path:
    return _resource(CHATS[chat].expected_facts_file)


def load_records(chat: DemoChat = DemoChat.EN) -> list[dict[str, Any]]:
    """Every line of the chat file as parsed JSON, user lines included."""
    text = chat_path(chat).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def load_messages(chat: DemoChat = DemoChat.EN) -> list[dict[str, Any]]:
    """The chat's messages as Lark history list items, in creation order (no user lines)."""
    return [record for record in load_records(chat) if "kind" not in record]


def load_users(chat: DemoChat = DemoChat.EN) -> dict[str, str]:
    """open_id -> display name for every person in the chat."""
    return {
        str(record["open_id"]): str(record["name"])
        for record in load_records(chat)
        if record.get("kind") == "user"
    }


def load_expected_facts(chat: DemoChat = DemoChat.EN) -> list[dict[str, Any]]:
    """The hand-written timeline: `category`, `evidence_message_ids` and `title` per fact."""
    facts: list[dict[str, Any]] = json.loads(expected_facts_path(chat).read_text(encoding="utf-8"))
    return facts


def load_negative_examples(chat: DemoChat = DemoChat.EN) -> list[dict[str, Any]]:
    """Messages that must not be drafted as an entry of `category` on their own: `category`,
    `message_id` and `why` per example."""
    negatives: list[dict[str, Any]] = json.loads(
        _resource(CHATS[chat].negative_examples_file).read_text(encoding="utf-8")
    )
    return negatives
