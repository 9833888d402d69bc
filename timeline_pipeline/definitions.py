"""The Dagster code location: `workspace.yaml` loads `defs` from this module.

Every resource is declared here, once. The two choices a deployment makes are visible below:

* local or production database: with TIMELINE_DATABASE_URL set, the database it names, read by
  Dagster when a run starts (`dg.EnvVar`); unset, the local default the CLI uses too;
* Claude or rules: with ANTHROPIC_API_KEY set, Claude writes the drafts and the summary (key
  and ANTHROPIC_BASE_URL read at run start, `dg.EnvVar`); unset, the rule-based synthesizer and
  the deterministic summarizer run (docs/configuration.md);
* in-process or Celery synthesis: with TIMELINE_EXECUTOR=celery, each window's synthesis step
  runs on a `dagster-celery` worker, sent over the broker TIMELINE_CELERY_BROKER_URL (read at
  run start) to the queue TIMELINE_CELERY_QUEUE; unset, it runs in the run's own process
  (docs/deployment.md).

Of the secrets only whether a variable is set is read at import, never the value; the executor
and queue names are read at import.
"""

from __future__ import annotations

import os

import dagster as dg

from timeline_pipeline.orchestration.collection import collection_defs
from timeline_pipeline.orchestration.health import health_defs
from timeline_pipeline.orchestration.lifecycle import lifecycle_defs
from timeline_pipeline.orchestration.maintenance import maintenance_defs
from timeline_pipeline.orchestration.report import report_defs
from timeline_pipeline.orchestration.resources import DatabaseResource, TimelineSettingsResource
from timeline_pipeline.orchestration.scale_out import (
    DEFAULT_QUEUE,
    EXECUTOR_ENV,
    QUEUE_ENV,
    celery_synthesis_executor,
    executor_choice,
    scale_out_defs,
)
from timeline_pipeline.orchestration.settings_checks import settings_checks_defs
from timeline_pipeline.orchestration.summary import SummarizerResource, summary_defs
from timeline_pipeline.orchestration.windows import SynthesizerResource, window_defs
from timeline_pipeline.settings import DEFAULT_DATABASE_URL


def _is_set(name: str) -> bool:
    return bool(os.environ.get(name))


PRODUCTION_DATABASE = _is_set("TIMELINE_DATABASE_URL")
USE_CLAUDE = _is_set("ANTHROPIC_API_KEY")
SYNTHESIS_ON_CELERY = executor_choice(os.environ.get(EXECUTOR_ENV)) == "celery"

if PRODUCTION_DATABASE:
    database = DatabaseResource(url=dg.EnvVar("TIMELINE_DATABASE_URL"))
else:
    database = DatabaseResource(url=DEFAULT_DATABASE_URL)

if USE_CLAUDE:
    claude_base_url = dg.EnvVar("ANTHROPIC_BASE_URL") if _is_set("ANTHROPIC_BASE_URL") else None
    synthesizer = SynthesizerResource(
        api_key=dg.EnvVar("ANTHROPIC_API_KEY"), base_url=claude_base_url
    )
    summarizer = SummarizerResource(
        api_key=dg.EnvVar("ANTHROPIC_API_KEY"), base_url=claude_base_url
    )
else:
    # No key given here nor in the environment: both build their rule-based fallback.
    synthesizer = SynthesizerResource()
    summarizer = SummarizerResource()

scale_out: list[dg.Definitions] = []
if SYNTHESIS_ON_CELERY:
    queue = os.environ.get(QUEUE_ENV) or DEFAULT_QUEUE
    synthesis_executor = celery_synthesis_executor(queue)
    scale_out.append(scale_out_defs(queue))
else:
    synthesis_executor = dg.in_process_executor

defs = dg.Definitions.merge(
    dg.Definitions(
        resources={"database": database, "timeline_settings": TimelineSettingsResource()}
    ),
    collection_defs(),
    window_defs(synthesizer=synthesizer, synthesis_executor=synthesis_executor),
    summary_defs(summarizer=summarizer),
    report_defs(),
    health_defs(),
    settings_checks_defs(),
    lifecycle_defs(),
    maintenance_defs(),
    *scale_out,
)
