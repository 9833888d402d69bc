"""The versioned rerun (README "Prompt/schema upgrade"): it creates state rows only for windows
discovery would take, because the sensor requests every such row as soon as there is room."""

from __future__ import annotations

from datetime import datetime

import pytest
from sqlalchemy import Engine

from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import sync_states
from timeline_pipeline.windows.keys import WindowRef
from timeline_pipeline.windows.planning import DiscoveryLimits
from timeline_pipeline.windows.rerun import Held, RerunResult, create_versioned_rerun, held_back
from timeline_pipeline_tests.windows.support import MIN, T0, WINDOW, post, settings, workspace


def rerun(engine: Engine, config: LarkTimelineSettings, now: datetime) -> RerunResult:
    return create_versioned_rerun(
        engine, workspace_id="inc-1", processor_version="v2", settings=config, now=now
    )


def starts(result: RerunResult) -> list[datetime]:
    return [ref.window_start for ref in result.windows]


def covered_until(engine: Engine, at: datetime) -> None:
    with engine.begin() as conn:
        checkpoint = sync_states.ensure_checkpoint(conn, "inc-1", "oc_chat")
        assert sync_states.advance_checkpoint(
            conn, checkpoint, cursor=None, covered_until=at, metadata={}
        )


def test_a_window_inside_its_close_grace_gets_no_row_until_it_has_closed(engine: Engine) -> None:
    workspace(engine)
    post(engine, [T0 + MIN, T0 + WINDOW + MIN, T0 + 2 * WINDOW + MIN])
    config = settings()  # 10-minute windows, 3-minute close grace
    # 10:00 and 10:10 are closed at 10:25; 10:20 ends at 10:30, closes at 10:33.
    result = rerun(engine, config, T0 + 25 * MIN)
    assert starts(result) == [T0, T0 + WINDOW]
    assert (result.held_open, result.held_collecting, result.held) == (1, 0, 1)
    # Past 10:30 but inside the grace: still held. Once closed, running again adds it.
    assert starts(rerun(engine, config, T0 + 32 * MIN)) == []
    later = rerun(engine, config, T0 + 33 * MIN)
    assert starts(later) == [T0 + 2 * WINDOW]
    assert (later.already_present, later.held) == (2, 0)


def test_with_reconciliation_on_a_window_waits_until_its_chat_is_collected_past_it(
    engine: Engine,
) -> None:
    workspace(engine)
    post(engine, [T0 + MIN, T0 + WINDOW + MIN])
    config = settings(reconciliation_enabled=True)
    now = T0 + 2 * WINDOW + 10 * MIN  # both windows closed
    never = rerun(engine, config, now)
    assert starts(never) == [] and never.held_collecting == 2
    covered_until(engine, T0 + WINDOW)  # the first window's end exactly
    partly = rerun(engine, config, now)
    assert starts(partly) == [T0] and (partly.held_open, partly.held_collecting) == (0, 1)
    covered_until(engine, T0 + 2 * WINDOW + MIN)
    assert starts(rerun(engine, config, now)) == [T0 + WINDOW]


def test_held_windows_do_not_use_up_the_per_call_limit(engine: Engine) -> None:
    workspace(engine)
    post(engine, [T0 + MIN, T0 + WINDOW + MIN, T0 + 2 * WINDOW + MIN])
    result = create_versioned_rerun(
        engine,
        workspace_id="inc-1",
        processor_version="v2",
        settings=settings(),
        now=T0 + 2 * WINDOW + 5 * MIN,
        max_windows=2,
    )
    assert starts(result) == [T0, T0 + WINDOW]
    assert not result.truncated and result.held_open == 1


@pytest.mark.parametrize(
    ("reconciliation", "now", "covered_until", "expected"),
    [
        pytest.param(False, T0 + WINDOW + 2 * MIN, None, Held.OPEN, id="inside the close grace"),
        pytest.param(False, T0 + WINDOW + 3 * MIN, None, None, id="closed at end plus grace"),
        pytest.param(True, T0 + WINDOW + 3 * MIN, None, Held.COLLECTING, id="never collected"),
        pytest.param(
            True, T0 + WINDOW + 3 * MIN, T0 + WINDOW - MIN, Held.COLLECTING,
            id="collected short of its end",
        ),
        pytest.param(True, T0 + WINDOW + 3 * MIN, T0 + WINDOW, None, id="collected to its end"),
    ],
)  # fmt: skip
def test_held_back_applies_discoverys_own_rules_without_touching_the_database(
    reconciliation: bool, now: datetime, covered_until: datetime | None, expected: Held | None
) -> None:
    limits = DiscoveryLimits.from_settings(settings(reconciliation_enabled=reconciliation))
    ref = WindowRef("inc-1", "oc_chat", T0, "v2")

    assert held_back(ref, covered_until, limits, now) is expected
