"""Stored UTC moments as a person in the workspace's zone reads them (docs/i18n.md).

Pure. Times stay UTC in every table, the API's JSON and Dagster's metadata; only text a person
reads is shown in the workspace's zone, with its offset named, and with the date wherever the
incident spans more than one local day (an incident across midnight otherwise reads as going
back in time).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from babel.dates import format_date

from timeline_pipeline.i18n.locales import Locale

__all__ = ["local", "show_date", "show_datetime", "show_time", "spans_days", "zone_label"]


def local(moment: datetime, zone: ZoneInfo) -> datetime:
    """`moment` (aware) in `zone`; a naive moment is taken as UTC, as the stores keep it."""
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return aware.astimezone(zone)


def zone_label(moment: datetime, zone: ZoneInfo) -> str:
    """`UTC` in UTC, else the offset at that moment (`UTC+8`, `UTC-3:30`): unambiguous in every
    language, where an abbreviation such as `CST` names three zones."""
    offset = local(moment, zone).utcoffset()
    if zone.key == "UTC" or offset is None:
        return "UTC"
    minutes = int(offset.total_seconds() // 60)
    if minutes == 0:
        return "UTC"
    sign = "+" if minutes > 0 else "-"
    hours, rest = divmod(abs(minutes), 60)
    return f"UTC{sign}{hours}" + (f":{rest:02d}" if rest else "")


def spans_days(moments: Iterable[datetime], zone: ZoneInfo) -> bool:
    """Whether the moments fall on more than one day in `zone`."""
    return len({local(moment, zone).date() for moment in moments}) > 1


def show_date(moment: datetime, zone: ZoneInfo, locale: Locale) -> str:
    """The local date: ISO 8601 in English (`2026-12-04`, what the product has always shown
    there), the locale's own medium form elsewhere (`2026年12月4日`)."""
    day = local(moment, zone).date()
    if locale is Locale.EN:
        return day.isoformat()
    return format_date(day, format="medium", locale=locale.babel_name)


def show_time(
    moment: datetime,
    zone: ZoneInfo,
    locale: Locale,
    *,
    with_date: bool = False,
    seconds: bool = False,
) -> str:
    """`14:08 UTC+8` (24-hour in every locale, as incident timelines are written), preceded by
    the local date when `with_date`."""
    at = local(moment, zone)
    clock = at.strftime("%H:%M:%S" if seconds else "%H:%M")
    text = f"{clock} {zone_label(moment, zone)}"
    return f"{show_date(moment, zone, locale)} {text}" if with_date else text


def show_datetime(moment: datetime, zone: ZoneInfo, locale: Locale) -> str:
    """A moment with its date always (an expiry, an export's time)."""
    return show_time(moment, zone, locale, with_date=True)
