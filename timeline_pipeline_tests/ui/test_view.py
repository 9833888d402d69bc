"""What the page calls things: source labels, filters, evidence items, the listing version."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from timeline_pipeline.curation.timeline import EntryView, SummaryView
from timeline_pipeline.domain.evidence import EvidenceRow
from timeline_pipeline.i18n.locales import Locale, Presentation
from timeline_pipeline.ui.language import browser_presentation
from timeline_pipeline.ui.view import (
    TimeNotAccepted,
    entry_card,
    evidence_item,
    input_value,
    moment_from_input,
    parse_filters,
    source_label,
    summary_panel,
    timeline_version,
    zone_name,
)

EN_UTC = Presentation.default()


@pytest.mark.parametrize(
    ("source", "status", "edited", "label"),
    [
        ("ai", "draft", False, "AI draft"),
        ("ai", "confirmed", False, "AI"),
        ("ai", "confirmed", True, "Human-edited"),
        ("rule", "draft", False, "Rule"),
        ("rule", "hidden", True, "Human-edited"),
        ("human", "confirmed", True, "Human"),
    ],
)
def test_every_entry_says_where_its_words_come_from(
    source: str, status: str, edited: bool, label: str
) -> None:
    assert source_label(source, status, edited) == label


def test_filters_keep_known_values_in_a_fixed_order_and_default_to_the_visible_ones() -> None:
    assert parse_filters([], None).statuses == ("draft", "confirmed")
    assert parse_filters([], None).is_default
    chosen = parse_filters(["hidden", "draft", "bogus"], "impact")
    assert chosen.statuses == ("draft", "hidden")
    assert chosen.category == "impact"
    assert chosen.query() == [("status", "draft"), ("status", "hidden"), ("category", "impact")]
    assert parse_filters(["bogus"], "<script>").category is None


def _row(*, deleted: bool, name: str | None) -> EvidenceRow:
    at = datetime(2026, 11, 29, 10, 0, 5, tzinfo=UTC)
    return EvidenceRow(
        id=7, workspace_id="w", source="lark", source_type="lark_message",
        source_key="chat/oc_1/message/om_1", occurred_at=at, source_updated_at=at,
        observed_at=at, actor_id="ou_1", actor_display_name=name,
        content="" if deleted else "db is down", content_hash="h", metadata={},
        scope_key="oc_1", ai_eligible=not deleted, deleted=deleted, revision=1,
    )  # fmt: skip


def test_a_recalled_message_is_marked_and_keeps_neither_text_nor_link() -> None:
    shown = evidence_item(
        _row(deleted=False, name="Priya"), "https://applink/x", EN_UTC, dated=False
    )
    assert (shown.sender, shown.text, shown.link) == ("Priya", "db is down", "https://applink/x")
    assert shown.occurred_shown == "10:00:05 UTC"
    recalled = evidence_item(
        _row(deleted=True, name=None), "https://applink/x", EN_UTC, dated=False
    )
    assert (recalled.sender, recalled.text, recalled.link) == ("ou_1", None, None)


def test_the_listing_version_changes_with_any_entry_revision_the_summary_or_the_filters() -> None:
    filters = parse_filters([], None)
    base = timeline_version([(1, 1), (2, 1)], 3, filters)
    assert base == timeline_version([(1, 1), (2, 1)], 3, filters)
    assert base != timeline_version([(1, 2), (2, 1)], 3, filters)
    assert base != timeline_version([(1, 1), (2, 1), (3, 1)], 3, filters)
    assert base != timeline_version([(1, 1), (2, 1)], 4, filters)
    assert base != timeline_version([(1, 1), (2, 1)], 3, parse_filters(["hidden"], None))


def test_a_time_typed_without_a_zone_is_read_as_utc() -> None:
    utc = ZoneInfo("UTC")
    assert moment_from_input("2026-11-29T10:05", utc) == datetime(2026, 11, 29, 10, 5, tzinfo=UTC)
    with pytest.raises(ValueError, match="not a date and time"):
        moment_from_input("yesterday", utc)


SHANGHAI = Presentation(Locale.ZH_CN, ZoneInfo("Asia/Shanghai"))


def _entry(at: datetime, *, status: str = "draft", source: str = "ai") -> EntryView:
    return EntryView(
        id=3, workspace_id="w", occurred_at=at, title="支付网关 p99 飙到 3s", detail=None,
        category="root_cause", source=source, status=status, human_edited=False, revision=2,
        etag="e3", evidence=(), created_at=at, updated_at=at,
    )  # fmt: skip


def test_a_card_of_a_chinese_workspace_names_everything_in_chinese_and_keeps_stored_values() -> (
    None
):
    at = datetime(2026, 12, 4, 16, 12, 30, tzinfo=UTC)
    card = entry_card(_entry(at), SHANGHAI, dated=False)
    assert (card.status, card.category) == ("draft", "root_cause")
    assert (card.status_label, card.category_label, card.source_label) == (
        "草稿",
        "根因",
        "AI 草稿",
    )
    assert card.actions == (("confirm", "确认"), ("hide", "隐藏"))
    assert card.occurred_shown == "00:12 UTC+8"
    assert card.occurred_iso == "2026-12-04T16:12:30Z"
    assert (card.occurred_input, card.zone, card.occurred_offset) == (
        "2026-12-05T00:12",
        "UTC+8",
        480,
    )
    assert (
        entry_card(_entry(at), SHANGHAI, dated=True).occurred_shown == "2026年12月5日 00:12 UTC+8"
    )
    english = entry_card(_entry(at, status="hidden", source="human"), EN_UTC, dated=False)
    assert (english.occurred_shown, english.occurred_input) == ("16:12 UTC", "2026-12-04T16:12")
    assert english.actions == (("restore", "Restore"),)
    assert (english.status_label, english.category_label) == ("Hidden", "Root cause")
    assert english.by_curator and english.source_label == "Human"


def test_the_summary_stamp_always_carries_its_date_in_the_zone() -> None:
    at = datetime(2026, 12, 4, 20, 5, tzinfo=UTC)
    view = SummaryView("w", "第一段\n\n第二段", "human", 4, "s4", at)
    panel = summary_panel(view, SHANGHAI)
    assert panel.updated == "2026-12-05 04:05 UTC+8"
    assert (panel.origin, panel.by_curator, panel.paragraphs) == (
        "审核人撰写",
        True,
        ("第一段", "第二段"),
    )
    assert summary_panel(view, EN_UTC).updated == "2026-12-04 20:05 UTC"


def test_a_time_typed_in_the_form_is_read_in_the_workspaces_zone() -> None:
    shanghai = ZoneInfo("Asia/Shanghai")
    assert moment_from_input("2026-12-05T00:12", shanghai) == datetime(
        2026, 12, 4, 16, 12, tzinfo=UTC
    )
    assert input_value(datetime(2026, 12, 4, 16, 12, tzinfo=UTC), shanghai) == "2026-12-05T00:12"
    assert moment_from_input("2100-01-01T07:59", shanghai).year == 2099  # UTC is still 2099


@pytest.mark.parametrize(
    ("typed", "zone", "reason"),
    [
        ("0001-01-01T00:00", "Pacific/Kiritimati", "the time must be between 2000 and 2100"),
        ("9999-12-31T23:59", "America/Los_Angeles", "the time must be between 2000 and 2100"),
        ("1999-12-31T23:59", "UTC", "the time must be between 2000 and 2100"),
        ("2100-01-01T08:00", "Asia/Shanghai", "the time must be between 2000 and 2100"),
        ("2026-13-01T00:00", "UTC", "the time is not a date and time"),
        ("", "UTC", "the time is not a date and time"),
    ],
)
def test_a_time_no_entry_may_have_is_refused_with_its_reason_never_an_overflow(
    typed: str, zone: str, reason: str
) -> None:
    with pytest.raises(TimeNotAccepted) as refused:
        moment_from_input(typed, ZoneInfo(zone))
    assert refused.value.reason == reason


def test_the_hint_names_the_zone_and_its_offset_unless_it_is_utc() -> None:
    at = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
    assert zone_name(ZoneInfo("UTC"), at) == "UTC"
    assert zone_name(ZoneInfo("Asia/Shanghai"), at) == "Asia/Shanghai (UTC+8)"
    assert zone_name(ZoneInfo("America/St_Johns"), at) == "America/St_Johns (UTC-2:30)"


@pytest.mark.parametrize(
    ("header", "locale"),
    [
        ("zh-CN,zh;q=0.9,en;q=0.8", Locale.ZH_CN),
        ("zh", Locale.ZH_CN),
        ("zh-Hans-CN", Locale.ZH_CN),
        ("en-US,en;q=0.9,zh-CN;q=0.8", Locale.EN),
        ("fr-FR, zh;q=0.5, en;q=0.4", Locale.ZH_CN),
        ("zh-TW,fr;q=0.8", Locale.EN),
        ("zh-CN;q=0, en;q=0.1", Locale.EN),
        ("zh-CN;q=banana", Locale.EN),
        ("", Locale.EN),
        (None, Locale.EN),
    ],
)
def test_a_page_before_sign_in_speaks_the_browsers_first_language_the_page_knows(
    header: str | None, locale: Locale
) -> None:
    shown = browser_presentation(header)
    assert shown.locale is locale
    assert shown.time_zone.key == "UTC"
