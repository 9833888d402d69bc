"""What a pipeline health measurement found (docs/design.md §9, §12). Pure values.

The measurement (`windows.health`) fills these from the database; the checks
(`windows.health_checks`) and the Dagster asset read them. Ages are derived from the
measurement time, so a stored measurement keeps saying how old things were when it was taken.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import overload

from timeline_pipeline.domain.states import BACKLOG_WINDOW_STATUSES, WINDOW_STATUSES, WindowStatus

__all__ = [
    "ChatPosition",
    "ListedWindow",
    "PipelineHealth",
    "WorkspaceHealth",
]

"""Requested (or created) and not finished: the windows that wait for, or hold, a run."""


@dataclass(frozen=True, slots=True)
class ChatPosition:
    """A chat and a moment: where its oldest uncovered evidence is, or how far it is collected."""

    workspace_id: str
    chat_id: str
    at: datetime


@dataclass(frozen=True, slots=True)
class ListedWindow:
    """A window an operator may have to act on, by the partition key they launch."""

    partition_key: str
    status: str
    attempts: int
    window_start: datetime


@dataclass(frozen=True)
class WorkspaceHealth:
    """One workspace's windows: pending and processing of any age, the others in the horizon."""

    workspace_id: str
    windows: Mapping[str, int] = field(default_factory=dict)
    stale_processing: int = 0
    failed_exhausted: int = 0
    retried_windows: int = 0
    window_retries: int = 0
    oldest_uncovered_at: datetime | None = None
    oldest_collected_until: datetime | None = None
    chats_never_collected: int = 0
    late_evidence_windows: int = 0
    """Finished windows that saw evidence arrive too late to process in their run."""
    late_evidence: int = 0
    """Evidence rows those windows reported as `late_evidence` (never counted as covered)."""

    @property
    def backlog(self) -> int:
        return sum(self.windows.get(status, 0) for status in BACKLOG_WINDOW_STATUSES)


class _Total:
    """A count of `PipelineHealth`: the sum of the workspaces' count of the same name."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, health: None, owner: type | None = None) -> _Total: ...
    @overload
    def __get__(self, health: PipelineHealth, owner: type | None = None) -> int: ...
    def __get__(self, health: PipelineHealth | None, owner: type | None = None) -> _Total | int:
        if health is None:
            return self  # read on the class, as a property answers itself
        return sum(int(getattr(workspace, self._name)) for workspace in health.workspaces)


@dataclass(frozen=True)
class PipelineHealth:
    """The whole pipeline at `measured_at`.

    Windows `pending` and `processing` are counted whatever their age (a versioned rerun may
    queue old windows); `completed`, `ignored` and `failed` ones only when they started within
    the horizon (the ingestion lookback plus one window and its close grace), because older
    windows can no longer change and counting them would scan all history.
    """

    measured_at: datetime
    horizon_start: datetime
    workspaces: Sequence[WorkspaceHealth] = ()
    oldest_uncovered: ChatPosition | None = None
    chats_followed: int = 0
    collection_measured: bool = False
    oldest_collected: ChatPosition | None = None
    summary_measured: bool = False
    summary_pending_windows: int = 0
    oldest_summary_pending_since: datetime | None = None
    stale_windows: Sequence[ListedWindow] = ()
    failed_windows: Sequence[ListedWindow] = ()

    # Pipeline-wide counts: each the sum over the workspaces of their count of the same name.
    backlog = _Total()
    stale_processing = _Total()
    failed_exhausted = _Total()
    retried_windows = _Total()
    window_retries = _Total()
    chats_never_collected = _Total()
    late_evidence_windows = _Total()
    late_evidence = _Total()

    @property
    def windows_by_status(self) -> dict[str, int]:
        total: Counter[str] = Counter()
        for workspace in self.workspaces:
            total.update(workspace.windows)
        return {status: total.get(status, 0) for status in WINDOW_STATUSES}

    @property
    def failed(self) -> int:
        return self.windows_by_status[WindowStatus.FAILED]

    @property
    def oldest_uncovered_age(self) -> timedelta | None:
        """How long the oldest eligible evidence not covered by a finished window has waited."""
        if self.oldest_uncovered is None:
            return None
        return max(timedelta(0), self.measured_at - self.oldest_uncovered.at)

    @property
    def collection_lag(self) -> timedelta | None:
        """How far behind the furthest-behind collected chat's checkpoint is."""
        if self.oldest_collected is None:
            return None
        return max(timedelta(0), self.measured_at - self.oldest_collected.at)

    @property
    def summary_lag(self) -> timedelta | None:
        """How long the longest-waiting finished window has waited for its summary decision."""
        if self.oldest_summary_pending_since is None:
            return None
        return max(timedelta(0), self.measured_at - self.oldest_summary_pending_since)
