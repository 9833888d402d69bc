"""The versioned rerun (docs/runbooks.md, "Prompt/schema upgrade"): the `window_rerun` maintenance
processor creates state rows only for windows discovery would take, because the sensor requests
every such row as soon as there is room."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import datetime, timedelta

import pytest
from sqlalchemy import Engine

from timeline_pipeline.domain.window_keys import WindowRef
from timeline_pipeline.domain.workspaces import Workspace
from timeline_pipeline.maintenance.limits import Limits
from timeline_pipeline.maintenance.processors import default_registry
from timeline_pipeline.maintenance.service import JobService
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import checkpoints
from timeline_pipeline.windows.collection import waits_for_collection
from timeline_pipeline.windows.planning import DiscoveryCursor, DiscoveryLimits
from timeline_pipeline.windows.rerun import Held, held_back
from timeline_pipeline_tests.windows.support import (
    MIN,
    T0,
    WINDOW,
    post,
    settings,
    tick,
    window_states,
    workspace,
)

_keys = itertools.count()
MILLISECOND = timedelta(milliseconds=1)


@dataclass
class RerunResult:
    created: list[datetime]
    held_open: int
    held_collecting: int
    already_present: int
    verify_held_collecting: int = 0
    held_listed: list[dict[str, str]] | None = None

    @property
    def held(self) -> int:
        return self.held_open + self.held_collecting


def rerun(
    engine: Engine, config: LarkTimelineSettings, now: datetime, *, batch_size: int = 100
) -> RerunResult:
    """One `window_rerun` apply job, driven to completion at `now`."""
    before = set(window_states(engine))
    ticks = itertools.count()
    # Each reading 2 ms after the last: the job's 1 ms delay has passed by the next advance.
    service = JobService(
        engine, default_registry(config), clock=lambda: now + next(ticks) * 2 * MILLISECOND
    )
    job, _ = service.create(
        job_type="window_rerun",
        idempotency_key=f"rerun-{next(_keys)}",
        parameters={"workspace_id": "inc-1", "processor_version": "v2"},
        limits=Limits(batch_size, 1, 500, 3000),
        apply=True,
    )
    while job.status == "ready":
        job = service.act(job.id, "advance", revision=job.revision)
    assert job.status == "completed", job.error
    states = window_states(engine)
    created = sorted(
        s.window_start for key, s in states.items() if key not in before and s.window_start
    )
    result = job.result or {}
    return RerunResult(
        created,
        result["held_open"],
        result["held_collecting"],
        result["already_present"],
        result["verify_held_collecting"],
        result.get("held"),
    )


def starts(result: RerunResult) -> list[datetime]:
    return result.created


def covered_until(engine: Engine, at: datetime) -> None:
    with engine.begin() as conn:
        checkpoint = checkpoints.ensure_checkpoint(conn, "inc-1", "oc_chat")
        assert checkpoints.advance_checkpoint(
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


def test_the_verify_pass_names_the_windows_it_held_and_why(engine: Engine) -> None:
    workspace(engine)
    post(engine, [T0 + MIN, T0 + WINDOW + MIN])
    config = settings(reconciliation_enabled=True)
    covered_until(engine, T0 + WINDOW)
    result = rerun(engine, config, T0 + 2 * WINDOW + 10 * MIN)
    assert starts(result) == [T0]
    assert result.verify_held_collecting == 1
    held = WindowRef("inc-1", "oc_chat", T0 + WINDOW, "v2").source_key
    assert result.held_listed == [{"source_key": held, "reason": "collecting"}]


@pytest.mark.parametrize("status", ["recovered", "archived"])
def test_a_rerun_of_a_finished_incident_creates_the_windows_after_its_last_collection(
    engine: Engine, status: str
) -> None:
    """Once a workspace is no longer collected its checkpoint never advances: discovery takes
    its windows on what is stored, and so must the rerun (the usual case after a prompt
    upgrade: the incident is over). Coverage at 10:05, windows 10:00/10:10/10:20, at 11:00."""
    workspace(engine, status=status)
    post(engine, [T0 + MIN, T0 + WINDOW + MIN, T0 + 2 * WINDOW + MIN])
    config = settings(reconciliation_enabled=True)
    covered_until(engine, T0 + 5 * MIN)
    now = T0 + timedelta(hours=1)
    result = rerun(engine, config, now)
    assert starts(result) == [T0, T0 + WINDOW, T0 + 2 * WINDOW]
    assert (result.held_collecting, result.verify_held_collecting) == (0, 0)
    # The same rule as discovery: a tick at the same moment requests all three (default
    # namespace) windows of the same workspace.
    outcome = tick(engine, config, DiscoveryCursor(), now)
    assert sorted(
        r.ref.window_start for r in outcome.requests if r.ref.processor_version is None
    ) == [T0, T0 + WINDOW, T0 + 2 * WINDOW]


def test_an_aged_out_workspace_is_no_longer_collected_so_its_rerun_does_not_wait(
    engine: Engine,
) -> None:
    workspace(engine, created_at=T0 - timedelta(hours=71))
    post(engine, [T0 + MIN, T0 + WINDOW + MIN])
    config = settings(reconciliation_enabled=True)  # 72-hour ingestion lookback
    covered_until(engine, T0 + WINDOW + 5 * MIN)
    # Still firing and inside the lookback: the second window waits for collection.
    assert starts(rerun(engine, config, T0 + 30 * MIN)) == [T0]
    # 73 hours after its creation the workspace has aged out: nothing collects it any more.
    assert starts(rerun(engine, config, T0 + timedelta(hours=2))) == [T0 + WINDOW]


def test_the_rerun_in_batches_of_one_window_gives_what_one_batch_gives(engine: Engine) -> None:
    workspace(engine)
    post(engine, [T0 + MIN, T0 + WINDOW + MIN, T0 + 2 * WINDOW + MIN])
    result = rerun(engine, settings(), T0 + 2 * WINDOW + 5 * MIN, batch_size=1)
    assert starts(result) == [T0, T0 + WINDOW]
    assert result.held_open == 1


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
    config = settings(reconciliation_enabled=reconciliation)
    limits = DiscoveryLimits.from_settings(config)
    ref = WindowRef("inc-1", "oc_chat", T0, "v2")
    firing = Workspace("inc-1", "incident", "firing", None, T0 - timedelta(hours=1), T0)

    assert held_back(ref, covered_until, limits, now, workspace=firing, settings=config) is expected


@pytest.mark.parametrize(
    ("status", "created_at", "expected"),
    [
        pytest.param("firing", T0 - timedelta(hours=1), Held.COLLECTING, id="still collected"),
        pytest.param("recovered", T0 - timedelta(hours=1), None, id="recovered"),
        pytest.param("archived", T0 - timedelta(hours=1), None, id="archived"),
        pytest.param("firing", T0 - timedelta(hours=80), None, id="aged out"),
    ],
)
def test_held_back_waits_for_collection_only_while_the_workspace_is_collected(
    status: str, created_at: datetime, expected: Held | None
) -> None:
    config = settings(reconciliation_enabled=True)
    limits = DiscoveryLimits.from_settings(config)
    ref = WindowRef("inc-1", "oc_chat", T0, "v2")
    ws = Workspace("inc-1", "incident", status, None, created_at, T0)
    now = T0 + timedelta(hours=1)
    covered = T0 + 5 * MIN

    assert held_back(ref, covered, limits, now, workspace=ws, settings=config) is expected
    # The very predicate discovery asks.
    assert waits_for_collection(ws, config, now, reconciliation_enabled=True) is (
        expected is not None
    )
