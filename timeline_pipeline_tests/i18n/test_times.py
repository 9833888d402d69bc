"""Stored UTC moments as a person in the workspace's zone reads them."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from timeline_pipeline.i18n.locales import Locale
from timeline_pipeline.i18n.times import show_datetime, show_time, spans_days, zone_label

SHANGHAI = ZoneInfo("Asia/Shanghai")
UTC_ZONE = ZoneInfo("UTC")
LATE = datetime(2026, 12, 4, 15, 50, tzinfo=UTC)  # 23:50 in Shanghai
NEXT = datetime(2026, 12, 4, 16, 20, tzinfo=UTC)  # 00:20 the next day in Shanghai


def test_a_time_is_shown_in_the_zone_with_its_offset() -> None:
    assert show_time(LATE, SHANGHAI, Locale.ZH_CN) == "23:50 UTC+8"
    assert show_time(LATE, UTC_ZONE, Locale.EN) == "15:50 UTC"
    assert show_time(LATE, UTC_ZONE, Locale.EN, seconds=True) == "15:50:00 UTC"


def test_an_incident_across_local_midnight_spans_days_only_where_it_does() -> None:
    assert spans_days([LATE, NEXT], SHANGHAI)
    assert not spans_days([LATE, NEXT], UTC_ZONE)


def test_the_date_is_in_the_locale_and_the_zone() -> None:
    assert show_time(NEXT, SHANGHAI, Locale.ZH_CN, with_date=True) == "2026年12月5日 00:20 UTC+8"
    assert show_datetime(NEXT, UTC_ZONE, Locale.EN) == "2026-12-04 16:20 UTC"


@pytest.mark.parametrize(
    ("zone", "label"),
    [("Asia/Kolkata", "UTC+5:30"), ("America/St_Johns", "UTC-3:30"), ("Europe/London", "UTC")],
)
def test_zone_labels_are_offsets_not_ambiguous_abbreviations(zone: str, label: str) -> None:
    assert zone_label(LATE, ZoneInfo(zone)) == label


def test_a_naive_moment_is_read_as_utc_like_the_stores_keep_it() -> None:
    naive = LATE.replace(tzinfo=None)
    assert show_time(naive, SHANGHAI, Locale.EN) == "23:50 UTC+8"
