"""Dagster: the check that the instance's run queue enforces the concurrency settings
(docs/scaling.md, "Limits"; the comparison is `windows.queue_limits`).

An asset check of `timeline_pipeline_health`, evaluated with it every five minutes: the run
queue lives in the daemon's instance, so the check reads the instance the health run is in,
which is the deployment's. It warns (it never blocks): a deployment can run with limits that
differ on purpose, and the warning says which and why it matters.

No `from __future__ import annotations`: Dagster reads the annotations of checks at definition
time.
"""

import dagster as dg

from timeline_pipeline.orchestration.health import HEALTH_KEY
from timeline_pipeline.orchestration.resources import TimelineSettingsResource
from timeline_pipeline.windows.queue_limits import queue_limit_problems

QUEUE_LIMITS_CHECK = "run_queue_enforces_concurrency_settings"


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


def queue_limits_defs() -> dg.Definitions:
    return dg.Definitions(asset_checks=[run_queue_enforces_concurrency_settings])
