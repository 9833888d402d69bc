"""The bundled demo chats: Lark's list-item shape, a believable incident, and a stable generator.

Every structural test runs on both chats (`DemoChat.EN`, `DemoChat.ZH`); where the two differ in
size or in the words their chatter uses, `SHAPES` says what each chat must have.
"""

from __future__ import annotations

import bisect
import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from timeline_pipeline.demo_data import (
    CHAT_FILE,
    CHATS,
    EXPECTED_FACTS_FILE,
    NEGATIVE_EXAMPLES_FILE,
    DemoChat,
    chat_path,
    expected_facts_path,
    load_expected_facts,
    load_messages,
    load_negative_examples,
    load_records,
    load_users,
)
from timeline_pipeline.i18n.locales import Locale, locale_of_texts
from timeline_pipeline.lark.normalize import normalize_list_item
from timeline_pipeline.lark.simulator.store import RECALLED_CONTENT, ChatStore
from timeline_pipeline.synthesis.contract import Category
from tools import generate_demo_chat as generate

MAX_TEXT_CHARS = 4000
MINUTE_MS = 60_000
MILLIS = re.compile(r"[0-9]{13}")
PLACEHOLDER = re.compile(r"@_user_[0-9]+")
FIRING_RESOLVED = {
    Locale.EN: ("[FIRING]", "[RESOLVED]"),
    Locale.ZH_CN: ("[告警触发]", "[告警恢复]"),
}
"""How each chat's monitoring bot titles a firing and a resolved alert."""
MESSAGE_KEYS = {
    "message_id",
    "msg_type",
    "create_time",
    "update_time",
    "deleted",
    "updated",
    "chat_id",
    "sender",
    "body",
    "mentions",
}
REPLY_KEYS = {"root_id", "parent_id", "thread_id"}


@dataclass(frozen=True)
class Shape:
    """What one bundled chat must have."""

    messages: tuple[int, int]
    minutes: tuple[int, int]
    replies: int
    chatter: tuple[str, ...]
    short_chars: int
    """A message of at most this many characters is a short acknowledgement (a Chinese
    character says about what an English word does)."""
    short: int
    post_locale: str
    eligible: int
    locale: Locale


SHAPES = {
    DemoChat.EN: Shape(
        messages=(250, 350),
        minutes=(80, 100),
        replies=30,
        chatter=("ack", "+1", "on it", "joining", "thx", "👍"),
        short_chars=12,
        short=45,
        post_locale="en_us",
        eligible=200,
        locale=Locale.EN,
    ),
    DemoChat.ZH: Shape(
        messages=(150, 300),
        minutes=(60, 90),
        replies=20,
        chatter=("收到", "好的我看一下", "在看了", "+1", "辛苦了", "[OK]", "👍"),
        short_chars=6,
        short=40,
        post_locale="zh_cn",
        eligible=150,
        locale=Locale.ZH_CN,
    ),
}


@pytest.fixture(scope="module", params=list(DemoChat), ids=str)
def chat(request: pytest.FixtureRequest) -> DemoChat:
    return DemoChat(request.param)


@pytest.fixture(scope="module")
def shape(chat: DemoChat) -> Shape:
    return SHAPES[chat]


@pytest.fixture(scope="module")
def messages(chat: DemoChat) -> list[dict[str, Any]]:
    return load_messages(chat)


