"""Window keys (docs/design.md §5, §1 "derive stable 10-minute UTC window keys")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from timeline_pipeline.domain.window_keys import (
    InvalidPartitionKey,
    WindowRef,
    decode_window_cursor,
    encode_window_cursor,
    parse_partition_key,
    window_start_of,
)

TEN = timedelta(minutes=10)
START = datetime(2026, 11, 29, 10, 20, tzinfo=UTC)


@pytest.mark.parametrize(
    ("occurred", "size", "start"),
    [
        (datetime(2026, 11, 29, 10, 20, tzinfo=UTC), TEN, START),
        (datetime(2026, 11, 29, 10, 29, 59, 999999, tzinfo=UTC), TEN, START),
        (datetime(2026, 11, 29, 10, 30, tzinfo=UTC), TEN, START + TEN),
        (
            datetime(2026, 11, 29, 23, 59, 59, tzinfo=UTC),
            TEN,
            datetime(2026, 11, 29, 23, 50, tzinfo=UTC),
        ),
        # A +08:00 wall clock maps to the same UTC bucket.
        (datetime(2026, 11, 29, 18, 25, tzinfo=timezone(timedelta(hours=8))), TEN, START),
        (
            datetime(2026, 11, 29, 10, 44, tzinfo=UTC),
            timedelta(minutes=15),
            datetime(2026, 11, 29, 10, 30, tzinfo=UTC),
        ),
        (
            datetime(2026, 11, 29, 10, 59, tzinfo=UTC),
            timedelta(hours=1),
            datetime(2026, 11, 29, 10, 0, tzinfo=UTC),
        ),
    ],
)
def test_window_start_is_the_utc_floor(
    occurred: datetime, size: timedelta, start: datetime
) -> None:
    assert window_start_of(occurred, size) == start


def test_a_naive_time_is_refused_rather_than_guessed() -> None:
    with pytest.raises(ValueError, match="timezone"):
        window_start_of(datetime(2026, 11, 29, 10, 20), TEN)


@given(
    st.datetimes(
        min_value=datetime(2000, 1, 1), max_value=datetime(2099, 12, 31), timezones=st.just(UTC)
    )
)
def test_every_moment_lies_in_exactly_its_own_window(moment: datetime) -> None:
    start = window_start_of(moment, TEN)
    assert start <= moment < start + TEN
    assert start.minute % 10 == 0 and start.second == 0 and start.microsecond == 0
    assert window_start_of(start, TEN) == start


@pytest.mark.parametrize(
    ("ref", "key", "source_key"),
    [
        (
            WindowRef("inc-1", "oc_abc", START),
            "inc-1:oc_abc:20261129T1020Z",
            "chat/oc_abc/window/2026-11-29T10:20:00Z",
        ),
        (
            WindowRef("inc-1", "oc_abc", START, "v2"),
            "inc-1:oc_abc:20261129T1020Z:v2",
            "chat/oc_abc/processor/v2/window/2026-11-29T10:20:00Z",
        ),
        (
            WindowRef("INC.2026_11-x", "oc-Z_9", START + timedelta(seconds=30), "prompt.v3"),
            "INC.2026_11-x:oc-Z_9:20261129T102030Z:prompt.v3",
            "chat/oc-Z_9/processor/prompt.v3/window/2026-11-29T10:20:30Z",
        ),
    ],
)
def test_partition_and_state_keys_are_documented_and_reversible(
    ref: WindowRef, key: str, source_key: str
) -> None:
    assert ref.partition_key == key
    assert ref.source_key == source_key
    assert parse_partition_key(key) == ref


_WS = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,40}", fullmatch=True).filter(
    lambda s: "..." not in s
)
_CHAT = st.from_regex(r"[A-Za-z0-9_-]{1,60}", fullmatch=True)
_VERSION = st.none() | st.from_regex(r"[A-Za-z0-9._-]{1,20}", fullmatch=True).filter(
    lambda s: "..." not in s
)


@given(
    _WS,
    _CHAT,
    st.datetimes(
        min_value=datetime(2000, 1, 1), max_value=datetime(2099, 1, 1), timezones=st.just(UTC)
    ),
    _VERSION,
)
def test_partition_keys_round_trip_and_stay_dagster_safe(
    workspace: str, chat: str, moment: datetime, version: str | None
) -> None:
    ref = WindowRef(workspace, chat, window_start_of(moment, TEN), version)
    key = ref.partition_key
    assert parse_partition_key(key) == ref
    assert "|" not in key and "..." not in key
    assert key.count(":") == (3 if version else 2)


@pytest.mark.parametrize(
    ("key", "complaint"),
    [
        ("inc-1:oc_abc", "expected <workspace>:<chat>"),
        ("inc-1:oc_abc:20261129T1020Z:v2:extra", "expected <workspace>:<chat>"),
        ("inc-1:oc_abc:2026-11-29T10:20", "expected YYYYMMDDTHHMMZ"),
        ("inc-1:oc_abc:20261129T1020", "expected YYYYMMDDTHHMMZ"),
        ("inc-1:oc_abc:20261132T1020Z", "no such date"),
        ("inc-1:oc_abc:20261129T102000Z", "write :00 seconds as HHMMZ"),
        ("inc 1:oc_abc:20261129T1020Z", "invalid workspace id"),
        ("inc-1:oc/abc:20261129T1020Z", "invalid chat id"),
        ("inc-1:oc_abc:20261129T1020Z:v...2", "invalid processor version"),
        ("inc-1:oc_abc:20261129T1020Z:", "invalid processor version"),
    ],
)
def test_malformed_partition_keys_are_refused_with_the_reason(key: str, complaint: str) -> None:
    with pytest.raises(InvalidPartitionKey, match=complaint):
        parse_partition_key(key)


def test_a_window_start_with_fractions_of_a_second_is_not_a_window() -> None:
    with pytest.raises(ValueError, match="fractional"):
        WindowRef("inc-1", "oc_abc", START + timedelta(microseconds=1))


def test_window_refs_sort_oldest_first_then_by_identity() -> None:
    refs = [
        WindowRef("b", "oc_1", START),
        WindowRef("a", "oc_2", START + TEN),
        WindowRef("a", "oc_1", START),
    ]
    assert [r.partition_key for r in sorted(refs, key=WindowRef.sort_key)] == [
        "a:oc_1:20261129T1020Z",
        "b:oc_1:20261129T1020Z",
        "a:oc_2:20261129T1030Z",
    ]


@given(
    st.datetimes(
        min_value=datetime(2000, 1, 1), max_value=datetime(2099, 1, 1), timezones=st.just(UTC)
    ),
    st.integers(min_value=1, max_value=2**62),
)
def test_window_cursors_round_trip_and_sort_like_the_keyset(
    moment: datetime, evidence_id: int
) -> None:
    cursor = encode_window_cursor(moment, evidence_id)
    assert decode_window_cursor(cursor) == (moment, evidence_id)


@pytest.mark.parametrize(
    "bad", ["", "2026-11-29T10:20:00Z", "2026-11-29T10:20:00.000000Z/x", "x/1"]
)
def test_malformed_window_cursors_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="malformed"):
        decode_window_cursor(bad)
