"""Which workspaces a message may become evidence for (docs/design.md §1), as a table."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest

from timeline_pipeline.domain.workspaces import Workspace
from timeline_pipeline.ingest.eligibility import AUTOMATIC, MANUAL, Scope, message_skip
from timeline_pipeline.ingest.writer import plan_records
from timeline_pipeline.lark.normalize import NormalizedLarkMessage, normalize_event_message
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline_tests.receiver.lark_events import NOW, receive

ENABLED: dict[str, Any] = {"enabled": True, "event_ingestion_enabled": True}


def workspace(
    *, status: str = "firing", age: timedelta = timedelta(hours=1), type_: str = "incident"
) -> Workspace:
    created = NOW - age
    return Workspace("inc-1", type_, status, None, created, created)


def replace_id(found: Workspace, workspace_id: str) -> Workspace:
    return Workspace(
        workspace_id, found.type, found.status, None, found.created_at, found.updated_at
    )


def message(
    *, age: timedelta = timedelta(minutes=10), chat_type: str | None = "group"
) -> NormalizedLarkMessage:
    event = receive("om_1", at=NOW - age, chat_type=chat_type or "group")["event"]
    normalized = normalize_event_message(event, max_text_chars=4000)
    return normalized.model_copy(update={"chat_type": chat_type})


@dataclass(frozen=True)
class Row:
    name: str
    expected: str | None
    workspace: dict[str, Any] = field(default_factory=dict)
    message: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    scope: Scope = AUTOMATIC


H = timedelta(hours=1)
TABLE = [
    Row("a fresh firing incident takes a group message", None),
    Row("topic groups are groups", None, message={"chat_type": "topic_group"}),
    Row("history items carry no chat type and are bound chats", None, message={"chat_type": None}),
    Row("p2p chats never", "not_group_chat", message={"chat_type": "p2p"}),
    Row("recovered workspaces stop", "workspace_not_firing", workspace={"status": "recovered"}),
    Row("archived workspaces stop", "workspace_not_firing", workspace={"status": "archived"}),
    Row("exactly 72 h old is still in", None, workspace={"age": 72 * H}, message={"age": H}),
    Row("older than 72 h is out", "workspace_aged_out", workspace={"age": 72 * H + H / 60}),
    Row("a shorter lookback ages out sooner", "workspace_aged_out",
        workspace={"age": 25 * H}, settings={"ingestion_lookback": "24h"}),
    Row("messages from before the workspace existed", "before_workspace_created",
        message={"age": 2 * H}),
    Row("the environment flag is off", "ingestion_disabled", settings={"enabled": False}),
    Row("the workspace type is not enabled", "workspace_type_disabled",
        workspace={"type_": "change"}),
    Row("another type can be enabled", None, workspace={"type_": "change"},
        settings={"workspace_types": ["incident", "change"]}),
    Row("manual refresh reaches a recovered workspace", None,
        workspace={"status": "recovered"}, scope=MANUAL),
    Row("manual refresh reaches an aged-out workspace", None,
        workspace={"age": 80 * H}, message={"age": 70 * H}, scope=MANUAL),
    Row("manual refresh still respects the creation time", "before_workspace_created",
        workspace={"status": "archived"}, message={"age": 2 * H}, scope=MANUAL),
    Row("manual refresh still respects the ingestion lookback", "before_lookback",
        workspace={"age": 100 * H}, message={"age": 73 * H}, scope=MANUAL),
    Row("manual refresh does not override the type flag", "workspace_type_disabled",
        workspace={"type_": "change"}, scope=MANUAL),
]  # fmt: skip


@pytest.mark.parametrize("row", TABLE, ids=[row.name for row in TABLE])
def test_eligibility(row: Row) -> None:
    settings = LarkTimelineSettings(**{**ENABLED, **row.settings})

    skip = message_skip(
        message(**row.message), workspace(**row.workspace), settings, NOW, row.scope
    )

    assert skip == row.expected


def test_one_message_fans_out_to_each_eligible_workspace_and_counts_the_rest() -> None:
    settings = LarkTimelineSettings(**ENABLED)
    live_a, live_b = workspace(), replace_id(workspace(), "inc-2")
    over = replace_id(workspace(status="recovered"), "inc-3")

    records, skipped = plan_records([message()], [live_a, live_b, over], settings, NOW)

    assert [r.workspace_id for r in records] == ["inc-1", "inc-2"]
    assert records[0].content_hash == records[1].content_hash
    assert dict(skipped) == {"workspace_not_firing": 1}


def test_an_unbound_chat_skips_every_message() -> None:
    settings = LarkTimelineSettings(**ENABLED)

    records, skipped = plan_records([message(), message()], [], settings, NOW)

    assert records == []
    assert dict(skipped) == {"unbound_chat": 2}


def test_now_is_what_ages_a_workspace_out() -> None:
    settings = LarkTimelineSettings(**ENABLED)
    young = workspace(age=71 * H)
    later: datetime = NOW + 2 * H

    assert message_skip(message(), young, settings, NOW) is None
    assert message_skip(message(), young, settings, later) == "workspace_aged_out"


def test_the_products_own_messages_are_self_generated_and_other_bots_are_stored() -> None:
    settings = LarkTimelineSettings(**ENABLED)
    ours = message().model_copy(update={"sender_id": "cli_ours", "sender_type": "app"})
    other_bot = message().model_copy(update={"sender_id": "cli_other", "sender_type": "app"})

    records, skipped = plan_records(
        [ours, other_bot, message()], [workspace()], settings, NOW, app_id="cli_ours"
    )

    assert [r.source_key for r in records] == ["chat/oc_incident/message/om_1"] * 2
    assert [r.actor_id for r in records] == ["cli_other", message().sender_id]
    assert dict(skipped) == {"self_generated": 1}
    # Without the product's app id nothing is recognised as its own.
    assert message_skip(ours, workspace(), settings, NOW) is None
