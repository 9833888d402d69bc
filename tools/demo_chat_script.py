"""The machinery behind the bundled demo chats: a story written as a script, turned into Lark
history list items, deterministically.

A story is hand-written as one linear script in chat order (thread replies included, at the
moment they were sent); this module only adds what a real export would carry: message and thread
ids, millisecond timestamps with human-looking gaps (from a seeded generator), mention
placeholders, sender envelopes, the edit and the recall. Anchors (`Script.at`) pin the key
moments, so the pacing between them can be tuned without moving the story. Each chat is one
`ChatSpec` (its people, seed, start, story, expected timeline and negative examples); the same
spec always renders to the same bytes (timeline_pipeline/demo_data's docstring says what the
files are).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from timeline_pipeline.demo_data import ChatFiles
from timeline_pipeline.lark.simulator.store import RECALLED_CONTENT

__all__ = [
    "BOTS",
    "DEPLOY_BOT",
    "INCIDENT_BOT",
    "MONITOR_BOT",
    "TENANT_KEY",
    "ChatSpec",
    "Expected",
    "Negative",
    "Script",
    "build",
    "code",
    "expected_facts",
    "link",
    "negative_examples",
    "open_id",
    "render",
    "write",
]

TENANT_KEY: Final = "2e7a91c4d05b38f6"
MONITOR_BOT: Final = "cli_monitor_bot"
DEPLOY_BOT: Final = "cli_deploy_bot"
INCIDENT_BOT: Final = "cli_incident_bot"
BOTS: Final = frozenset({MONITOR_BOT, DEPLOY_BOT, INCIDENT_BOT})

_MENTION: Final = re.compile(r"@([a-z]+)\b")

Expected = tuple[str, tuple[str, ...], str]
"""(category, script labels of the supporting messages, title)"""
Negative = tuple[str, str, str]
"""(category, script label, why the message is no entry of that kind on its own)"""


def _hex(seed: int, *parts: object, length: int) -> str:
    digest = hashlib.sha256(":".join(str(part) for part in (seed, *parts)).encode()).hexdigest()
    return digest[:length]


@dataclass(frozen=True)
class ChatSpec:
    """One bundled chat: who speaks, where its clock starts, its story and its labels."""

    files: ChatFiles
    seed: int
    start: datetime
    people: Mapping[str, str]
    """script key -> display name"""
    story: Callable[[Script], None]
    expected: tuple[Expected, ...]
    negatives: tuple[Negative, ...]


def open_id(spec: ChatSpec, person: str) -> str:
    return f"ou_{_hex(spec.seed, 'person', person, length=32)}"


# --- the script ------------------------------------------------------------------------------


@dataclass
class _Draft:
    label: str
    sender: str
    msg_type: str
    content: dict[str, Any]
    mentions: tuple[str, ...]
    offset_ms: int
    reply_to: str | None
    root: str | None
    in_thread: bool
    edited_after_ms: int | None
    recalled_after_ms: int | None


class _Mentions:
    """Turns `@person` in script text into Lark's `@_user_N` placeholders, in order of use.

    A mention is `@` and a script key of lowercase ASCII letters, ending at a word boundary;
    Han characters are word characters, so Chinese text leaves a space after a mention
    (`@wanglei 看一下`), as Lark's own composer does.
    """

    def __init__(self, people: Mapping[str, str]) -> None:
        self._names = people
        self.people: list[str] = []

    def _key(self, person: str) -> str:
        if person not in self.people:
            self.people.append(person)
        return f"@_user_{self.people.index(person) + 1}"

    def text(self, text: str) -> str:
        def replace(match: re.Match[str]) -> str:
            person = match.group(1)
            return self._key(person) if person in self._names else match.group(0)

        return _MENTION.sub(replace, text)

    def elements(self, text: str) -> list[dict[str, Any]]:
        """A post paragraph: text runs with `at` elements where people are mentioned."""
        elements: list[dict[str, Any]] = []
        position = 0
        for match in _MENTION.finditer(text):
            person = match.group(1)
            if person not in self._names:
                continue
            if match.start() > position:
                elements.append({"tag": "text", "text": text[position : match.start()]})
            elements.append(
                {"tag": "at", "user_id": self._key(person), "user_name": self._names[person]}
            )
            position = match.end()
        if position < len(text):
            elements.append({"tag": "text", "text": text[position:]})
        return elements


Paragraph = str | list[dict[str, Any]]


def link(text: str, href: str) -> dict[str, Any]:
    return {"tag": "a", "text": text, "href": href}


def code(text: str, language: str = "PLAIN_TEXT") -> dict[str, Any]:
    return {"tag": "code_block", "language": language, "text": text}


class Script:
    """Collects drafts in chat order and keeps the clock moving forward."""

    def __init__(self, seed: int, start: datetime, people: Mapping[str, str]) -> None:
        self._seed = seed
        self._start = start
        self._people = people
        self._rng = random.Random(seed)  # noqa: S311 - reproducible demo data, not secrets
        self._clock_ms = 0
        self._pace = (8.0, 30.0)
        self._typing = 0.08
        self.drafts: list[_Draft] = []
        self._labels: dict[str, _Draft] = {}
        self._threaded: set[str] = set()

    # clock

    def at(self, clock: str) -> None:
        """Jump to a UTC wall-clock moment ("08:31:10") of the start's day; never backwards."""
        hours, minutes, seconds = (int(part) for part in clock.split(":"))
        start = self._start
        target = (
            (hours - start.hour) * 3600 + (minutes - start.minute) * 60 + seconds - start.second
        ) * 1000
        if target < self._clock_ms:
            raise ValueError(f"anchor {clock} is behind the clock (+{self._clock_ms / 1000:.0f}s)")
        self._clock_ms = target

    def minutes_since(self, label: str) -> int:
        """Whole minutes from a labelled message to now, for bots that print durations."""
        return (self._clock_ms - self._labels[label].offset_ms) // 60_000

    def duration_since(self, label: str) -> str:
        hours, minutes = divmod(self.minutes_since(label), 60)
        return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m"

    def pace(self, low: float, high: float, *, typing: float = 0.08) -> None:
        """Seconds between messages, plus `typing` seconds per character of the new one."""
        self._pace = (low, high)
        self._typing = typing

    def _tick(self, size: int, gap: float | None) -> int:
        seconds = gap if gap is not None else self._rng.uniform(*self._pace)
        seconds += self._typing * min(size, 400)
        if self.drafts:
            self._clock_ms += max(400, round(seconds * 1000))
        return self._clock_ms

    # messages

    def _add(
        self,
        sender: str,
        msg_type: str,
        content: dict[str, Any],
        *,
        mentions: _Mentions | None = None,
        size: int = 0,
        label: str | None = None,
        reply: str | None = None,
        thread: bool = False,
        gap: float | None = None,
        edited: float | None = None,
        recalled: float | None = None,
    ) -> str:
        name = label or f"m{len(self.drafts) + 1:03d}"
        if name in self._labels:
            raise ValueError(f"duplicate label {name}")
        if reply is not None and reply not in self._labels:
            raise ValueError(f"{name} replies to unknown {reply}")
        parent = self._labels[reply] if reply is not None else None
        root = None if parent is None else (parent.root or parent.label)
        if thread and root is not None:
            self._threaded.add(root)
        draft = _Draft(
            label=name,
            sender=sender,
            msg_type=msg_type,
            content=content,
            mentions=tuple(mentions.people) if mentions else (),
            offset_ms=self._tick(size, gap),
            reply_to=reply,
            root=root,
            in_thread=root in self._threaded,
            edited_after_ms=None if edited is None else round(edited * 1000),
            recalled_after_ms=None if recalled is None else round(recalled * 1000),
        )
        self.drafts.append(draft)
        self._labels[name] = draft
        return name

    def say(
        self,
        who: str,
        text: str,
        *,
        label: str | None = None,
        reply: str | None = None,
        thread: bool = False,
        gap: float | None = None,
        edited: float | None = None,
        recalled: float | None = None,
    ) -> str:
        mentions = _Mentions(self._people)
        content = {"text": mentions.text(text)}
        return self._add(
            who,
            "text",
            content,
            mentions=mentions,
            size=len(text),
            label=label,
            reply=reply,
            thread=thread,
            gap=gap,
            edited=edited,
            recalled=recalled,
        )

    def post(
        self,
        who: str,
        title: str,
        paragraphs: Sequence[Paragraph],
        *,
        locale: str | None = None,
        label: str | None = None,
        reply: str | None = None,
        thread: bool = False,
        gap: float | None = None,
    ) -> str:
        mentions = _Mentions(self._people)
        rows = [
            mentions.elements(paragraph) if isinstance(paragraph, str) else paragraph
            for paragraph in paragraphs
        ]
        body: dict[str, Any] = {"title": title, "content": rows}
        content = {locale: body} if locale else body
        size = len(title) + sum(len(json.dumps(row)) // 2 for row in rows)
        return self._add(
            who,
            "post",
            content,
            mentions=mentions,
            size=size,
            label=label,
            reply=reply,
            thread=thread,
            gap=gap,
        )

    def card(
        self,
        title: str,
        lines: Sequence[str],
        links: Sequence[tuple[str, str]] = (),
        *,
        label: str | None = None,
        gap: float | None = None,
    ) -> str:
        """A monitoring alert card, as the history list renders an interactive message."""
        elements: list[list[dict[str, Any]]] = [[{"tag": "text", "text": line}] for line in lines]
        if links:
            elements.append([link(text, href) for text, href in links])
        content = {"title": title, "elements": elements}
        return self._add(MONITOR_BOT, "interactive", content, label=label, gap=gap)

    def bot(
        self, app: str, text: str, *, label: str | None = None, gap: float | None = None
    ) -> str:
        return self._add(app, "text", {"text": text}, label=label, gap=gap)

    def image(self, who: str, *, label: str | None = None, gap: float | None = None) -> str:
        seed = self._seed
        key = (
            f"img_v3_02hq_{_hex(seed, 'image', len(self.drafts), length=8)}-"
            f"{_hex(seed, 'img', length=4)}g"
        )
        return self._add(who, "image", {"image_key": key}, label=label, gap=gap)

    def file(
        self,
        who: str,
        file_name: str,
        *,
        label: str | None = None,
        reply: str | None = None,
        gap: float | None = None,
    ) -> str:
        seed = self._seed
        key = (
            f"file_v3_00hq_{_hex(seed, 'file', len(self.drafts), length=8)}-"
            f"{_hex(seed, 'f', length=4)}g"
        )
        content = {"file_key": key, "file_name": file_name}
        return self._add(who, "file", content, label=label, reply=reply, gap=gap)


# --- output ----------------------------------------------------------------------------------


def build(spec: ChatSpec) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The chat's list items in creation order, and its script labels resolved to message ids."""
    script = Script(spec.seed, spec.start, spec.people)
    spec.story(script)
    start_ms = int(spec.start.timestamp() * 1000)
    ids = {
        draft.label: f"om_{_hex(spec.seed, 'message', index, length=32)}"
        for index, draft in enumerate(script.drafts)
    }
    threads = {
        draft.root: f"omt_{_hex(spec.seed, 'thread', ids[draft.root], length=16)}"
        for draft in script.drafts
        if draft.in_thread and draft.root is not None
    }
    items = [_item(spec, draft, ids, threads, start_ms) for draft in script.drafts]
    return items, ids


def _sender(spec: ChatSpec, sender: str) -> dict[str, str]:
    if sender in BOTS:
        return {"id": sender, "id_type": "app_id", "sender_type": "app", "tenant_key": TENANT_KEY}
    return {
        "id": open_id(spec, sender),
        "id_type": "open_id",
        "sender_type": "user",
        "tenant_key": TENANT_KEY,
    }


def _item(
    spec: ChatSpec,
    draft: _Draft,
    ids: dict[str, str],
    threads: dict[str, str],
    start_ms: int,
) -> dict[str, Any]:
    created = start_ms + draft.offset_ms
    updated = created
    item: dict[str, Any] = {"message_id": ids[draft.label]}
    if draft.reply_to is not None and draft.root is not None:
        item["root_id"] = ids[draft.root]
        item["parent_id"] = ids[draft.reply_to]
    if draft.in_thread and draft.root is not None:
        item["thread_id"] = threads[draft.root]
    elif draft.label in threads:
        # A thread root carries its thread's id as well.
        item["thread_id"] = threads[draft.label]
    content = json.dumps(draft.content, ensure_ascii=False)
    if draft.edited_after_ms is not None:
        updated = created + draft.edited_after_ms
    if draft.recalled_after_ms is not None:
        updated = created + draft.recalled_after_ms
        content = RECALLED_CONTENT
    item.update(
        {
            "msg_type": draft.msg_type,
            "create_time": str(created),
            "update_time": str(updated),
            "deleted": draft.recalled_after_ms is not None,
            "updated": draft.edited_after_ms is not None,
            "chat_id": spec.files.chat_id,
            "sender": _sender(spec, draft.sender),
            "body": {"content": content},
            "mentions": [
                {
                    "key": f"@_user_{number}",
                    "id": open_id(spec, person),
                    "id_type": "open_id",
                    "name": spec.people[person],
                    "tenant_key": TENANT_KEY,
                }
                for number, person in enumerate(draft.mentions, start=1)
            ],
        }
    )
    return item


def expected_facts(spec: ChatSpec, ids: dict[str, str]) -> list[dict[str, Any]]:
    """The expected timeline with ids, listed in the order the facts first came up in the chat."""
    position = {message_id: index for index, message_id in enumerate(ids.values())}
    facts = [
        {
            "category": category,
            "evidence_message_ids": [ids[label] for label in labels],
            "title": title,
        }
        for category, labels, title in spec.expected
    ]
    return sorted(facts, key=lambda fact: min(position[i] for i in fact["evidence_message_ids"]))


def negative_examples(spec: ChatSpec, ids: dict[str, str]) -> list[dict[str, Any]]:
    """The negative examples with ids, in chat order."""
    position = {message_id: index for index, message_id in enumerate(ids.values())}
    negatives = [
        {"category": category, "message_id": ids[label], "why": why}
        for category, label, why in spec.negatives
    ]
    return sorted(negatives, key=lambda negative: position[negative["message_id"]])


def render(spec: ChatSpec) -> tuple[str, str, str]:
    """The three files' text: the chat JSONL (user lines first), the expected facts JSON and
    the negative examples JSON."""
    items, ids = build(spec)
    users = [
        {"kind": "user", "open_id": open_id(spec, key), "name": name}
        for key, name in spec.people.items()
    ]
    lines = [json.dumps(record, ensure_ascii=False) for record in [*users, *items]]
    facts = json.dumps(expected_facts(spec, ids), ensure_ascii=False, indent=2)
    negatives = json.dumps(negative_examples(spec, ids), ensure_ascii=False, indent=2)
    return "\n".join(lines) + "\n", facts + "\n", negatives + "\n"


def write(spec: ChatSpec, directory: Path) -> tuple[Path, Path, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    files = spec.files
    paths = (
        directory / files.chat_file,
        directory / files.expected_facts_file,
        directory / files.negative_examples_file,
    )
    for path, text in zip(paths, render(spec), strict=True):
        path.write_bytes(text.encode("utf-8"))
    return paths
