"""What the bot writes in the chat follows the workspace's language and zone (docs/i18n.md),
pure: a `zh-CN` workspace in Asia/Shanghai reads Chinese words, Chinese category names and
`UTC+8` times (dated where the card spans local days, and always for an expiry), while the
controls' values, which callbacks are checked against, stay exactly those of an English card;
an English workspace in UTC reads as it always has."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from timeline_pipeline.domain.card_requests import CardEntry, CardRequest, Decision, PinNote
from timeline_pipeline.domain.interactions import CardAction, CardStatus
from timeline_pipeline.i18n.locales import Locale, Presentation
from timeline_pipeline.pins.service import entry_text
from timeline_pipeline.review_cards.callbacks import CallbackRefused, Refusal, stale_toast
from timeline_pipeline.review_cards.drawing import describe, headline, render_card, render_pin_card
from timeline_pipeline_tests.review_cards.harness import card_texts

T0 = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
"""18:00 in Shanghai."""
ZH = Presentation(Locale.ZH_CN, ZoneInfo("Asia/Shanghai"))
EN = Presentation.default()
REQUEST = CardRequest(
    (
        CardEntry(1, 1, T0, "支付网关 p99 飙到 3s", "impact", 3),
        CardEntry(2, 4, T0 + timedelta(minutes=2), "rollback 已经开始了", "mitigation", 1),
    ),
    ("impact", "mitigation", "root_cause"),
    512,
)
PIN = CardRequest(
    (CardEntry(7, 1, T0, "重试风暴来自支付 sidecar", "finding", 1),),
    ("impact", "finding"),
    512,
    {"category": "select"},
    PinNote("INC-7", "ou_pin"),
)
HAN = re.compile(r"[\u4e00-\u9fff]")


def _card(presentation: Presentation, **changes: Any) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "token": "tok",
        "status": CardStatus.PENDING,
        "expires_at": T0 + timedelta(hours=1),
        "workspace_id": "inc-1",
        "presentation": presentation,
    }
    arguments.update(changes)
    request = arguments.pop("request", REQUEST)
    decisions = arguments.pop("decisions", {})
    return render_card(request, decisions, **arguments)


def _skeleton(node: object) -> object:
    """The card with every text a person reads blanked out: the structure, the controls and
    every value they carry back (tokens, entry ids, actions, revisions, options, limits)."""
    if isinstance(node, dict):
        if node.get("tag") in ("plain_text", "lark_md"):
            return {**node, "content": "…"}
        return {key: _skeleton(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_skeleton(item) for item in node]
    return node


def test_a_chinese_workspace_reads_its_review_card_in_chinese_with_shanghai_times() -> None:
    texts = card_texts(_card(ZH))
    assert texts[0] == "待审核的时间线草稿"
    assert "18:00 UTC+8 · 影响 · 支付网关 p99 飙到 3s" in texts
    assert "18:02 UTC+8 · 缓解措施 · rollback 已经开始了" in texts
    assert {"确认", "隐藏", "分类", "新标题", "保存标题", "3 条消息", "1 条消息"} <= set(texts)
    names = ("影响", "缓解措施", "根因")
    assert [t for t in texts if t in names][:3] == list(names)  # the select's options
    # The expiry always carries its date, in the workspace's zone.
    assert texts[-1] == "本卡片可处理至 2026年11月29日 19:00 UTC+8"
    assert not any("UTC " in t or t.endswith(" UTC") for t in texts)
    for english in ("Confirm", "Hide", "Category", "Timeline drafts", "message(s)", "impact"):
        assert not any(english in t for t in texts), english


def test_the_language_changes_the_words_only_never_what_a_click_sends_back() -> None:
    for status in CardStatus:
        chinese, english = _card(ZH, status=status), _card(EN, status=status)
        assert _skeleton(chinese) == _skeleton(english)
        assert chinese != english


def test_an_english_workspace_in_utc_reads_as_before() -> None:
    texts = card_texts(_card(EN))
    assert texts[0] == "Timeline drafts to review"
    assert "10:00 UTC · impact · 支付网关 p99 飙到 3s" in texts
    assert "10:02 UTC · mitigation · rollback 已经开始了" in texts
    assert {"Confirm", "Hide", "Category", "New title", "Save title", "3 message(s)"} <= set(texts)
    assert texts[-1] == "Open for decisions until 2026-11-29 11:00 UTC"
    assert not any(HAN.search(t) for t in texts if "p99" not in t and "rollback" not in t)


def test_a_card_whose_drafts_cross_local_midnight_shows_their_dates_in_that_zone_only() -> None:
    # 15:59 and 16:01 UTC: one day in UTC, two days (23:59 and 00:01) in Shanghai.
    late = T0.replace(hour=15, minute=59)
    request = CardRequest(
        (
            CardEntry(1, 1, late, "a", "impact", 1),
            CardEntry(2, 1, late + timedelta(minutes=2), "b", "impact", 1),
        ),
        ("impact",),
        512,
    )
    chinese = card_texts(_card(ZH, request=request))
    assert "2026年11月29日 23:59 UTC+8 · 影响 · a" in chinese
    assert "2026年11月30日 00:01 UTC+8 · 影响 · b" in chinese
    english = card_texts(_card(EN, request=request))
    assert "15:59 UTC · impact · a" in english and "16:01 UTC · impact · b" in english


def test_who_decided_what_reads_in_the_workspaces_language() -> None:
    at = T0 + timedelta(minutes=5)
    decisions = {
        1: [Decision(CardAction.CONFIRM, "ou_ic", at, "applied")],
        2: [
            Decision(CardAction.CATEGORY, "ou_ic", at, "admitted", value="root_cause"),
            Decision(CardAction.EDIT, "ou_sre", at, "failed", "stale_revision", "x"),
        ],
    }
    notes = "\n".join(card_texts(_card(ZH, decisions=decisions)))
    assert "<at id=ou_ic></at> 于 18:05 UTC+8 确认" in notes
    assert "<at id=ou_ic></at> 于 18:05 UTC+8 将分类改为「根因」（处理中）" in notes
    assert "<at id=ou_sre></at> 于 18:05 UTC+8 修改了标题，未生效：草稿已被修改" in notes
    english = "\n".join(card_texts(_card(EN, decisions=decisions)))
    assert "Confirmed by <at id=ou_ic></at> at 10:05 UTC" in english
    assert "Category set to root cause by <at id=ou_ic></at> at 10:05 UTC (being applied)" in (
        english
    )
    assert "Title edited by <at id=ou_sre></at> at 10:05 UTC - not applied: the draft changed" in (
        english
    )
    # Without a presentation, a decision reads as it always has.
    assert describe(decisions[1][0]) == "Confirmed by <at id=ou_ic></at> at 10:05 UTC"


@pytest.mark.parametrize(
    ("status", "footer"),
    [
        (CardStatus.SUBMITTED, "本卡片上的草稿均已处理"),
        (CardStatus.EXPIRED, "本卡片已过期，请到时间线页面审核草稿"),
        (CardStatus.CANCELLED, "本卡片已撤回"),
    ],
)
def test_a_closed_card_says_so_in_chinese(status: CardStatus, footer: str) -> None:
    texts = card_texts(_card(ZH, token=None, status=status))
    assert texts[-1] == footer and "确认" not in texts


def _pin_card(presentation: Presentation) -> dict[str, Any]:
    """The pin's reply card, open for a day, in `presentation`."""
    return render_pin_card(
        PIN,
        {},
        token="tok",
        status=CardStatus.PENDING,
        expires_at=T0 + timedelta(hours=24),
        workspace_id="INC-7",
        link_base_url="https://timeline.example",
        presentation=presentation,
    )


