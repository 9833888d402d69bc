"""One bad history item is counted and left out; the rest of its page still becomes messages."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from timeline_pipeline.lark.simulator import make_chat_messages
from timeline_pipeline.lark.simulator.faults import malformed_item
from timeline_pipeline.reconcile.pages import normalize_page
from timeline_pipeline.reconcile.planning import MessageKey

START = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)


def test_malformed_and_unsupported_items_are_counted_by_reason() -> None:
    items = make_chat_messages("oc_a", START, 5, seed=1, thread_every=0)
    vote = {**items[1], "message_id": "om_vote", "msg_type": "vote"}
    broken_json = {**items[2], "message_id": "om_broken", "body": {"content": "{nope"}}
    page = normalize_page(
        [items[0], malformed_item("oc_a", 1), vote, broken_json, items[3]],
        max_text_chars=4000,
        app_id=None,
    )
    assert [m.message_id for m in page.messages] == [items[0]["message_id"], items[3]["message_id"]]
    assert page.rejected == {"missing_sender": 1, "unsupported_type": 1, "bad_content_json": 1}


def test_keys_and_threads_of_a_page() -> None:
    items = make_chat_messages("oc_a", START, 20, seed=2, thread_every=10)
    roots = [i for i in items if i.get("thread_id") and not i.get("root_id")]
    page = normalize_page(items, max_text_chars=4000, app_id=None)
    assert page.thread_ids() == [r["thread_id"] for r in roots]
    assert page.keys[0] == MessageKey(int(items[0]["create_time"]), items[0]["message_id"])
    assert len(page.keys) == len(items)


def test_text_is_bounded_by_the_configured_length() -> None:
    item = make_chat_messages("oc_a", START, 1, seed=3, thread_every=0, mention_every=0)[0]
    item["body"] = {"content": json.dumps({"text": "x" * 500})}
    page = normalize_page([item], max_text_chars=100, app_id=None)
    assert len(page.messages[0].text) == 100


def test_a_message_listed_by_both_the_chat_and_its_thread_is_kept_once_newest_form() -> None:
    [root] = make_chat_messages("oc_a", START, 1, seed=4, thread_every=0)
    edited = {**root, "update_time": str(int(root["create_time"]) + 5000), "updated": True}
    page = normalize_page([root], max_text_chars=4000, app_id=None)
    page.extend(normalize_page([edited, root], max_text_chars=4000, app_id=None))
    assert len(page.messages) == 1
    assert page.messages[0].metadata["updated"] is True
