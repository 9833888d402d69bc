"""A pin's reply reaches the chat in the workspace's language and zone, through the real path
on SQLite and PostgreSQL (docs/i18n.md, docs/pins.md): the pin service queues it, the card
worker draws it in the workspace's presentation on the local Lark, and a change of category on
it is answered and redrawn in the same language. An English workspace's reply is unchanged."""

from __future__ import annotations

import re
from datetime import datetime
from zoneinfo import ZoneInfo

from sqlalchemy import Engine

from timeline_pipeline.lark.simulator.events import EventIdentity, card_action_event
from timeline_pipeline_tests.pins.harness import CHAT, CURATOR, pin_harness
from timeline_pipeline_tests.review_cards.harness import button, card_texts


def test_a_pin_in_a_chinese_workspace_is_answered_in_chinese_with_shanghai_times(
    engine: Engine,
) -> None:
    with pin_harness(engine, workspace_locale="zh-CN", workspace_zone="Asia/Shanghai") as h:
        message_id = h.say("重试风暴来自支付 sidecar，不是网关")
        assert h.react(message_id).changed
        entry = h.pin_entry(message_id)
        assert entry is not None
        h.drain()
        [sent] = h.sent()
        card = sent["card"]
        assert card["header"]["title"]["content"] == (
            f"已记入 {h.workspace_id} 的时间线，分类：发现"
        )
        texts = card_texts(card)
        local = entry.occurred_at.astimezone(ZoneInfo("Asia/Shanghai")).strftime("%H:%M")
        assert f"<at id={CURATOR}></at> 标记了这条消息（发送于 {local} UTC+8）" in texts
        assert re.fullmatch(
            r"\d{4}年\d{1,2}月\d{1,2}日 \d\d:\d\d UTC\+8 前可在此修改分类", texts[-1]
        )
        assert {"影响", "发现", "根因"} <= set(texts)  # the select's options

        [reply] = h.replies()
        assert reply.message_id is not None
        payload = card_action_event(
            EventIdentity(app_id=h.app_id),
            operator_open_id=CURATOR,
            open_message_id=reply.message_id,
            open_chat_id=CHAT,
            action_value=button(
                h.lark.store.card_log(reply.message_id)[-1]["card"], entry.id, "category"
            ),
        )
        payload["event"]["action"]["option"] = "mitigation"
        answer = h.callbacks.handle(payload)
        assert answer.body["toast"] == {
            "type": "success",
            "content": "分类已修改，时间线正在更新。",
        }
        h.drain()
        redrawn = h.lark.store.card_log(reply.message_id)[-1]
        assert redrawn["kind"] == "patched"
        assert redrawn["card"]["header"]["title"]["content"].endswith("分类：缓解措施")
        assert re.search(
            r"<at id=ou_pin_curator></at> 于 (?:\d{4}年\d{1,2}月\d{1,2}日 )?\d\d:\d\d UTC\+8 "
            r"将分类改为「缓解措施」",
            "\n".join(card_texts(redrawn["card"])),
        )


def test_a_pin_in_an_english_workspace_is_answered_as_before(engine: Engine) -> None:
    with pin_harness(engine) as h:
        message_id = h.say("rolled back the gateway config")
        assert h.react(message_id).changed
        entry = h.pin_entry(message_id)
        assert entry is not None
        h.drain()
        [sent] = h.sent()
        texts = card_texts(sent["card"])
        at = entry.occurred_at.astimezone(ZoneInfo("UTC")).strftime("%H:%M")
        assert f"Pinned by <at id={CURATOR}></at> at {at} UTC message time" in texts
        expiry = datetime.now(ZoneInfo("UTC"))
        assert texts[-1].startswith("Change the category until ")
        assert texts[-1].endswith(" UTC") and str(expiry.year) in texts[-1]
