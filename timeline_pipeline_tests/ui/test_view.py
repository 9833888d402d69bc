"""What the page calls things: source labels, filters, evidence items, the listing version."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from timeline_pipeline.domain.evidence import EvidenceRow
from timeline_pipeline.i18n.locales import Presentation
from timeline_pipeline.ui.view import (
    evidence_item,
    moment_from_input,
    parse_filters,
    source_label,
    timeline_version,
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
