"""Window size as data (docs/changing.md, "A 15-minute window"; docs/design.md §5): every window
state records its size, and discovery refuses to make windows of a new `synthesisWindow` while
windows of the old size are unfinished or end within the ingestion lookback. On SQLite and
PostgreSQL.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import Engine, select, update

from timeline_pipeline.db.schema import workspace_timeline_sync_states as ss
from timeline_pipeline.windows.planning import DiscoveryCursor
from timeline_pipeline_tests.windows.support import (
    MIN,
    T0,
    finish,
    keys,
    post,
    settings,
    tick,
    window_states,
    workspace,
)

AFTER = T0 + timedelta(hours=2)
LOOKBACK = timedelta(hours=72)


def rows(engine: Engine) -> list[tuple[Any, ...]]:
    """Every sync-state row, whole: what "nothing written" compares."""
    with engine.connect() as conn:
        return [tuple(row) for row in conn.execute(select(ss).order_by(ss.c.id))]


def test_a_fresh_database_at_15_minutes_makes_15_minute_windows(engine: Engine) -> None:
    workspace(engine)
    post(engine, [T0 + MIN, T0 + 12 * MIN, T0 + 16 * MIN])
    outcome = tick(engine, settings(synthesis_window="15m"), DiscoveryCursor(), AFTER)
    assert outcome.skip_reason is None
    assert keys(outcome) == ["inc-1:oc_chat:20261129T1000Z", "inc-1:oc_chat:20261129T1015Z"]
    states = window_states(engine)
    assert {key: s.window_seconds for key, s in states.items()} == {
        "inc-1:oc_chat:20261129T1000Z": 900,
        "inc-1:oc_chat:20261129T1015Z": 900,
    }
    assert all(s.window_end - s.window_start == timedelta(minutes=15) for s in states.values())  # type: ignore[operator]


def test_the_default_window_records_600_seconds(engine: Engine) -> None:
    workspace(engine)
    post(engine, [T0 + MIN])
    outcome = tick(engine, settings(), DiscoveryCursor(), AFTER)
    assert outcome.skip_reason is None
    assert [s.window_seconds for s in window_states(engine).values()] == [600]


def test_unfinished_10_minute_windows_refuse_a_15_minute_setting(engine: Engine) -> None:
    workspace(engine)
    post(engine, [T0 + MIN, T0 + 12 * MIN])
    first = tick(engine, settings(), DiscoveryCursor(), AFTER)
    assert len(first.requests) == 2  # requested, not run: pending
    post(engine, [T0 + 25 * MIN])
    before = rows(engine)

    refused = tick(engine, settings(synthesis_window="15m"), first.cursor, AFTER + MIN)

    assert refused.requests == []
    assert refused.skip_reason is not None
    assert "synthesisWindow is 15m" in refused.skip_reason
    assert "2 unfinished window(s) were made at 10m" in refused.skip_reason
    assert "back to 10m" in refused.skip_reason
    assert "\n" not in refused.skip_reason
    assert rows(engine) == before  # nothing written
    assert refused.cursor == first.cursor


def test_finished_10_minute_windows_refuse_until_the_lookback_has_passed(engine: Engine) -> None:
    workspace(engine)
    post(engine, [T0 + MIN])
    first = tick(engine, settings(), DiscoveryCursor(), AFTER)
    (request,) = first.requests
    finish(engine, request.state, AFTER)
    post(engine, [T0 + 40 * MIN])
    before = rows(engine)

    refused = tick(engine, settings(synthesis_window="15m"), first.cursor, AFTER + MIN)
    assert refused.skip_reason is not None
    assert "the latest window was made at 10m" in refused.skip_reason
    assert "ingestionLookback (3d)" in refused.skip_reason
    assert rows(engine) == before

    # Still 10 minutes: the finished window is no reason to refuse anything.
    same = tick(engine, settings(), first.cursor, AFTER + MIN)
    assert same.skip_reason is None
    assert keys(same) == ["inc-1:oc_chat:20261129T1040Z"]

    # Once the last 10-minute window ended more than the lookback ago, 15 minutes is taken.
    later = T0 + 10 * MIN + LOOKBACK + timedelta(hours=1)
    finish(engine, same.requests[0].state, AFTER + MIN)
    post(engine, [later - 30 * MIN], prefix="om_later")
    late_window = tick(engine, settings(synthesis_window="15m"), DiscoveryCursor(), later)
    assert late_window.skip_reason is None
    assert [r.state.window_seconds for r in late_window.requests] == [900]


def test_rows_from_before_sizes_were_recorded_count_as_10_minutes(engine: Engine) -> None:
    workspace(engine)
    post(engine, [T0 + MIN])
    first = tick(engine, settings(), DiscoveryCursor(), AFTER)
    with engine.begin() as conn:
        conn.execute(update(ss).values(window_seconds=None))
    before = rows(engine)

    assert tick(engine, settings(), first.cursor, AFTER + MIN).skip_reason is None
    refused = tick(engine, settings(synthesis_window="5m"), first.cursor, AFTER + MIN)
    assert refused.skip_reason is not None
    assert "1 unfinished window(s) were made at 10m" in refused.skip_reason
    assert rows(engine) == before
