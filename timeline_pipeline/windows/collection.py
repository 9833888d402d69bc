"""Whether a window must wait for its chat's collection: the one rule shared by window discovery
and versioned reruns (docs/dagster.md; docs/design.md §6). Pure.

With reconciliation on, a closed window is taken only once its chat's collection checkpoint
covers its end, so that messages whose events were lost are in before synthesis reads the
window. That wait only makes sense while collection still runs: once a workspace leaves
`firing`, ages out of the ingestion lookback or its type is switched off, reconciliation stops,
its checkpoint never advances again, and a window waiting for it would wait for ever. Such a
workspace's windows are taken on what is stored. Discovery (`windows.discovery`) and the rerun
(`windows.rerun.held_back`) both ask `waits_for_collection`, so a rerun of a finished incident
creates exactly the windows discovery would request.
"""

from __future__ import annotations

from datetime import datetime

from timeline_pipeline.domain.workspaces import Workspace
from timeline_pipeline.ingest.eligibility import AUTOMATIC, workspace_skip
from timeline_pipeline.settings import LarkTimelineSettings

__all__ = ["still_collected", "waits_for_collection"]


def still_collected(
    workspace: Workspace | None, settings: LarkTimelineSettings, now: datetime
) -> bool:
    """Whether automatic collection still runs for the workspace, so its checkpoint advances.

    Eligibility (status, age, type) decides what is ingested, not whether stored evidence is
    synthesized; an unknown workspace is not collected.
    """
    return workspace is not None and workspace_skip(workspace, settings, now, AUTOMATIC) is None


def waits_for_collection(
    workspace: Workspace | None,
    settings: LarkTimelineSettings,
    now: datetime,
    *,
    reconciliation_enabled: bool,
) -> bool:
    """Whether a closed window of this workspace waits for its chat's coverage before it is
    taken: only with reconciliation on, and only while collection still runs."""
    return reconciliation_enabled and still_collected(workspace, settings, now)
