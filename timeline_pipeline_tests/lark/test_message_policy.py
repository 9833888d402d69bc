"""The message policy of docs/design.md §2, as a table a reviewer can check line by line."""

from __future__ import annotations

import pytest

from timeline_pipeline.domain.message_types import (
    AI_TEXT_TYPES,
    STORED_ONLY_TYPES,
    SUPPORTED_MESSAGE_TYPES,
)
from timeline_pipeline.lark.message_policy import (
    IDENTITY_METADATA_KEYS,
    is_ai_eligible,
    is_self_message,
    redacted_metadata,
    sender_kind,
)
from timeline_pipeline.synthesis.classify import MessageKind, read_message
from timeline_pipeline_tests.synthesis.builders import evidence

APP_ID = "cli_timeline_bot"


@pytest.mark.parametrize(
    ("message_type", "sender_type", "sender_id", "deleted", "text", "eligible"),
    [
        pytest.param("text", "user", "ou_alice", False, "db is down", True, id="user-text"),
        pytest.param(
            "post", "user", "ou_alice", False, "Update\nrolled back", True, id="user-post"
        ),
        pytest.param("text", "user", "ou_alice", True, "db is down", False, id="deleted-text"),
        pytest.param("text", "user", "ou_alice", False, "", False, id="empty-text"),
        pytest.param("text", "app", "cli_other", False, "build ok", False, id="other-app"),
        pytest.param("text", "app", APP_ID, False, "overview", False, id="own-app"),
        pytest.param("text", "user", APP_ID, False, "spoofed", False, id="sender-is-app-id"),
        pytest.param("text", "anonymous", "ou_x", False, "hi", False, id="anonymous"),
        pytest.param("text", "unknown", None, False, "hi", False, id="unknown-sender"),
        pytest.param("interactive", "user", "ou_alice", False, "", False, id="card"),
        pytest.param("system", "user", "ou_alice", False, "", False, id="system"),
        pytest.param("merge_forward", "user", "ou_alice", False, "", False, id="merge-forward"),
        pytest.param("image", "user", "ou_alice", False, "", False, id="image"),
        pytest.param("file", "user", "ou_alice", False, "", False, id="file"),
        pytest.param("media", "user", "ou_alice", False, "", False, id="media"),
        pytest.param("audio", "user", "ou_alice", False, "", False, id="audio"),
        pytest.param("sticker", "user", "ou_alice", False, "", False, id="sticker"),
        pytest.param("share_chat", "user", "ou_alice", False, "", False, id="share-chat"),
    ],
)
def test_only_words_a_person_wrote_and_kept_are_ai_eligible(
    message_type: str,
    sender_type: str,
    sender_id: str | None,
    deleted: bool,
    text: str,
    eligible: bool,
) -> None:
    assert (
        is_ai_eligible(
            message_type=message_type,
            sender_type=sender_type,
            sender_id=sender_id,
            deleted=deleted,
            text=text,
            app_id=APP_ID,
        )
        is eligible
    )


def test_without_a_configured_app_id_user_text_is_still_eligible() -> None:
    assert is_ai_eligible(
        message_type="text",
        sender_type="user",
        sender_id="ou_alice",
        deleted=False,
        text="hi",
        app_id=None,
    )


@pytest.mark.parametrize(
    ("sender_type", "sender_id", "app_id", "is_self"),
    [
        pytest.param("app", APP_ID, APP_ID, True, id="own-bot"),
        pytest.param("app", "cli_other", APP_ID, True, id="any-app-counts-as-bot-output"),
        pytest.param("user", APP_ID, APP_ID, True, id="id-equals-app-id"),
        pytest.param("user", "ou_alice", APP_ID, False, id="person"),
        pytest.param("user", None, None, False, id="no-app-id-configured"),
    ],
)
def test_messages_from_apps_or_our_app_id_count_as_self(
    sender_type: str, sender_id: str | None, app_id: str | None, is_self: bool
) -> None:
    assert is_self_message(sender_type=sender_type, sender_id=sender_id, app_id=app_id) is is_self


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        ("user", "user"),
        ("app", "app"),
        ("anonymous", "anonymous"),
        ("unknown", "unknown"),
        ("robot", "unknown"),
        ("", "unknown"),
        (None, "unknown"),
    ],
)
def test_unrecognised_sender_types_fold_into_unknown(raw: str | None, kind: str) -> None:
    assert sender_kind(raw) == kind


def test_redacted_metadata_keeps_identity_and_drops_everything_about_content() -> None:
    metadata = {
        "chat_id": "oc_1",
        "thread_id": "omt_1",
        "root_id": "om_root",
        "parent_id": "om_parent",
        "message_type": "file",
        "file_key": "file_v2_1",
        "file_name": "postmortem.pdf",
        "mention_open_ids": ["ou_bob"],
        "updated": True,
        "deleted": False,
    }

    redacted = redacted_metadata(metadata, recalled_at_iso="2024-06-01T12:05:00+00:00")

    assert redacted == {
        "chat_id": "oc_1",
        "thread_id": "omt_1",
        "root_id": "om_root",
        "parent_id": "om_parent",
        "message_type": "file",
        "deleted": True,
        "recalled_at": "2024-06-01T12:05:00+00:00",
    }


def test_policy_type_sets_partition_the_supported_types() -> None:
    assert AI_TEXT_TYPES.isdisjoint(STORED_ONLY_TYPES)
    assert SUPPORTED_MESSAGE_TYPES == AI_TEXT_TYPES | STORED_ONLY_TYPES
    assert set(IDENTITY_METADATA_KEYS) == {
        "chat_id",
        "thread_id",
        "root_id",
        "parent_id",
        "message_type",
    }


@pytest.mark.parametrize("message_type", sorted(SUPPORTED_MESSAGE_TYPES))
def test_the_rules_read_as_talk_exactly_the_types_that_may_reach_the_model(
    message_type: str,
) -> None:
    # One set (domain/message_types.py) for the model's eligibility and the rule synthesizer:
    # a fact in a type the model may read is a fact to the rules too, and any other type is
    # noise to both.
    item = evidence(
        1, "we rolled back the deploy of payments-api to v41", message_type=message_type
    )
    kind = read_message(item).kind
    eligible = is_ai_eligible(
        message_type=message_type,
        sender_type="user",
        sender_id="ou_alice",
        deleted=False,
        text=item.text,
        app_id=None,
    )
    assert (kind is not MessageKind.NOISE) == eligible == (message_type in AI_TEXT_TYPES)
