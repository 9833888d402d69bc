"""The Dagster code location: `workspace.yaml` loads `defs` from this module."""

from __future__ import annotations

import dagster as dg

from timeline_pipeline.orchestration.collection import collection_defs
from timeline_pipeline.orchestration.health import health_defs
from timeline_pipeline.orchestration.lifecycle import lifecycle_defs
from timeline_pipeline.orchestration.resources import default_resources
from timeline_pipeline.orchestration.summary import summary_defs
from timeline_pipeline.orchestration.windows import window_defs

defs = dg.Definitions.merge(
    dg.Definitions(resources=default_resources()),
    collection_defs(),
    window_defs(),
    summary_defs(),
    health_defs(),
    lifecycle_defs(),
)
