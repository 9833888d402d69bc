"""The Dagster code location: `workspace.yaml` loads `defs` from this module."""

from __future__ import annotations

import dagster as dg

from timeline_pipeline.orchestration.resources import default_resources

defs = dg.Definitions(resources=default_resources())
