from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from timeline_pipeline.durations import DurationError, format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30s", timedelta(seconds=30)),
        ("2m", timedelta(minutes=2)),
        ("72h", timedelta(hours=72)),
        ("1h30m", timedelta(minutes=90)),
        ("250ms", timedelta(milliseconds=250)),
        ("1d", timedelta(days=1)),
        ("0", timedelta(0)),
        (" 10M ", timedelta(minutes=10)),
    ],
)
def test_parses_the_spelling_the_design_uses(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "10", "-5m", "5 m", "m5", "1.5h", "10 minutes", "5x"])
def test_refuses_anything_else(text: str) -> None:
    with pytest.raises(DurationError):
        parse_duration(text)


@given(st.integers(min_value=0, max_value=10**9))
def test_format_round_trips(millis: int) -> None:
    value = timedelta(milliseconds=millis)
    assert parse_duration(format_duration(value)) == value


def test_formats_compactly() -> None:
    assert format_duration(timedelta(hours=72)) == "3d"
    assert format_duration(timedelta(minutes=90)) == "1h30m"
    assert format_duration(timedelta(seconds=30)) == "30s"