@pytest.fixture(scope="module")
def by_id(messages: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {message["message_id"]: message for message in messages}


def _content(message: dict[str, Any]) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(message["body"]["content"])
    return parsed


def _created(message: dict[str, Any]) -> int:
    return int(message["create_time"])


# --- the file ------------------------------------------------------------------------------------


def test_every_line_is_a_json_object_and_users_come_first(chat: DemoChat) -> None:
    lines = chat_path(chat).read_text(encoding="utf-8").splitlines()
    assert all(line.strip() for line in lines)
    records = [json.loads(line) for line in lines]
    assert all(isinstance(record, dict) for record in records)
    kinds = ["user" if record.get("kind") == "user" else "message" for record in records]
    assert kinds == sorted(kinds, key=lambda kind: kind != "user"), "user lines first"
    assert {record["kind"] for record in records if "kind" in record} == {"user"}


def test_message_count_and_people(
    chat: DemoChat, shape: Shape, messages: list[dict[str, Any]]
) -> None:
    low, high = shape.messages
    assert low <= len(messages) <= high
    users = load_users(chat)
    assert 6 <= len(users) <= 9
    assert len(set(users.values())) == len(users), "distinct names"
    assert all(open_id.startswith("ou_") for open_id in users)
    senders = {m["sender"]["id"] for m in messages if m["sender"]["sender_type"] == "user"}
    mentioned = {mention["id"] for m in messages for mention in m["mentions"]}
    assert senders == set(users), "every person speaks and has a name for the contact lookup"
    assert mentioned <= set(users)


def test_every_message_has_the_list_item_shape(
    chat: DemoChat, messages: list[dict[str, Any]]
) -> None:
    for message in messages:
        where = message["message_id"]
        assert MESSAGE_KEYS <= set(message) <= MESSAGE_KEYS | REPLY_KEYS, where
        assert message["message_id"].startswith("om_"), where
        assert message["chat_id"] == CHATS[chat].chat_id, where
        assert isinstance(message["msg_type"], str), where
        assert MILLIS.fullmatch(message["create_time"]), where
        assert MILLIS.fullmatch(message["update_time"]), where
        assert int(message["update_time"]) >= _created(message), where
        assert isinstance(message["deleted"], bool), where
        assert isinstance(message["updated"], bool), where
        assert isinstance(message["body"]["content"], str), where
        assert isinstance(_content(message), dict), where
        sender = message["sender"]
        assert set(sender) == {"id", "id_type", "sender_type", "tenant_key"}, where
        if sender["sender_type"] == "user":
            assert sender["id_type"] == "open_id", where
            assert sender["id"].startswith("ou_"), where
        else:
            assert sender["sender_type"] == "app", where
            assert sender["id_type"] == "app_id", where
            assert sender["id"].startswith("cli_"), where
        for mention in message["mentions"]:
            assert {"key", "id", "id_type", "name"} <= set(mention), where
            assert re.fullmatch(r"@_user_[0-9]+", mention["key"]), where
            assert isinstance(mention["id"], str), where
            assert mention["id"].startswith("ou_"), where
            assert mention["id_type"] == "open_id", where
        if "thread_id" in message:
            assert message["thread_id"].startswith("omt_"), where


def test_mention_placeholders_match_the_mention_list(messages: list[dict[str, Any]]) -> None:
    with_mentions = 0
    for message in messages:
        if message["deleted"] or message["msg_type"] not in ("text", "post"):
            continue
        used = set(PLACEHOLDER.findall(message["body"]["content"]))
        assert used == {mention["key"] for mention in message["mentions"]}, message["message_id"]
        with_mentions += bool(used)
    assert with_mentions >= 5


def test_message_ids_are_unique(messages: list[dict[str, Any]]) -> None:
    ids = [message["message_id"] for message in messages]
    assert len(ids) == len(set(ids))


def test_the_chats_share_no_message_person_or_chat_id() -> None:
    """Lark's ids are global: two demo runs, one per chat, must never confuse their messages."""
    english, chinese = (load_records(chat) for chat in (DemoChat.EN, DemoChat.ZH))
    ids = [
        {record.get("message_id") or record["open_id"] for record in c} for c in (english, chinese)
    ]
    assert not ids[0] & ids[1]
    assert CHATS[DemoChat.EN].chat_id != CHATS[DemoChat.ZH].chat_id


def test_replies_point_at_existing_earlier_roots(
    shape: Shape, messages: list[dict[str, Any]], by_id: dict[str, dict[str, Any]]
) -> None:
    replies = [message for message in messages if "root_id" in message]
    assert len(replies) >= shape.replies
    for reply in replies:
        root = by_id[reply["root_id"]]
        parent = by_id[reply["parent_id"]]
        assert "root_id" not in root, "a root is not itself a reply"
        assert parent["message_id"] == root["message_id"] or parent["root_id"] == root["message_id"]
        assert _created(root) <= _created(parent) < _created(reply)
        if "thread_id" in reply:
            assert root.get("thread_id") == reply["thread_id"]
    threads = {reply["thread_id"] for reply in replies if "thread_id" in reply}
    plain = [reply for reply in replies if "thread_id" not in reply]
    assert len(threads) >= 3, "investigation threads"
    assert plain, "some quote replies stay in the main chat"
    for message in messages:
        if "thread_id" in message and "root_id" not in message:
            assert any(reply.get("root_id") == message["message_id"] for reply in replies)


def test_times_increase_and_span_the_incident(
    chat: DemoChat, shape: Shape, messages: list[dict[str, Any]]
) -> None:
    created = [_created(message) for message in messages]
    assert created == sorted(created)
    assert len(set(created)) == len(created)
    assert created[0] == int(generate.SPECS[chat].start.timestamp() * 1000)
    low, high = shape.minutes
    assert low * MINUTE_MS <= created[-1] - created[0] <= high * MINUTE_MS


def test_a_burst_of_30_messages_within_2_minutes(messages: list[dict[str, Any]]) -> None:
    created = [_created(message) for message in messages]
    densest = max(
        bisect.bisect_right(created, start + 2 * MINUTE_MS) - index
        for index, start in enumerate(created)
    )
    assert densest >= 30


# --- the special messages ------------------------------------------------------------------------


def test_one_edit_with_a_later_update_time(messages: list[dict[str, Any]]) -> None:
    edited = [message for message in messages if message["updated"]]
    assert len(edited) == 1
    assert int(edited[0]["update_time"]) > _created(edited[0])
    assert not edited[0]["deleted"]
    others = [message for message in messages if not message["updated"] and not message["deleted"]]
    assert all(message["update_time"] == message["create_time"] for message in others)


def test_one_recall_with_the_placeholder_content(messages: list[dict[str, Any]]) -> None:
    recalled = [message for message in messages if message["deleted"]]
    assert len(recalled) == 1
    assert recalled[0]["body"]["content"] == RECALLED_CONTENT
    assert int(recalled[0]["update_time"]) > _created(recalled[0])
    assert recalled[0]["sender"]["sender_type"] == "user"


def test_attachments_posts_and_bots(shape: Shape, messages: list[dict[str, Any]]) -> None:
    types = Counter(message["msg_type"] for message in messages)
    assert types["image"] == 1
    assert types["file"] == 1
    assert types["post"] >= 5
    image = next(m for m in messages if m["msg_type"] == "image")
    assert _content(image)["image_key"].startswith("img_")
    file = next(m for m in messages if m["msg_type"] == "file")
    assert _content(file)["file_key"].startswith("file_")
    assert _content(file)["file_name"].endswith(".csv")

    posts = [_content(m) for m in messages if m["msg_type"] == "post"]
    assert any(shape.post_locale in post for post in posts), "locale-wrapped posts"
    assert any("content" in post for post in posts), "bare posts"

    cards = [m for m in messages if m["msg_type"] == "interactive"]
    assert len(cards) >= 4
    assert all(card["sender"]["id"] == generate.MONITOR_BOT for card in cards)
    titles = [_content(card)["title"] for card in cards]
    firing, resolved = FIRING_RESOLVED[shape.locale]
    assert any(title.startswith(firing) for title in titles)
    assert any(title.startswith(resolved) for title in titles)

    bot_texts = [
        m for m in messages if m["sender"]["sender_type"] == "app" and m["msg_type"] == "text"
    ]
    assert len(bot_texts) >= 3


def test_chatter_sits_next_to_the_facts(shape: Shape, messages: list[dict[str, Any]]) -> None:
    texts = [
        _content(m)["text"].lower()
        for m in messages
        if m["msg_type"] == "text" and not m["deleted"] and m["sender"]["sender_type"] == "user"
    ]
    for word in shape.chatter:
        assert any(text == word.lower() or text.startswith(word.lower()) for text in texts), word
    short = sum(len(text) <= shape.short_chars for text in texts)
    assert short >= shape.short, "plenty of short acknowledgements, not only facts"


def test_the_chat_is_written_in_its_language(shape: Shape, messages: list[dict[str, Any]]) -> None:
    """The Chinese chat reads as Chinese to the workspace's `auto` locale (docs/i18n.md), with
    English kept to names, metrics and commands; the English one as English."""
    texts = [
        _content(m)["text"]
        for m in messages
        if m["msg_type"] == "text" and not m["deleted"] and m["sender"]["sender_type"] == "user"
    ]
    assert locale_of_texts(texts) is shape.locale
    if shape.locale is Locale.ZH_CN:
        latin_only = [text for text in texts if re.fullmatch(r"[ -~]*[A-Za-z]{3,}[ -~]*", text)]
        assert len(latin_only) <= 2, latin_only


# --- through the product ------------------------------------------------------------------------


def test_every_message_normalizes(
    chat: DemoChat, shape: Shape, messages: list[dict[str, Any]]
) -> None:
    normalized = [normalize_list_item(m, max_text_chars=MAX_TEXT_CHARS) for m in messages]
    eligible = [message for message in normalized if message.ai_eligible]
    assert len(eligible) >= shape.eligible
    assert all(message.chat_id == CHATS[chat].chat_id for message in normalized)
    assert not any(PLACEHOLDER.search(message.text) for message in normalized)
    recalled = [message for message in normalized if message.deleted]
    assert len(recalled) == 1
    assert recalled[0].text == ""
    assert not any(message.ai_eligible for message in normalized if message.sender_type == "app")
    cards = [message for message in normalized if message.message_type == "interactive"]
    assert all(message.metadata.get("card_title") for message in cards)


def test_the_local_lark_loads_the_file(chat: DemoChat, messages: list[dict[str, Any]]) -> None:
    store = ChatStore.load_jsonl(chat_path(chat))
    assert store.has_chat(CHATS[chat].chat_id)
    assert len(store.messages(CHATS[chat].chat_id)) == len(messages)
    users = load_users(chat)
    assert {user["name"] for user in store.users(users)} == set(users.values())


def test_records_and_messages_helpers_agree(chat: DemoChat) -> None:
    records = load_records(chat)
    assert len(records) == len(load_messages(chat)) + len(load_users(chat))
    assert chat_path(chat).name == CHATS[chat].chat_file
    assert expected_facts_path(chat).name == CHATS[chat].expected_facts_file
    assert chat_path().name == CHAT_FILE
    assert expected_facts_path().name == EXPECTED_FACTS_FILE


# --- the expected timeline ----------------------------------------------------------------------


def test_expected_facts_cite_eligible_messages(
    chat: DemoChat, messages: list[dict[str, Any]], by_id: dict[str, dict[str, Any]]
) -> None:
    facts = load_expected_facts(chat)
    assert 15 <= len(facts) <= 45
    categories = {Category(fact["category"]) for fact in facts}
    assert categories == set(Category), "every kind of fact appears"
    cited: list[str] = []
    for fact in facts:
        assert set(fact) == {"category", "evidence_message_ids", "title"}
        assert fact["title"].strip()
        assert fact["evidence_message_ids"]
        for message_id in fact["evidence_message_ids"]:
            normalized = normalize_list_item(by_id[message_id], max_text_chars=MAX_TEXT_CHARS)
            assert normalized.ai_eligible, message_id
        cited.extend(fact["evidence_message_ids"])
    assert len(cited) == len(set(cited)), "a message backs one fact"
    order = {message["message_id"]: index for index, message in enumerate(messages)}
    firsts = [min(order[i] for i in fact["evidence_message_ids"]) for fact in facts]
    assert firsts == sorted(firsts), "facts are listed in the order they happened"


def test_negative_examples_name_eligible_messages_with_a_kind_and_a_reason(
    chat: DemoChat, by_id: dict[str, dict[str, Any]]
) -> None:
    negatives = load_negative_examples(chat)
    assert negatives
    facts = load_expected_facts(chat)
    for negative in negatives:
        assert set(negative) == {"category", "message_id", "why"}
        assert Category(negative["category"])
        assert len(negative["why"]) >= 20
        normalized = normalize_list_item(
            by_id[negative["message_id"]], max_text_chars=MAX_TEXT_CHARS
        )
        assert normalized.ai_eligible, negative["message_id"]
        # A fact may cite a negative example only beside the message that carries the fact.
        backing = [f for f in facts if negative["message_id"] in f["evidence_message_ids"]]
        assert all(len(f["evidence_message_ids"]) > 1 for f in backing), negative


# --- the generator ------------------------------------------------------------------------------


def test_regenerating_gives_identical_bytes(tmp_path: Path) -> None:
    assert generate.main(["--out", str(tmp_path)]) == 0
    assert (tmp_path / CHAT_FILE).read_bytes() == chat_path().read_bytes()
    assert (tmp_path / EXPECTED_FACTS_FILE).read_bytes() == expected_facts_path().read_bytes()
    shipped = chat_path().parent / NEGATIVE_EXAMPLES_FILE
    assert (tmp_path / NEGATIVE_EXAMPLES_FILE).read_bytes() == shipped.read_bytes()
    again = tmp_path / "again"
    generate.write(again)
    assert (again / CHAT_FILE).read_bytes() == chat_path().read_bytes()
    chinese = CHATS[DemoChat.ZH]
    for name in (chinese.chat_file, chinese.expected_facts_file, chinese.negative_examples_file):
        assert (tmp_path / name).read_bytes() == (chat_path().parent / name).read_bytes(), name
        assert (again / name).read_bytes() == (tmp_path / name).read_bytes(), name
