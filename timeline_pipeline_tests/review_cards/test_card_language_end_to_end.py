"""Review cards reach the chat in the workspace's language and zone, through the real path on
SQLite and PostgreSQL (docs/i18n.md, docs/review-cards.md): the worker reads the workspace's
presentation when it posts and redraws a card on the local Lark, and the callback's answer (its
toast and the card it redraws) is in the same language, whether the workspace chose it or
`auto` read it from the chat."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from sqlalchemy import Engine

from timeline_pipeline_tests.review_cards.harness import (
    Harness,
    card_texts,
    harness,
    plan_card,
    seed_entries,
)

DATED = r"(?:\d{4}年\d{1,2}月\d{1,2}日 )?"
"""A card whose times span local days shows dates (the decision is made today, the drafts on
the harness's fixed day)."""


def _posted(h: Harness, card_id: int) -> list[dict[str, Any]]:
    """Every drawing of the card the local Lark received: the send, then each redraw."""
    message_id = h.card(card_id).message_id
    assert message_id is not None
    return [dict(logged) for logged in h.lark.store.card_log(message_id)]


def test_a_chinese_workspaces_card_reaches_the_chat_in_chinese_with_shanghai_times(
    engine: Engine,
) -> None:
    with harness(engine, workspace_locale="zh-CN", workspace_zone="Asia/Shanghai") as h:
        ids = seed_entries(engine, h.workspace_id, 2)  # 10:00 and 10:01 UTC
        card_id = plan_card(engine, h.workspace_id, ids, ttl=timedelta(hours=1))
        h.drain()
        [sent] = _posted(h, card_id)
        assert sent["kind"] == "sent"
        texts = card_texts(sent["card"])
        assert texts[0] == "待审核的时间线草稿"
        assert "18:00 UTC+8 · 发现 · Draft 0" in texts
        assert "18:01 UTC+8 · 发现 · Draft 1" in texts
        assert {"确认", "隐藏", "分类", "影响", "发现", "缓解措施"} <= set(texts)
        assert re.fullmatch(r"本卡片可处理至 \d{4}年\d{1,2}月\d{1,2}日 \d\d:\d\d UTC\+8", texts[-1])
        assert not any("UTC+8" not in t and " UTC" in t for t in texts)

        # A person who is not a curator is told so in Chinese; nothing is admitted.
        bystander = h.click(card_id, ids[0], "confirm", operator="ou_bystander")
        assert bystander.body["toast"]["content"] == (
            "只有该事件的审核人可以审核草稿，未做任何更改。"
        )
        assert h.admissions() == 0

        answer = h.click(card_id, ids[0], "confirm")
        assert answer.outcome == "admitted"
        assert answer.body["toast"] == {"type": "success", "content": "已确认，时间线正在更新。"}
        being_applied = "\n".join(card_texts(answer.body["card"]["data"]))
        assert re.search(
            rf"<at id=ou_curator></at> 于 {DATED}\d\d:\d\d UTC\+8 确认（处理中）", (being_applied)
        )
        # The same click again (a second tap, a redelivery) is answered as recorded.
        again = h.click(card_id, ids[0], "confirm")
        assert (again.outcome, again.body["toast"]["content"]) == (
            "duplicate",
            "已记录，无需重复操作。",
        )

        h.drain()
        redrawn = _posted(h, card_id)[-1]
        assert redrawn["kind"] == "patched"
        notes = "\n".join(card_texts(redrawn["card"]))
        assert re.search(rf"<at id=ou_curator></at> 于 {DATED}\d\d:\d\d UTC\+8 确认", notes)
        assert "（处理中）" not in notes
        assert re.search(rf"{DATED}18:00 UTC\+8 · 发现 · Draft 0", notes)
        assert "Confirmed" not in notes and "Timeline drafts" not in notes


def test_an_auto_workspace_reads_its_chats_language_and_the_settings_zone(
    engine: Engine,
) -> None:
    with harness(engine, time_zone="Asia/Shanghai") as h:  # the workspace's locale is `auto`
        ids = seed_entries(
            engine, h.workspace_id, 2, text="支付网关 p99 飙到 3s，订单失败率 12% ({i})"
        )
        card_id = plan_card(engine, h.workspace_id, ids, ttl=timedelta(hours=1))
        h.drain()
        texts = card_texts(_posted(h, card_id)[0]["card"])
        assert texts[0] == "待审核的时间线草稿"
        assert "18:00 UTC+8 · 发现 · Draft 0" in texts


def test_an_english_workspaces_card_reaches_the_chat_as_before(engine: Engine) -> None:
    with harness(engine) as h:
        ids = seed_entries(engine, h.workspace_id, 2)
        card_id = plan_card(engine, h.workspace_id, ids, ttl=timedelta(hours=1))
        h.drain()
        texts = card_texts(_posted(h, card_id)[0]["card"])
        assert texts[0] == "Timeline drafts to review"
        assert "10:00 UTC · finding · Draft 0" in texts
        assert {"Confirm", "Hide", "Category", "New title", "Save title"} <= set(texts)
        answer = h.click(card_id, ids[0], "confirm")
        assert answer.body["toast"]["content"] == "Confirmed; the timeline is being updated."
