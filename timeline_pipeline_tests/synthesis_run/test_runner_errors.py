"""Any error inside a window ends that window's attempt and releases it (docs/design.md §11,
"error inside a window"): a database `OperationalError` at commit, injected at SQLAlchemy's
commit seam on SQLite and PostgreSQL, never leaves the window `processing` under the lease of
a run that goes on working."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from sqlalchemy import Engine

from timeline_pipeline.retry import RetryPolicy
from timeline_pipeline.synthesis_run.runner import RunStatus
from timeline_pipeline_tests.synthesis_run.commit_faults import (
    failing_commits,
    fails_window,
    finishes_window,
    writes_entries,
)
from timeline_pipeline_tests.synthesis_run.test_runner import (
    NOW,
    REF,
    Recording,
    all_entries,
    chat,
    current_state,
    runner,
)
from timeline_pipeline_tests.windows.support import settings

CHUNKED = {"evidence_batch_limit": 4}


@pytest.mark.parametrize(
    ("where", "committed"), [(writes_entries, 0), (finishes_window, 2)], ids=["chunk", "finish"]
)
def test_a_database_error_at_commit_fails_the_attempt_and_releases_the_window(
    engine: Engine, where: Callable[[str], bool], committed: int
) -> None:
    chat(engine, 8)
    config = settings(retry_backoff_base="10ms", retry_backoff_cap="40ms", **CHUNKED)
    with failing_commits(engine, where) as fault:
        report = runner(engine, Recording(engine), config).run(REF, owner="run-1")
    assert fault.failed == 1

    assert report.status is RunStatus.FAILED
    assert report.reason is not None and "OperationalError" in report.reason
    state = current_state(engine)
    assert state is not None
    # Released, with an attempt used and the policy's backoff: the sensor retries it.
    assert (state.status, state.lease_owner, state.attempt_count) == ("failed", None, 1)
    ceiling = RetryPolicy.for_model_calls(config).ceiling(1)
    assert state.next_attempt_at == NOW + timedelta(seconds=ceiling)
    assert state.last_error is not None and "OperationalError" in state.last_error
    # The diagnostic names the error, never the text of a message or a statement.
    assert "server closed" not in state.last_error and "rolled back" not in state.last_error
    assert "INSERT" not in state.last_error and "UPDATE" not in state.last_error
    # What committed before the error stays: the failed transaction rolled back alone.
    assert int(state.metadata.get("chunk_count", 0) or 0) == committed

    retried = runner(engine, Recording(engine), config).run(REF, owner="run-2")
    assert retried.status is RunStatus.COMPLETED
    assert retried.attempt == 2
    assert all_entries(engine)


def test_a_window_that_cannot_be_released_is_reported_and_left_to_the_stale_timeout(
    engine: Engine,
) -> None:
    """When the release fails as well (the database is still away), the run reports the window
    failed and goes on; its lease then expires like a dead worker's."""
    chat(engine, 3)
    with failing_commits(engine, lambda s: writes_entries(s) or fails_window(s), times=2):
        report = runner(engine, Recording(engine)).run(REF, owner="run-1")
    assert report.status is RunStatus.FAILED
    assert report.reason is not None and "could not be released" in report.reason
    state = current_state(engine)
    assert state is not None and (state.status, state.lease_owner) == ("processing", "run-1")
