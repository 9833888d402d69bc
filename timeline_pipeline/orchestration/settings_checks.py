"""Dagster: checks that the deployment runs with settings the pipeline can keep
(docs/metrics.md), evaluated with the `timeline_pipeline_health` asset every five minutes.

* `run_queue_enforces_concurrency_settings`: the instance's run queue carries the limits that
  enforce `maxConcurrentSynthesis` and `maxConcurrentPerWorkspace` (docs/deployment-n-machines.md,
  "Limits"; the comparison is `windows.run_queue`, the home of the run queue's tags, lanes and
  limits). The run queue lives in the daemon's instance, so the check reads the instance the
  health run is in, which is the deployment's.
* `window_size_accepted`: window discovery is not refusing a changed `synthesisWindow`
  (docs/changing.md, "A 15-minute window"; the rule is `windows.planning.window_size_conflict`,
  read from the same polling statement the sensor uses). The sensor only skips its ticks and
  logs; this check makes the refusal visible where operators look.

Both warn (they never block): a deployment may differ on purpose for a while, and the warning
says what and why. No `from __future__ import annotations`: Dagster reads the annotations of
checks at definition time.
"""

from datetime import UTC, datetime

import dagster as dg

from timeline_pipeline.db.engine import connection
from timeline_pipeline.orchestration.health import HEALTH_KEY
from timeline_pipeline.orchestration.resources import DatabaseResource, TimelineSettingsResource
from timeline_pipeline.store import window_states
from timeline_pipeline.windows.discovery import UNFINISHED_LIMIT
from timeline_pipeline.windows.planning import window_size_conflict
from timeline_pipeline.windows.run_queue import queue_limit_problems

QUEUE_LIMITS_CHECK = "run_queue_enforces_concurrency_settings"
WINDOW_SIZE_CHECK = "window_size_accepted"


@dg.asset_check(
    asset=HEALTH_KEY,
    name=QUEUE_LIMITS_CHECK,
    description=(
        "The instance's run queue carries the tag limits that enforce maxConcurrentSynthesis, "
        "one run per lane and maxConcurrentPerWorkspace, and its default pool limit equals "
        "maxConcurrentSynthesis."
    ),
)
def run_queue_enforces_concurrency_settings(
    context: dg.AssetCheckExecutionContext, timeline_settings: TimelineSettingsResource
) -> dg.AssetCheckResult:
    settings = timeline_settings.timeline
    config = context.instance.get_concurrency_config()
    queue = config.run_queue_config
    problems = queue_limit_problems(
        None if queue is None else list(queue.tag_concurrency_limits),
        synthesis=settings.max_concurrent_synthesis,
        per_workspace=settings.max_concurrent_per_workspace,
        default_pool_limit=config.pool_config.default_pool_limit,
    )
    for problem in problems:
        context.log.warning("%s: %s", QUEUE_LIMITS_CHECK, problem)
    return dg.AssetCheckResult(
        passed=not problems,
        severity=dg.AssetCheckSeverity.WARN,
        description="; ".join(problems) or "the run queue enforces the concurrency settings",
        metadata={
            "max_concurrent_synthesis": settings.max_concurrent_synthesis,
            "max_concurrent_per_workspace": settings.max_concurrent_per_workspace,
            "problems": len(problems),
        },
    )


@dg.asset_check(
    asset=HEALTH_KEY,
    name=WINDOW_SIZE_CHECK,
    description=(
        "Window discovery accepts synthesisWindow: no unfinished or recent window was made at "
        "another size (docs/changing.md, 'A 15-minute window')."
    ),
)
def window_size_accepted(
    context: dg.AssetCheckExecutionContext,
    database: DatabaseResource,
    timeline_settings: TimelineSettingsResource,
) -> dg.AssetCheckResult:
    settings = timeline_settings.timeline
    with connection(database.engine) as conn:
        poll = window_states.poll_unfinished_windows(
            conn, max_attempts=settings.synthesis_window_max_attempts, limit=UNFINISHED_LIMIT
        )
    refused = window_size_conflict(
        settings.synthesis_window,
        poll.unfinished,
        poll.latest,
        datetime.now(UTC),
        settings.ingestion_lookback,
    )
    if refused is not None:
        context.log.warning("%s: %s", WINDOW_SIZE_CHECK, refused)
    return dg.AssetCheckResult(
        passed=refused is None,
        severity=dg.AssetCheckSeverity.WARN,
        description=refused or "window discovery accepts synthesisWindow",
        metadata={
            "configured_seconds": int(settings.synthesis_window.total_seconds()),
            "latest_window_seconds": poll.latest_seconds or 0,
        },
    )


def settings_checks_defs() -> dg.Definitions:
    return dg.Definitions(
        asset_checks=[run_queue_enforces_concurrency_settings, window_size_accepted]
    )
