"""Paging cursors (`web/cursors.py`): a position signed for one listing of one workspace comes
back exactly, and anything else, forged, foreign or malformed, is refused. The API's paging
through them is in `api/test_api.py`."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from timeline_pipeline.web.cursors import (
    MAX_CURSOR_CHARS,
    CursorCodec,
    InvalidCursor,
    cursor_secret,
)

SECRET = b"0123456789abcdef0123456789abcdef"
AT = datetime(2026, 11, 29, 12, 15, 30, 123456, tzinfo=UTC)


def test_a_position_comes_back_to_the_microsecond() -> None:
    codec = CursorCodec(SECRET)

    cursor = codec.encode("timeline", "inc-1", AT, 42)

    assert codec.decode("timeline", "inc-1", cursor) == (AT, 42)
    assert len(cursor) <= MAX_CURSOR_CHARS


@pytest.mark.parametrize(
    ("listing", "workspace", "secret"),
    [
        ("evidence", "inc-1", SECRET),  # the other listing
        ("timeline", "inc-2", SECRET),  # another workspace
        ("timeline", "inc-1", b"another secret of sixteen bytes+"),  # a key change
    ],
)
def test_a_cursor_minted_elsewhere_is_refused(listing: str, workspace: str, secret: bytes) -> None:
    cursor = CursorCodec(SECRET).encode("timeline", "inc-1", AT, 42)

    with pytest.raises(InvalidCursor, match="not issued for this listing"):
        CursorCodec(secret).decode(listing, workspace, cursor)


@pytest.mark.parametrize("cursor", ["", "no-dot", "a.b.c", "!!!.???", "x" * (MAX_CURSOR_CHARS + 1)])
def test_a_malformed_cursor_is_refused(cursor: str) -> None:
    with pytest.raises(InvalidCursor):
        CursorCodec(SECRET).decode("timeline", "inc-1", cursor)


def test_a_forged_position_fails_the_signature() -> None:
    cursor = CursorCodec(SECRET).encode("timeline", "inc-1", AT, 42)
    forged = CursorCodec(SECRET).encode("timeline", "inc-1", AT, 43).split(".")[0]

    with pytest.raises(InvalidCursor):
        CursorCodec(SECRET).decode("timeline", "inc-1", f"{forged}.{cursor.split('.')[1]}")


def test_the_secret_is_the_configured_one_or_random_per_process() -> None:
    assert cursor_secret("shared between the serve processes") == (
        b"shared between the serve processes"
    )
    assert cursor_secret("") != cursor_secret("")
    assert len(cursor_secret("")) == 32
    with pytest.raises(ValueError, match="at least 16 bytes"):
        CursorCodec(b"short")
