"""Specification of Lark message normalization.

Every fixture exists in both delivery shapes (an `im.message.receive_v1` event and an item of the
history list), built from one description, because the two must normalize to the same evidence.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timeline_pipeline.lark.normalize import (
    ELLIPSIS,
    MAX_METADATA_TEXT_CHARS,
    MalformedMessageError,
    NormalizedLarkMessage,
    UnsupportedMessageTypeError,
    normalize_event_message,
    normalize_list_item,
    redact,
    semantic_content,
)
from timeline_pipeline.lark.simulator.events import EventIdentity, message_receive_event
from timeline_pipeline.lark.simulator.fixtures import message_item

APP_ID = "cli_timeline_bot"
LIMIT = 2000
CREATED_MS = 1717243200000  # 2024-06-01T12:00:00Z
CREATED_AT = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)

Shape = Callable[..., dict[str, Any]]

ALLOWED_METADATA_KEYS = {
    "chat_id",
    "thread_id",
    "root_id",
    "parent_id",
    "message_type",
    "mention_open_ids",
    "image_key",
    "file_key",
    "file_name",
    "duration",
    "shared_chat_id",
    "card_title",
    "deleted",
    "updated",
    "recalled_at",
}


@dataclass(frozen=True)
class Mention:
    key: str
    open_id: str
    name: str
    id_type: str = "open_id"


ALICE = Mention("@_user_1", "ou_alice", "Alice")
BOB = Mention("@_user_2", "ou_bob", "Bob")


IDENTITY = EventIdentity(tenant_key="tenant_1")


def list_item(
    message_type: str,
    content: Any,
    *,
    mentions: tuple[Mention, ...] = (),
    sender_open_id: str | None = "ou_carol",
    sender_id_type: str = "open_id",
    message_id: str = "om_1",
    create_time: Any = str(CREATED_MS),
    update_time: Any = str(CREATED_MS),
    **fields: Any,
) -> dict[str, Any]:
    """One element of `data.items` from the history list, built by the simulator."""
    return message_item(
        message_type,
        content,
        message_id=message_id,
        chat_id="oc_incident",
        create_time=create_time,
        update_time=update_time,
        sender_id=sender_open_id,
        sender_id_type=sender_id_type,
        mentions=[(m.key, m.open_id, m.name, m.id_type) for m in mentions],
        tenant_key="tenant_1",
        **fields,
    )


def event_payload(
    message_type: str, content: Any, *, chat_type: str = "group", **fields: Any
) -> dict[str, Any]:
    """The `event` object of a receive_v1 callback for the same message, as the simulator
    derives it from the list item."""
    item = list_item(message_type, content, **fields)
    event: dict[str, Any] = message_receive_event(item, IDENTITY, chat_type=chat_type)["event"]
    return event


def from_event(payload: Mapping[str, Any], **kwargs: Any) -> NormalizedLarkMessage:
    return normalize_event_message(payload, max_text_chars=kwargs.pop("limit", LIMIT), **kwargs)


def from_list(payload: Mapping[str, Any], **kwargs: Any) -> NormalizedLarkMessage:
    return normalize_list_item(payload, max_text_chars=kwargs.pop("limit", LIMIT), **kwargs)


SHAPES = [
    pytest.param((event_payload, from_event), id="event"),
    pytest.param((list_item, from_list), id="list"),
]


@dataclass(frozen=True)
class TypeCase:
    message_type: str
    content: Any
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    ai_eligible: bool = False
    mentions: tuple[Mention, ...] = ()


POST_BODY = {
    "title": "DB failover",
    "content": [
        [
            {"tag": "text", "text": "Primary is down, ", "style": ["bold"]},
            {"tag": "at", "user_id": "@_user_1", "user_name": ""},
            {"tag": "text", "text": " please "},
            {"tag": "a", "href": "https://status.example.com", "text": "check status"},
        ],
        [{"tag": "img", "image_key": "img_v2_graph"}],
        [{"tag": "code_block", "language": "SQL", "text": "select 1;"}],
        [{"tag": "emotion", "emoji_type": "THUMBSUP"}, {"tag": "hr"}],
        [{"tag": "media", "file_key": "file_v2_clip", "image_key": "img_v2_thumb"}],
    ],
}
POST_TEXT = "DB failover\nPrimary is down, @Alice please check status\nselect 1;\n:THUMBSUP:"

TYPE_CASES = [
    pytest.param(
        TypeCase(
            "text",
            {"text": "@_user_1   primary DB is  down\n\n@_all heads up"},
            "@Alice primary DB is down\n@all heads up",
            {"mention_open_ids": ["ou_alice"]},
            ai_eligible=True,
            mentions=(ALICE,),
        ),
        id="text",
    ),
    pytest.param(
        TypeCase(
            "post",
            POST_BODY,
            POST_TEXT,
            {"mention_open_ids": ["ou_alice"]},
            ai_eligible=True,
            mentions=(ALICE,),
        ),
        id="post-unwrapped",
    ),
    pytest.param(
        TypeCase(
            "post",
            {"zh_cn": POST_BODY},
            POST_TEXT,
            {"mention_open_ids": ["ou_alice"]},
            ai_eligible=True,
            mentions=(ALICE,),
        ),
        id="post-locale-wrapped",
    ),
    pytest.param(
        TypeCase("image", {"image_key": "img_v2_abc"}, "", {"image_key": "img_v2_abc"}),
        id="image",
    ),
    pytest.param(
        TypeCase(
            "file",
            {"file_key": "file_v2_abc", "file_name": "postmortem draft.pdf"},
            "",
            {"file_key": "file_v2_abc", "file_name": "postmortem draft.pdf"},
        ),
        id="file",
    ),
    pytest.param(
        TypeCase(
            "media",
            {
                "file_key": "file_v2_vid",
                "image_key": "img_v2_thumb",
                "file_name": "repro.mp4",
                "duration": 2000,
            },
            "",
            {"file_key": "file_v2_vid", "file_name": "repro.mp4", "duration": 2000},
        ),
        id="media",
    ),
    pytest.param(
        TypeCase(
            "audio",
            {"file_key": "file_v2_voice", "duration": 3500},
            "",
            {"file_key": "file_v2_voice", "duration": 3500},
        ),
        id="audio",
    ),
    pytest.param(
        TypeCase("sticker", {"file_key": "file_v2_sticker"}, "", {"file_key": "file_v2_sticker"}),
        id="sticker",
    ),
    pytest.param(
        TypeCase(
            "interactive",
            {
                "header": {"title": {"tag": "plain_text", "content": "Incident overview"}},
                "elements": [{"tag": "div", "text": {"content": "secret-ish details"}}],
            },
            "",
            {"card_title": "Incident overview"},
        ),
        id="interactive",
    ),
    pytest.param(
        TypeCase(
            "system",
            {"template": "{from_user} invited {to_chatters}", "from_user": ["Carol"]},
            "",
        ),
        id="system",
    ),
    pytest.param(
        TypeCase("share_chat", {"chat_id": "oc_war_room"}, "", {"shared_chat_id": "oc_war_room"}),
        id="share_chat",
    ),
    pytest.param(
        TypeCase("merge_forward", "Merged and Forwarded Message", ""),
        id="merge_forward",
    ),
]


def identity_metadata(message_type: str) -> dict[str, Any]:
    return {
        "chat_id": "oc_incident",
        "thread_id": None,
        "root_id": None,
        "parent_id": None,
        "message_type": message_type,
        "deleted": False,
        "updated": False,
    }


def paired(case: TypeCase, **kwargs: Any) -> tuple[NormalizedLarkMessage, NormalizedLarkMessage]:
    event = from_event(event_payload(case.message_type, case.content, mentions=case.mentions))
    listed = from_list(list_item(case.message_type, case.content, mentions=case.mentions, **kwargs))
    return event, listed


# --- every type -----------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("case", TYPE_CASES)
def test_each_supported_type_yields_its_text_metadata_and_eligibility(
    case: TypeCase, shape: tuple[Shape, Callable[..., NormalizedLarkMessage]]
) -> None:
    build, normalize = shape

    message = normalize(build(case.message_type, case.content, mentions=case.mentions))

    assert message.message_id == "om_1"
    assert message.chat_id == "oc_incident"
    assert message.message_type == case.message_type
    assert message.sender_id == "ou_carol"
    assert message.sender_type == "user"
    assert message.text == case.text
    assert message.metadata == {**identity_metadata(case.message_type), **case.metadata}
    assert message.ai_eligible is case.ai_eligible
    assert message.deleted is False
    assert message.created_at == CREATED_AT
    assert message.updated_at == CREATED_AT


@pytest.mark.parametrize("case", TYPE_CASES)
def test_event_and_list_shapes_of_one_message_are_equal_apart_from_chat_type(
    case: TypeCase,
) -> None:
    event, listed = paired(case)

    assert event.chat_type == "group"
    assert listed.chat_type is None
    assert event.model_copy(update={"chat_type": None}) == listed


@pytest.mark.parametrize("case", TYPE_CASES)
def test_event_and_list_shapes_hash_to_the_same_semantic_content(case: TypeCase) -> None:
    event, listed = paired(case)

    assert semantic_content(event) == semantic_content(listed)


@pytest.mark.parametrize("case", TYPE_CASES)
def test_metadata_is_whitelisted_and_json_serializable(case: TypeCase) -> None:
    for message in paired(case):
        assert set(message.metadata) <= ALLOWED_METADATA_KEYS
        json.dumps(message.metadata)
        assert "content" not in json.dumps(message.metadata)


def test_threaded_replies_keep_thread_root_and_parent_ids_in_fields_and_metadata() -> None:
    ids = {"thread_id": "omt_thread", "root_id": "om_root", "parent_id": "om_parent"}

    event = from_event(
        event_payload(
            "text",
            {"text": "ack"},
            thread_id="omt_thread",
            root_id="om_root",
            parent_id="om_parent",
        )
    )
    listed = from_list(
        list_item(
            "text",
            {"text": "ack"},
            thread_id="omt_thread",
            root_id="om_root",
            parent_id="om_parent",
        )
    )

    for message in (event, listed):
        assert (message.thread_id, message.root_id, message.parent_id) == tuple(ids.values())
        assert {key: message.metadata[key] for key in ids} == ids
    assert event.model_copy(update={"chat_type": None}) == listed


@pytest.mark.parametrize("chat_type", ["group", "topic_group", "p2p"])
def test_event_chat_type_is_recorded_as_sent(chat_type: str) -> None:
    message = from_event(event_payload("text", {"text": "hi"}, chat_type=chat_type))

    assert message.chat_type == chat_type


# --- unsupported types ----------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(
    "message_type", ["share_user", "location", "vote", "todo", "folder", "calendar"]
)
def test_unsupported_types_raise_a_countable_error_naming_the_type(
    message_type: str, shape: tuple[Shape, Callable[..., NormalizedLarkMessage]]
) -> None:
    build, normalize = shape

    with pytest.raises(UnsupportedMessageTypeError) as caught:
        normalize(build(message_type, {"user_id": "ou_x"}))

    assert caught.value.reason == "unsupported_type"
    assert caught.value.message_type == message_type
    assert caught.value.message_id == "om_1"
    assert isinstance(caught.value, MalformedMessageError)


# --- mentions -------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(
    ("text", "mentions", "expected_text", "expected_ids"),
    [
        pytest.param("@_user_1 look", (ALICE,), "@Alice look", ["ou_alice"], id="one"),
        pytest.param(
            "@_user_2 and @_user_1",
            (ALICE, BOB),
            "@Bob and @Alice",
            ["ou_alice", "ou_bob"],
            id="order-of-mentions-list",
        ),
        pytest.param("@_all rollback now", (), "@all rollback now", [], id="everyone"),
        pytest.param("@_user_9 hi", (ALICE,), "@_user_9 hi", ["ou_alice"], id="unresolved-kept"),
        pytest.param(
            "@_user_1 @_user_12",
            (ALICE, Mention("@_user_12", "ou_twelve", "Twelve")),
            "@Alice @Twelve",
            ["ou_alice", "ou_twelve"],
            id="longer-key-not-split",
        ),
        pytest.param(
            "@_user_1 @_user_2",
            (ALICE, Mention("@_user_2", "ou_alice", "Alice")),
            "@Alice @Alice",
            ["ou_alice"],
            id="duplicate-person-listed-once",
        ),
        pytest.param(
            "@_user_1 hi",
            (Mention("@_user_1", "ou_anon", ""),),
            "@_user_1 hi",
            ["ou_anon"],
            id="nameless-mention-keeps-placeholder",
        ),
    ],
)
def test_text_mentions_resolve_to_names_and_record_open_ids(
    text: str,
    mentions: tuple[Mention, ...],
    expected_text: str,
    expected_ids: list[str],
    shape: tuple[Shape, Callable[..., NormalizedLarkMessage]],
) -> None:
    build, normalize = shape

    message = normalize(build("text", {"text": text}, mentions=mentions))

    assert message.text == expected_text
    assert message.metadata.get("mention_open_ids", []) == expected_ids


def test_an_at_all_mention_listed_by_history_is_not_an_open_id() -> None:
    item = list_item("text", {"text": "@_all go"}, mentions=(Mention("@_all", "all", "Everyone"),))

    message = from_list(item)

    assert message.text == "@all go"
    assert "mention_open_ids" not in message.metadata


def test_mentions_identified_by_something_other_than_open_id_are_not_recorded() -> None:
    al = Mention("@_user_1", "u_123", "Al", id_type="user_id")
    item = list_item("text", {"text": "@_user_1 hi"}, mentions=(al,))

    message = from_list(item)

    assert message.text == "@Al hi"
    assert "mention_open_ids" not in message.metadata


# --- post -----------------------------------------------------------------------------------


def post(title: str, *paragraphs: list[dict[str, Any]]) -> dict[str, Any]:
    return {"title": title, "content": list(paragraphs)}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param(post("T", [{"tag": "text", "text": "body"}]), "T\nbody", id="unwrapped"),
        pytest.param(
            {"zh_cn": post("标题", [{"tag": "text", "text": "正文"}])}, "标题\n正文", id="zh_cn"
        ),
        pytest.param(
            {
                "zh_cn": post("标题", [{"tag": "text", "text": "正文"}]),
                "en_us": post("Title", [{"tag": "text", "text": "body"}]),
            },
            "Title\nbody",
            id="en_us-preferred",
        ),
        pytest.param(
            {"ja_jp": post("件名", [{"tag": "text", "text": "本文"}])},
            "件名\n本文",
            id="any-locale",
        ),
        pytest.param(post("", [{"tag": "text", "text": "no title"}]), "no title", id="no-title"),
        pytest.param({"content": [[{"tag": "text", "text": "x"}]]}, "x", id="title-absent"),
        pytest.param(
            post("T", [{"tag": "a", "href": "https://x.example", "text": ""}]),
            "T\nhttps://x.example",
            id="link-without-text-uses-href",
        ),
        pytest.param(
            post("T", [{"tag": "at", "user_id": "ou_dave", "user_name": "Dave"}]),
            "T\n@Dave",
            id="at-with-user-name",
        ),
        pytest.param(post("T", [{"tag": "at", "user_id": "all"}]), "T\n@all", id="at-all"),
        pytest.param(
            post("T", [{"tag": "at", "user_id": "@_user_1", "user_name": ""}]),
            "T\n@Alice",
            id="at-placeholder-resolved",
        ),
        pytest.param(post("T", [{"tag": "at"}]), "T", id="at-without-anyone"),
        pytest.param(
            post("T", [{"tag": "img", "image_key": "k"}], [{"tag": "hr"}]), "T", id="img-hr-silent"
        ),
        pytest.param(
            post("T", [{"tag": "emotion", "emoji_type": "SMILE"}]), "T\n:SMILE:", id="emotion"
        ),
        pytest.param(
            post("T", [{"tag": "code_block", "language": "GO", "text": "x  :=  1\n\ny"}]),
            "T\nx := 1\ny",
            id="code-block-whitespace-collapsed",
        ),
        pytest.param(
            post("T", [{"tag": "future_tag", "text": "?"}]), "T", id="unknown-tag-ignored"
        ),
        pytest.param(post("Only title"), "Only title", id="title-only"),
    ],
)
def test_post_text_is_title_then_each_text_bearing_tag(
    content: dict[str, Any],
    expected: str,
    shape: tuple[Shape, Callable[..., NormalizedLarkMessage]],
) -> None:
    build, normalize = shape

    message = normalize(build("post", content, mentions=(ALICE,)))

    assert message.text == expected
    assert message.ai_eligible is True


def test_a_post_of_only_pictures_is_stored_but_not_ai_eligible() -> None:
    message = from_event(event_payload("post", post("", [{"tag": "img", "image_key": "k"}])))

    assert message.text == ""
    assert message.ai_eligible is False


# --- interactive cards ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("card", "title"),
    [
        pytest.param({"header": {"title": {"content": "Overview"}}}, "Overview", id="header"),
        pytest.param({"title": "From history", "elements": [[]]}, "From history", id="title"),
        pytest.param(
            {"json_card": json.dumps({"header": {"title": {"content": "Raw"}}}), "card_schema": 2},
            "Raw",
            id="raw-card-content",
        ),
        pytest.param({"json_card": "{not json"}, None, id="broken-raw-card"),
        pytest.param({"header": {"title": ["odd"]}}, None, id="odd-header"),
        pytest.param({"elements": []}, None, id="no-title"),
    ],
)
def test_cards_keep_only_a_title_and_never_reach_the_model(
    card: dict[str, Any], title: str | None
) -> None:
    event, listed = paired(TypeCase("interactive", card, ""))

    for message in (event, listed):
        assert message.metadata.get("card_title") == title
        assert message.text == ""
        assert message.ai_eligible is False


# --- bot and self messages ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sender_type", "sender_id", "id_type", "eligible"),
    [
        pytest.param("app", APP_ID, "app_id", False, id="own-bot"),
        pytest.param("app", "cli_other_bot", "app_id", False, id="other-bot"),
        pytest.param("user", APP_ID, "open_id", False, id="sender-id-equals-app-id"),
        pytest.param("anonymous", "ou_anon", "open_id", False, id="anonymous"),
        pytest.param("user", "ou_carol", "open_id", True, id="person"),
    ],
)
def test_history_messages_from_apps_are_stored_but_never_ai_eligible(
    sender_type: str, sender_id: str, id_type: str, eligible: bool
) -> None:
    item = list_item(
        "text",
        {"text": "Timeline updated"},
        sender_type=sender_type,
        sender_open_id=sender_id,
        sender_id_type=id_type,
    )

    message = from_list(item, app_id=APP_ID)

    assert message.sender_type == sender_type
    assert message.sender_id == sender_id
    assert message.ai_eligible is eligible


def test_an_event_whose_sender_is_our_app_id_is_not_ai_eligible() -> None:
    payload = event_payload("text", {"text": "hi"}, sender_open_id=APP_ID)

    assert from_event(payload, app_id=APP_ID).ai_eligible is False
    assert from_event(payload, app_id="cli_someone_else").ai_eligible is True


def test_unknown_sender_types_are_stored_as_unknown_and_not_eligible() -> None:
    message = from_event(event_payload("text", {"text": "hi"}, sender_type="robot"))

    assert message.sender_type == "unknown"
    assert message.ai_eligible is False


def test_system_messages_may_have_no_sender_id() -> None:
    item = list_item("system", {"template": "x"}, sender_open_id="", sender_type="user")

    message = from_list(item)

    assert message.sender_id is None
    assert message.ai_eligible is False


# --- whitespace and bounds ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param("  a \t b  ", "a b", id="collapse-and-strip"),
        pytest.param("a\n\n\n b \r\nc", "a\nb\nc", id="blank-lines-dropped"),
        pytest.param("a\u00a0\u3000b", "a b", id="unicode-spaces"),
        pytest.param("a\x00b\x1bc", "a b c", id="control-characters"),
        pytest.param("x\ud800y", "x?y", id="lone-surrogate-replaced"),
        pytest.param("   ", "", id="only-whitespace"),
    ],
)
def test_text_whitespace_is_normalized(raw: str, expected: str) -> None:
    event, listed = paired(TypeCase("text", {"text": raw}, expected))

    assert event.text == listed.text == expected
    assert event.ai_eligible is bool(expected)
    semantic_content(event).encode("utf-8")


@pytest.mark.parametrize(
    ("raw", "limit", "expected"),
    [
        pytest.param("abcdef", 6, "abcdef", id="exactly-at-bound"),
        pytest.param("abcdefg", 6, "abcde" + ELLIPSIS, id="cut-with-ellipsis"),
        pytest.param("abcd efgh", 6, "abcd" + ELLIPSIS, id="no-space-before-ellipsis"),
        pytest.param("abc", 1, ELLIPSIS, id="bound-of-one"),
        pytest.param("ab", 1, ELLIPSIS, id="bound-of-one-cuts-everything"),
        pytest.param("a", 1, "a", id="one-fits"),
    ],
)
def test_text_is_bounded_to_max_text_chars_including_the_ellipsis(
    raw: str, limit: int, expected: str
) -> None:
    message = from_event(event_payload("text", {"text": raw}), limit=limit)

    assert message.text == expected
    assert len(message.text) <= limit


def test_attachment_names_are_bounded_independently_of_the_text_bound() -> None:
    long_name = "n" * (MAX_METADATA_TEXT_CHARS + 50)

    message = from_event(event_payload("file", {"file_key": "file_1", "file_name": long_name}))

    assert len(message.metadata["file_name"]) == MAX_METADATA_TEXT_CHARS
    assert message.metadata["file_name"].endswith(ELLIPSIS)


@pytest.mark.parametrize("limit", [0, -1])
def test_a_non_positive_bound_is_a_programming_error(limit: int) -> None:
    with pytest.raises(ValueError, match="max_text_chars") as caught:
        from_event(event_payload("text", {"text": "x"}), limit=limit)

    assert not isinstance(caught.value, MalformedMessageError)


@given(text=st.text(max_size=300), limit=st.integers(min_value=1, max_value=120))
def test_normalized_text_never_exceeds_the_bound(text: str, limit: int) -> None:
    message = from_event(event_payload("text", {"text": text}), limit=limit)

    assert len(message.text) <= limit
    assert message.text == message.text.strip()


# --- times ----------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(
    ("create_time", "update_time", "created", "updated"),
    [
        pytest.param(str(CREATED_MS), None, CREATED_AT, CREATED_AT, id="update-absent"),
        pytest.param(CREATED_MS, "", CREATED_AT, CREATED_AT, id="int-create-blank-update"),
        pytest.param(
            str(CREATED_MS),
            str(CREATED_MS + 90_500),
            CREATED_AT,
            CREATED_AT + timedelta(seconds=90.5),
            id="edited-later",
        ),
        pytest.param(
            str(CREATED_MS), str(CREATED_MS - 5), CREATED_AT, CREATED_AT, id="update-before-create"
        ),
    ],
)
def test_times_are_millisecond_epochs_converted_to_aware_utc(
    create_time: Any,
    update_time: Any,
    created: datetime,
    updated: datetime,
    shape: tuple[Shape, Callable[..., NormalizedLarkMessage]],
) -> None:
    build, normalize = shape

    message = normalize(
        build("text", {"text": "x"}, create_time=create_time, update_time=update_time)
    )

    assert message.created_at == created
    assert message.updated_at == updated
    assert message.created_at.tzinfo is UTC


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(
    ("create_time", "reason"),
    [
        pytest.param(None, "missing_create_time", id="missing"),
        pytest.param("", "missing_create_time", id="blank"),
        pytest.param("-1717243200000", "bad_create_time", id="negative-string"),
        pytest.param(-5, "bad_create_time", id="negative-int"),
        pytest.param("1717243200", "bad_create_time", id="seconds-not-millis"),
        pytest.param("99999999999999", "bad_create_time", id="year-5138"),
        pytest.param("9" * 40, "bad_create_time", id="absurdly-long"),
        pytest.param("1717243200000.5", "bad_create_time", id="fractional-string"),
        pytest.param(1717243200000.0, "bad_create_time", id="float"),
        pytest.param(True, "bad_create_time", id="boolean"),
        pytest.param(" 1717243200000", "bad_create_time", id="padded"),
        pytest.param("١٧١٧٢٤٣٢٠٠٠٠٠", "bad_create_time", id="non-ascii-digits"),
        pytest.param({"ms": 1}, "bad_create_time", id="object"),
    ],
)
def test_unusable_create_times_are_rejected(
    create_time: Any, reason: str, shape: tuple[Shape, Callable[..., NormalizedLarkMessage]]
) -> None:
    build, normalize = shape

    with pytest.raises(MalformedMessageError) as caught:
        normalize(build("text", {"text": "x"}, create_time=create_time))

    assert caught.value.reason == reason


@pytest.mark.parametrize("update_time", ["soon", -1, "12", [CREATED_MS]])
def test_unusable_update_times_are_rejected(update_time: Any) -> None:
    with pytest.raises(MalformedMessageError) as caught:
        from_list(list_item("text", {"text": "x"}, update_time=update_time))

    assert caught.value.reason == "bad_update_time"


# --- malformed payloads ---------------------------------------------------------------------


def _set(path: tuple[str, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(payload: dict[str, Any]) -> None:
        target = payload
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutate


def _drop(path: tuple[str, ...]) -> Callable[[dict[str, Any]], None]:
    def mutate(payload: dict[str, Any]) -> None:
        target = payload
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return mutate


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        pytest.param(_drop(("message",)), "missing_message", id="no-message"),
        pytest.param(_set(("message",), []), "bad_message", id="message-not-object"),
        pytest.param(_drop(("message", "message_id")), "missing_message_id", id="no-id"),
        pytest.param(_set(("message", "message_id"), "  "), "bad_message_id", id="blank-id"),
        pytest.param(_set(("message", "message_id"), ""), "missing_message_id", id="empty-id"),
        pytest.param(_set(("message", "message_id"), 7), "bad_message_id", id="numeric-id"),
        pytest.param(_set(("message", "message_id"), "om/1"), "bad_message_id", id="slash-in-id"),
        pytest.param(_drop(("message", "chat_id")), "missing_chat_id", id="no-chat"),
        pytest.param(_set(("message", "thread_id"), 1), "bad_thread_id", id="bad-thread"),
        pytest.param(_set(("message", "root_id"), {}), "bad_root_id", id="bad-root"),
        pytest.param(_set(("message", "parent_id"), [1]), "bad_parent_id", id="bad-parent"),
        pytest.param(_set(("message", "chat_type"), 3), "bad_chat_type", id="bad-chat-type"),
        pytest.param(
            _drop(("message", "message_type")), "missing_message_type", id="no-message-type"
        ),
        pytest.param(
            _set(("message", "message_type"), ["text"]), "bad_message_type", id="bad-type"
        ),
        pytest.param(_drop(("message", "content")), "missing_content", id="no-content"),
        pytest.param(_set(("message", "content"), {"text": "x"}), "bad_content", id="content-obj"),
        pytest.param(_set(("message", "content"), "{"), "bad_content_json", id="content-not-json"),
        pytest.param(_set(("message", "content"), "[1]"), "bad_content_json", id="content-list"),
        pytest.param(_set(("message", "content"), "{}"), "missing_content_text", id="no-text"),
        pytest.param(
            _set(("message", "content"), '{"text": 5}'), "bad_content_text", id="text-not-str"
        ),
        pytest.param(_set(("message", "mentions"), {}), "bad_mentions", id="mentions-object"),
        pytest.param(_set(("message", "mentions"), [1]), "bad_mentions", id="mention-not-obj"),
        pytest.param(
            _set(("message", "mentions"), [{"id": {}}]), "bad_mentions", id="mention-no-key"
        ),
        pytest.param(
            _set(("message", "mentions"), [{"key": "@_user_1", "id": "ou_x"}]),
            "bad_mentions",
            id="event-mention-id-must-be-object",
        ),
        pytest.param(_set(("sender",), "ou_x"), "bad_sender", id="sender-not-object"),
        pytest.param(_drop(("sender",)), "missing_sender", id="no-sender"),
        pytest.param(_set(("sender", "sender_id"), []), "bad_sender_id", id="sender-id-list"),
        pytest.param(
            _set(("sender", "sender_id", "open_id"), None), "missing_sender_id", id="no-open-id"
        ),
        pytest.param(
            _set(("sender", "sender_id", "open_id"), 42), "bad_sender_id", id="numeric-open-id"
        ),
        pytest.param(_set(("sender", "sender_type"), 1), "bad_sender_type", id="bad-sender-type"),
    ],
)
def test_malformed_events_are_rejected_with_a_precise_reason(
    mutate: Callable[[dict[str, Any]], None], reason: str
) -> None:
    payload = event_payload("text", {"text": "hi"})
    mutate(payload)

    with pytest.raises(MalformedMessageError) as caught:
        from_event(payload)

    assert caught.value.reason == reason


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        pytest.param(_drop(("message_id",)), "missing_message_id", id="no-id"),
        pytest.param(_drop(("chat_id",)), "missing_chat_id", id="no-chat"),
        pytest.param(_drop(("msg_type",)), "missing_message_type", id="no-msg-type"),
        pytest.param(_set(("msg_type",), 3), "bad_message_type", id="bad-msg-type"),
        pytest.param(_set(("body",), "x"), "bad_body", id="body-not-object"),
        pytest.param(_drop(("body",)), "missing_content", id="no-body"),
        pytest.param(_set(("deleted",), "false"), "bad_deleted", id="deleted-not-bool"),
        pytest.param(_set(("updated",), 1), "bad_updated", id="updated-not-bool"),
        pytest.param(_drop(("sender",)), "missing_sender", id="no-sender"),
        pytest.param(_set(("sender", "id"), ["ou"]), "bad_sender_id", id="sender-id-list"),
        pytest.param(_set(("sender", "id"), ""), "missing_sender_id", id="blank-user-sender"),
        pytest.param(
            _set(("sender", "id_type"), "user_id"),
            "unexpected_sender_id_type",
            id="user-not-by-open-id",
        ),
        pytest.param(
            _set(("mentions",), [{"key": "@_user_1", "id": {"open_id": "ou"}}]),
            "bad_mentions",
            id="list-mention-id-must-be-string",
        ),
    ],
)
def test_malformed_list_items_are_rejected_with_a_precise_reason(
    mutate: Callable[[dict[str, Any]], None], reason: str
) -> None:
    item = list_item("text", {"text": "hi"})
    mutate(item)

    with pytest.raises(MalformedMessageError) as caught:
        from_list(item)

    assert caught.value.reason == reason


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(
    ("message_type", "content", "reason"),
    [
        pytest.param("image", {}, "missing_content_image_key", id="image-without-key"),
        pytest.param("image", {"image_key": 1}, "bad_content_image_key", id="image-key-int"),
        pytest.param("file", {"file_name": "a"}, "missing_content_file_key", id="file-no-key"),
        pytest.param(
            "file", {"file_key": "f", "file_name": 3}, "bad_content_file_name", id="file-name-int"
        ),
        pytest.param(
            "media",
            {"file_key": "f", "duration": "2s"},
            "bad_content_duration",
            id="duration-string",
        ),
        pytest.param(
            "audio",
            {"file_key": "f", "duration": -1},
            "bad_content_duration",
            id="duration-negative",
        ),
        pytest.param(
            "audio", {"file_key": "f", "duration": 1.5}, "bad_content_duration", id="duration-float"
        ),
        pytest.param("sticker", {"file_key": ""}, "missing_content_file_key", id="sticker-blank"),
        pytest.param("share_chat", {}, "missing_content_chat_id", id="share-without-chat"),
        pytest.param("post", {}, "bad_content_post", id="post-empty"),
        pytest.param("post", {"zh_cn": "x"}, "bad_content_post", id="post-locale-not-object"),
        pytest.param("post", {"content": {"a": 1}}, "bad_content_post", id="post-content-dict"),
        pytest.param("post", {"content": ["x"]}, "bad_content_post", id="paragraph-not-list"),
        pytest.param("post", {"content": [["x"]]}, "bad_content_element", id="element-str"),
        pytest.param("post", {"content": [[{}]]}, "bad_content_element", id="element-no-tag"),
        pytest.param(
            "post",
            {"content": [[{"tag": "text", "text": 1}]]},
            "bad_content_element",
            id="element-text-int",
        ),
        pytest.param("post", {"title": 5}, "bad_content_title", id="title-int"),
        pytest.param("system", [], "bad_content_json", id="system-not-object"),
        pytest.param("interactive", "null", "bad_content_json", id="card-null"),
    ],
)
def test_content_that_does_not_fit_its_type_is_rejected(
    message_type: str,
    content: Any,
    reason: str,
    shape: tuple[Shape, Callable[..., NormalizedLarkMessage]],
) -> None:
    build, normalize = shape
    raw = content if isinstance(content, str) else json.dumps(content)

    with pytest.raises(MalformedMessageError) as caught:
        normalize(build(message_type, raw))

    assert caught.value.reason == reason
    assert caught.value.message_id == "om_1"


@pytest.mark.parametrize("payload", [None, [], "event", 3, {"message": None}])
def test_payloads_that_are_not_objects_are_malformed(payload: Any) -> None:
    with pytest.raises(MalformedMessageError):
        from_event(payload)
    with pytest.raises(MalformedMessageError):
        from_list(payload)


def test_error_reasons_carry_no_message_text() -> None:
    with pytest.raises(MalformedMessageError) as caught:
        from_event(event_payload("text", '{"text": "the secret password", '))

    assert "secret" not in str(caught.value)
    assert str(caught.value) == "bad_content_json"


# --- deletion -------------------------------------------------------------------------------


@pytest.mark.parametrize("case", TYPE_CASES)
def test_deleted_history_items_keep_identity_and_lose_content(case: TypeCase) -> None:
    recalled_ms = CREATED_MS + 60_000
    item = list_item(
        case.message_type,
        "This message was recalled",  # Lark's tombstone is not the type's JSON
        mentions=case.mentions,
        deleted=True,
        update_time=str(recalled_ms),
        thread_id="omt_1",
    )

    message = from_list(item)

    assert message.deleted is True
    assert message.text == ""
    assert message.ai_eligible is False
    assert message.message_type == case.message_type
    assert message.updated_at == CREATED_AT + timedelta(minutes=1)
    assert message.metadata == {
        "chat_id": "oc_incident",
        "thread_id": "omt_1",
        "root_id": None,
        "parent_id": None,
        "message_type": case.message_type,
        "deleted": True,
        "recalled_at": (CREATED_AT + timedelta(minutes=1)).isoformat(),
    }


def test_a_deleted_item_of_an_unsupported_type_is_still_unsupported() -> None:
    with pytest.raises(UnsupportedMessageTypeError):
        from_list(list_item("vote", "recalled", deleted=True))


# --- redaction ------------------------------------------------------------------------------


def content_hash(message: NormalizedLarkMessage) -> str:
    return hashlib.sha256(semantic_content(message).encode("utf-8")).hexdigest()


RECALLED_AT = CREATED_AT + timedelta(minutes=5)


@pytest.mark.parametrize("case", TYPE_CASES)
def test_redaction_drops_content_keeps_identity_and_changes_the_hash(case: TypeCase) -> None:
    original = from_event(
        event_payload(
            case.message_type,
            case.content,
            mentions=case.mentions,
            thread_id="omt_1",
            root_id="om_root",
            parent_id="om_parent",
        )
    )

    redacted = redact(original, recalled_at=RECALLED_AT)

    assert redacted.text == ""
    assert redacted.deleted is True
    assert redacted.ai_eligible is False
    assert redacted.updated_at == RECALLED_AT
    assert redacted.created_at == original.created_at
    assert (redacted.message_id, redacted.chat_id, redacted.sender_id) == (
        original.message_id,
        original.chat_id,
        original.sender_id,
    )
    assert redacted.metadata == {
        "chat_id": "oc_incident",
        "thread_id": "omt_1",
        "root_id": "om_root",
        "parent_id": "om_parent",
        "message_type": case.message_type,
        "deleted": True,
        "recalled_at": RECALLED_AT.isoformat(),
    }
    assert content_hash(redacted) != content_hash(original)


def test_redaction_never_moves_updated_at_backwards() -> None:
    edited = from_list(list_item("text", {"text": "x"}, update_time=str(CREATED_MS + 600_000)))

    redacted = redact(edited, recalled_at=CREATED_AT + timedelta(minutes=1))

    assert redacted.updated_at == CREATED_AT + timedelta(minutes=10)


def test_redacting_twice_keeps_the_first_recall_time_and_the_same_hash() -> None:
    original = from_event(event_payload("text", {"text": "oops"}))

    once = redact(original, recalled_at=RECALLED_AT)
    twice = redact(once, recalled_at=RECALLED_AT + timedelta(minutes=3))

    assert twice.metadata["recalled_at"] == RECALLED_AT.isoformat()
    assert content_hash(twice) == content_hash(once)


def test_a_recall_seen_by_event_and_by_history_hashes_the_same() -> None:
    via_event = redact(from_event(event_payload("text", {"text": "oops"})), recalled_at=RECALLED_AT)
    via_history = from_list(
        list_item("text", "recalled", deleted=True, update_time=str(CREATED_MS + 1))
    )

    assert semantic_content(via_event) == semantic_content(via_history)


def test_an_edit_seen_by_event_and_by_history_hashes_the_same() -> None:
    edited_ms = str(CREATED_MS + 120_000)
    via_event = from_event(event_payload("text", {"text": "fixed"}, update_time=edited_ms))
    via_history = from_list(
        list_item("text", {"text": "fixed"}, update_time=edited_ms, updated=True)
    )

    assert via_history.metadata["updated"] is True
    assert semantic_content(via_event) == semantic_content(via_history)


def test_an_unedited_message_is_not_marked_updated_in_either_shape() -> None:
    event, listed = paired(TYPE_CASES[0].values[0])

    assert event.metadata["updated"] is False
    assert listed.metadata["updated"] is False


def test_redaction_requires_an_aware_recall_time() -> None:
    original = from_event(event_payload("text", {"text": "oops"}))

    with pytest.raises(ValueError, match="timezone-aware"):
        redact(original, recalled_at=datetime(2024, 6, 1, 12, 5))


def test_redaction_converts_the_recall_time_to_utc() -> None:
    original = from_event(event_payload("text", {"text": "oops"}))
    shanghai = timezone(timedelta(hours=8))

    redacted = redact(original, recalled_at=datetime(2024, 6, 1, 20, 5, tzinfo=shanghai))

    assert redacted.updated_at == RECALLED_AT
    assert redacted.metadata["recalled_at"] == RECALLED_AT.isoformat()


# --- semantic content -----------------------------------------------------------------------


def test_an_edit_changes_the_semantic_content() -> None:
    original = from_event(event_payload("text", {"text": "DB is down"}))
    edited = from_list(
        list_item(
            "text",
            {"text": "DB is down (primary only)"},
            updated=True,
            update_time=str(CREATED_MS + 30_000),
        )
    )

    assert content_hash(edited) != content_hash(original)
    assert edited.metadata["updated"] is True


def test_only_the_update_time_changing_does_not_change_the_semantic_content() -> None:
    first = from_list(list_item("text", {"text": "same"}))
    later = from_list(list_item("text", {"text": "same"}, update_time=str(CREATED_MS + 5)))

    assert semantic_content(first) == semantic_content(later)


def test_semantic_content_is_canonical_json_with_sorted_keys() -> None:
    message = from_event(event_payload("file", {"file_key": "f1", "file_name": "é.txt"}))

    document = json.loads(semantic_content(message))

    assert list(document) == sorted(document)
    assert list(document["metadata"]) == sorted(document["metadata"])
    assert document == {
        "deleted": False,
        "message_type": "file",
        "metadata": {
            **{k: v for k, v in identity_metadata("file").items() if k != "updated"},
            "file_key": "f1",
            "file_name": "é.txt",
        },
        "text": "",
    }


# --- the result itself ----------------------------------------------------------------------


def test_normalized_messages_are_immutable() -> None:
    message = from_event(event_payload("text", {"text": "x"}))

    with pytest.raises(ValueError, match="frozen"):
        message.text = "y"  # type: ignore[misc]


def test_normalized_messages_refuse_naive_timestamps() -> None:
    message = from_event(event_payload("text", {"text": "x"}))
    fields = message.model_dump()
    fields["created_at"] = datetime(2024, 6, 1, 12, 0)

    with pytest.raises(ValueError, match="timezone-aware"):
        NormalizedLarkMessage(**fields)


# --- no other exception escapes -------------------------------------------------------------

json_values: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.text(max_size=12)
    | st.sampled_from(["", "1717243200000", "text", "post", "om_1", "{}", "@_user_1", "zh_cn"]),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "message",
                    "sender",
                    "sender_id",
                    "open_id",
                    "message_id",
                    "chat_id",
                    "msg_type",
                    "message_type",
                    "content",
                    "body",
                    "mentions",
                    "key",
                    "id",
                    "id_type",
                    "name",
                    "create_time",
                    "update_time",
                    "deleted",
                    "title",
                    "tag",
                    "text",
                    "zh_cn",
                ]
            )
            | st.text(max_size=6),
            children,
            max_size=5,
        )
    ),
    max_leaves=20,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, child in value.items():
            found.extend(_paths(child, (*prefix, key)))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found.extend(_paths(child, (*prefix, index)))
    return found


def _replace(document: Any, path: tuple[Any, ...], value: Any, *, delete: bool) -> Any:
    document = copy.deepcopy(document)
    target = document
    for step in path[:-1]:
        target = target[step]
    if delete and isinstance(target, dict):
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return document


VALID_SHAPES: list[tuple[Callable[..., NormalizedLarkMessage], dict[str, Any]]] = [
    (normalize, build(case.message_type, case.content, mentions=(ALICE,)))
    for case in (cast(TypeCase, param.values[0]) for param in TYPE_CASES)
    for build, normalize in (
        (event_payload, normalize_event_message),
        (list_item, normalize_list_item),
    )
]


REASON_CODE = re.compile(r"[a-z]+(?:_[a-z]+)*")


def _outcome(
    normalize: Callable[..., NormalizedLarkMessage], payload: Any, app_id: str | None
) -> NormalizedLarkMessage | MalformedMessageError:
    try:
        return normalize(payload, max_text_chars=40, app_id=app_id)
    except MalformedMessageError as error:
        return error


def _only_malformed_errors(
    normalize: Callable[..., NormalizedLarkMessage], payload: Any, app_id: str | None = None
) -> None:
    """Any other exception propagates out of `_outcome` and fails the test."""
    outcome = _outcome(normalize, payload, app_id)
    if isinstance(outcome, MalformedMessageError):
        assert REASON_CODE.fullmatch(outcome.reason)
        return
    assert len(outcome.text) <= 40
    assert outcome.created_at.tzinfo is UTC
    json.dumps(outcome.metadata)
    semantic_content(outcome).encode("utf-8")


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(payload=json_values)
def test_arbitrary_json_yields_a_message_or_a_malformed_error(payload: Any) -> None:
    _only_malformed_errors(normalize_event_message, payload)
    _only_malformed_errors(normalize_list_item, payload)


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), replacement=json_values, delete=st.booleans())
def test_mutated_valid_envelopes_yield_a_message_or_a_malformed_error(
    data: st.DataObject, replacement: Any, delete: bool
) -> None:
    normalize, payload = data.draw(st.sampled_from(VALID_SHAPES))
    path = data.draw(st.sampled_from(_paths(payload)))

    _only_malformed_errors(normalize, _replace(payload, path, replacement, delete=delete))


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), replacement=json_values, delete=st.booleans())
def test_mutated_valid_contents_yield_a_message_or_a_malformed_error(
    data: st.DataObject, replacement: Any, delete: bool
) -> None:
    normalize, payload = data.draw(st.sampled_from(VALID_SHAPES))
    holder = payload["message"] if "message" in payload else payload["body"]
    try:
        content = json.loads(holder["content"])
    except ValueError:
        content = holder["content"]
    paths = _paths(content)
    if paths:
        path = data.draw(st.sampled_from(paths))
        content = _replace(content, path, replacement, delete=delete)
    else:
        content = replacement
    mutated = copy.deepcopy(payload)
    target = mutated["message"] if "message" in mutated else mutated["body"]
    target["content"] = json.dumps(content)

    _only_malformed_errors(normalize, mutated, app_id=APP_ID)


@given(
    content=st.text(max_size=40),
    message_type=st.sampled_from(
        sorted(
            {
                "text",
                "post",
                "image",
                "file",
                "media",
                "audio",
                "sticker",
                "interactive",
                "system",
                "share_chat",
                "merge_forward",
            }
        )
    ),
)
def test_arbitrary_content_strings_yield_a_message_or_a_malformed_error(
    content: str, message_type: str
) -> None:
    _only_malformed_errors(normalize_event_message, event_payload(message_type, content))
    _only_malformed_errors(normalize_list_item, list_item(message_type, content))
