"""The simulator's store, page tokens and data generator: pure logic, no HTTP."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from timeline_pipeline.lark.simulator.fixtures import (
    SENDERS,
    make_chat_messages,
    user_lines,
    write_jsonl,
)
from timeline_pipeline.lark.simulator.paging import (
    PageCursor,
    PageTokenCodec,
    PageTokenError,
    query_fingerprint,
)
from timeline_pipeline.lark.simulator.store import (
    RECALLED_CONTENT,
    ChatStore,
    StoreError,
    is_thread_reply,
)

START = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
LIST_ITEM_KEYS = {
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


def test_generator_is_deterministic_and_shaped_like_lark_list_items() -> None:
    first = make_chat_messages("oc_1", START, 40, seed=11)
    again = make_chat_messages("oc_1", START, 40, seed=11)
    other = make_chat_messages("oc_1", START, 40, seed=12)

    assert first == again
    assert first != other
    for item in first:
        assert item.keys() >= LIST_ITEM_KEYS
        assert item["create_time"].isdigit() and item["update_time"] == item["create_time"]
        assert item["sender"]["id"] in {open_id for open_id, _ in SENDERS}
        json.loads(item["body"]["content"])
    times = [int(i["create_time"]) for i in first]
    assert times == sorted(times) and times[0] == int(START.timestamp() * 1000)
    assert {i["msg_type"] for i in first} == {"text", "post"}
    assert any(i["mentions"] for i in first)


def test_generator_threads_one_reply_per_block() -> None:
    items = make_chat_messages("oc_1", START, 25, seed=1, thread_every=10)

    replies = [i for i in items if is_thread_reply(i)]
    roots = [i for i in items if i.get("thread_id") and not i.get("root_id")]

    assert [items.index(r) for r in replies] == [9, 19]
    assert [items.index(r) for r in roots] == [0, 10]
    assert replies[0]["root_id"] == roots[0]["message_id"] == replies[0]["parent_id"]
    assert replies[0]["thread_id"] == roots[0]["thread_id"]


def test_generator_refuses_naive_start() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        make_chat_messages("oc_1", datetime(2024, 5, 1), 1, seed=1)


def test_jsonl_round_trip_with_users(tmp_path: Path) -> None:
    messages = make_chat_messages("oc_1", START, 12, seed=2, thread_every=4)
    path = write_jsonl(tmp_path / "chat.jsonl", [*user_lines(), *messages])

    store = ChatStore.load_jsonl(path)

    assert store.messages("oc_1") == messages
    assert store.users([SENDERS[0][0], "ou_nobody"]) == [
        {"open_id": SENDERS[0][0], "name": SENDERS[0][1]}
    ]


def test_bad_lines_are_reported_by_number_without_content(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"kind": "user", "open_id": "ou_1", "name": "A"}\n{"secret text"\n')

    with pytest.raises(StoreError) as caught:
        ChatStore.load_jsonl(path)

    assert "line 2" in str(caught.value)
    assert "secret" not in str(caught.value)


def test_duplicate_and_incomplete_messages_are_refused() -> None:
    item = make_chat_messages("oc_1", START, 1, seed=1)[0]
    store = ChatStore([item])

    with pytest.raises(StoreError, match="duplicate"):
        store.add_message(item)
    with pytest.raises(StoreError, match="create_time"):
        store.add_message({**item, "message_id": "om_x", "create_time": "soon"})
    with pytest.raises(StoreError, match="chat_id"):
        store.add_message({**item, "message_id": "om_y", "chat_id": ""})


def test_chat_listing_pages_by_keyset_in_both_directions() -> None:
    items = make_chat_messages("oc_1", START, 30, seed=5, thread_every=0)
    store = ChatStore(items)
    ids = [i["message_id"] for i in items]

    first = store.list_chat(
        "oc_1", start_ms=None, end_ms=None, descending=False, after=None, limit=12
    )
    second = store.list_chat(
        "oc_1", start_ms=None, end_ms=None, descending=False, after=first.last_key, limit=12
    )
    newest = store.list_chat(
        "oc_1", start_ms=None, end_ms=None, descending=True, after=None, limit=12
    )
    older = store.list_chat(
        "oc_1", start_ms=None, end_ms=None, descending=True, after=newest.last_key, limit=20
    )

    assert [i["message_id"] for i in first.items] == ids[:12] and first.has_more
    assert [i["message_id"] for i in second.items] == ids[12:24]
    assert [i["message_id"] for i in newest.items] == ids[::-1][:12]
    assert [i["message_id"] for i in older.items] == ids[::-1][12:] and not older.has_more


def test_edits_and_recalls_do_not_touch_copies_already_handed_out() -> None:
    items = make_chat_messages("oc_1", START, 3, seed=5, thread_every=0)
    store = ChatStore(items)
    listed = store.messages("oc_1")
    later = START + timedelta(hours=1)

    edited = store.edit_message(items[0]["message_id"], {"text": "fixed"}, at=later)
    recalled = store.recall_message(items[1]["message_id"], at=later)

    assert listed[0]["updated"] is False and listed[1]["deleted"] is False
    assert edited["updated"] is True
    assert edited["update_time"] == str(int(later.timestamp() * 1000))
    assert json.loads(edited["body"]["content"]) == {"text": "fixed"}
    assert recalled["deleted"] is True and recalled["body"]["content"] == RECALLED_CONTENT
    with pytest.raises(KeyError):
        store.edit_message("om_missing", {"text": "x"})


def test_replying_in_thread_turns_the_parent_into_a_thread_root() -> None:
    item = make_chat_messages("oc_1", START, 1, seed=5, thread_every=0)[0]
    store = ChatStore([item])

    reply, created = store.create_bot_message(
        app_id="cli_a",
        chat_id="oc_1",
        msg_type="text",
        content='{"text": "noted"}',
        idempotency_uuid="u",
        parent=item,
        in_thread=True,
    )
    again, created_again = store.create_bot_message(
        app_id="cli_a",
        chat_id="oc_1",
        msg_type="text",
        content='{"text": "noted"}',
        idempotency_uuid="u",
        parent=item,
        in_thread=True,
    )

    root = store.get(item["message_id"])
    assert root is not None and root["thread_id"] == reply["thread_id"]
    assert (created, created_again, again["message_id"]) == (True, False, reply["message_id"])
    in_thread = store.list_thread(reply["thread_id"], descending=False, after=None, limit=10)
    assert [i["message_id"] for i in in_thread.items] == [item["message_id"], reply["message_id"]]
    chat = store.list_chat(
        "oc_1", start_ms=None, end_ms=None, descending=False, after=None, limit=9
    )
    assert [i["message_id"] for i in chat.items] == [item["message_id"]]


def test_page_tokens_are_opaque_signed_and_bound_to_their_query() -> None:
    codec = PageTokenCodec(secret=b"k" * 32)
    query = query_fingerprint("chat", "oc_1", "ByCreateTimeAsc", "1", "2")
    cursor = PageCursor(3, 1714554000123, "om_abc")

    token = codec.encode(cursor, query)

    assert codec.decode(token, query) == cursor
    assert "om_abc" not in token and not token.isdigit()
    with pytest.raises(PageTokenError):
        codec.decode(token, query_fingerprint("chat", "oc_2", "ByCreateTimeAsc", "1", "2"))
    tampered = ("A" if token[0] != "A" else "B") + token[1:]
    with pytest.raises(PageTokenError):
        codec.decode(tampered, query)
    with pytest.raises(PageTokenError):
        PageTokenCodec(secret=b"x" * 32).decode(token, query)