def test_a_pins_reply_card_reads_in_chinese_with_its_message_time_and_expiry() -> None:
    card = _pin_card(ZH)
    texts = card_texts(card)
    assert card["header"]["title"]["content"] == "已记入 INC-7 的时间线，分类：发现"
    assert "<at id=ou_pin></at> 标记了这条消息（发送于 18:00 UTC+8）" in texts
    assert any(t.startswith("[打开时间线](https://timeline.example/ui/") for t in texts)
    assert [t for t in texts if t in ("影响", "发现")] == ["影响", "发现"]
    assert texts[-1] == "2026年11月30日 18:00 UTC+8 前可在此修改分类"
    english = _pin_card(EN)
    assert _skeleton(card) == _skeleton(english)
    assert english["header"]["title"]["content"] == "Pinned to the timeline of INC-7 as finding"
    assert headline(PinNote("INC-7", ""), "root_cause", ZH) == "已记入 INC-7 的时间线，分类：根因"


def test_every_callback_refusal_has_a_chinese_toast() -> None:
    for reason in Refusal:
        refused = CallbackRefused(reason, max_chars=512)
        chinese, english = refused.toast(ZH), refused.toast(EN)
        assert HAN.search(chinese) and not HAN.search(english), reason
        assert "{" not in chinese and "{" not in english, reason
    assert "512" in CallbackRefused(Refusal.INVALID_TITLE, max_chars=512).toast(ZH)


def test_a_stale_toast_shows_the_draft_as_it_now_reads_in_the_workspaces_zone() -> None:
    entry = CardEntry(1, 2, T0, "Checkout errors at 12%", "impact", 3)
    assert stale_toast(entry, ZH) == (
        "该草稿已被修改，本次未做任何更改。当前内容：18:00 UTC+8 · 影响 · Checkout errors at 12%"
    )
    assert stale_toast(entry) == (
        "This draft changed meanwhile; nothing was changed. It now reads: "
        "10:00 UTC · impact · Checkout errors at 12%"
    )


def test_a_pinned_message_without_words_is_named_in_the_workspaces_language() -> None:
    assert entry_text("", "image", Locale.ZH_CN) == ("标记的消息（image）", None)
    assert entry_text("  ", "image") == ("Pinned image message", None)
    assert entry_text("回滚完成", "text", Locale.ZH_CN) == ("回滚完成", None)
