"""An explicit full regeneration under a versioned namespace (docs/design.md §5, §11): the rule
of which windows it may create now.

After a prompt or schema upgrade an operator reruns a workspace's windows as
`chat/<chat_id>/processor/<version>/window/<start>`: new state rows beside the old ones, so the
default namespace keeps its history and the rerun is bounded, resumable and auditable. The rerun
itself is the `window_rerun` maintenance processor (`maintenance.processors.window_rerun`), which
the Dagster job `rerun_windows` and the maintenance driver both drive in checkpointed batches;
the discovery sensor then requests the new rows' runs, oldest first and within the backlog
limits, like any other window.

A state row is requested by the sensor as soon as there is room, so only windows that discovery
itself would take get one: closed (`window_end + synthesisWindowCloseGrace`) and, with
reconciliation on and the workspace still collected, collected past their end. `held_back`
applies discovery's own rules (`windows.planning.is_closed`, `collection_covers`, and
`windows.collection.waits_for_collection`, the very predicate discovery asks): a rerun of a
finished incident (recovered, archived or aged out, so its checkpoint no longer advances) takes
every closed window on what is stored, like discovery does. The windows it holds back are
counted, in the scan and again in the verify pass, and running the rerun again later adds them
(existing rows are kept).
"""

from __future__ import annotations

import enum
from datetime import datetime

from timeline_pipeline.domain.window_keys import WindowRef
from timeline_pipeline.domain.workspaces import Workspace
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.windows.collection import waits_for_collection
from timeline_pipeline.windows.planning import DiscoveryLimits, collection_covers, is_closed

__all__ = ["Held", "held_back"]


class Held(enum.Enum):
    """Why discovery would not take a window yet, so the rerun leaves it for a later call."""

    OPEN = "open"
    """Not closed yet: its end plus the close grace is still ahead."""
    COLLECTING = "collecting"
    """Closed, but its chat history is not collected past its end yet."""


def held_back(
    ref: WindowRef,
    covered_until: datetime | None,
    limits: DiscoveryLimits,
    now: datetime,
    *,
    workspace: Workspace | None,
    settings: LarkTimelineSettings,
) -> Held | None:
    """Pure: whether discovery would hold this window back now (its own rules), and why.

    `workspace` is the window's workspace as stored now: whether it is still collected decides
    whether the window waits for coverage at all (`waits_for_collection`).
    """
    end = ref.window_end(limits.window)
    if not is_closed(end, now, limits.close_grace):
        return Held.OPEN
    waits = waits_for_collection(
        workspace, settings, now, reconciliation_enabled=limits.reconciliation_enabled
    )
    if not collection_covers(end, covered_until, waits):
        return Held.COLLECTING
    return None
