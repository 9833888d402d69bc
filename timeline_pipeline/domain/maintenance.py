"""The statuses and phases of a maintenance job (docs/maintenance.md).

One definition for the table's check constraint, its one-open-job partial unique index and the
job service's transitions. `StrEnum` members compare equal to the stored strings.
"""

from __future__ import annotations

from enum import StrEnum


class MaintenanceStatus(StrEnum):
    """A maintenance job: advanceable, stopped by an operator or an error, or finished for good."""

    READY = "ready"
    PAUSED = "paused"
    COMPLETED = "completed"
    CANCELLED = "cancelled"


class MaintenancePhase(StrEnum):
    """An apply job scans (and changes) first, then verifies with a fresh, independent pass."""

    SCAN = "scan"
    VERIFY = "verify"


OPEN_MAINTENANCE_STATUSES: tuple[MaintenanceStatus, ...] = (
    MaintenanceStatus.READY,
    MaintenanceStatus.PAUSED,
)
"""Every non-terminal status: at most one job per type and scope may be in one of these."""
