"""The refusals of the lifecycle subsystem, each with a stable code (CLI, API, run records).

Every one is raised before anything is written or deleted, or rolls back the batch it stopped.
"""

from __future__ import annotations

from typing import ClassVar


class LifecycleError(Exception):
    """A refusal an operator can cause; its message names the cause and never row content."""

    code: ClassVar[str] = "lifecycle_error"
    http_status: ClassVar[int] = 400


class InvalidLifecycleInput(LifecycleError):
    code = "invalid_input"
    http_status = 422


class UnknownDescriptorKey(LifecycleError):
    code = "unknown_descriptor"
    http_status = 422


class RetentionOverrideOutOfRange(LifecycleError):
    code = "retention_override_out_of_range"


class IdempotencyConflict(LifecycleError):
    code = "idempotency_conflict"
    http_status = 409


class HoldCannotHold(LifecycleError):
    """A hold on a descriptor whose rows belong to no workspace: it would hold nothing."""

    code = "hold_holds_nothing"
    http_status = 422


class HoldNotFound(LifecycleError):
    code = "hold_not_found"
    http_status = 404


class HoldNotActive(LifecycleError):
    code = "hold_not_active"
    http_status = 409


class LegalHoldActive(LifecycleError):
    code = "legal_hold_active"
    http_status = 409


class DeletionModeRefused(LifecycleError):
    code = "deletion_mode_not_executed"


class NotGeneric(LifecycleError):
    code = "delegated_descriptor"


class ArchiveUnavailable(LifecycleError):
    code = "archive_unavailable"


class ArchiveVerifyFailed(LifecycleError):
    code = "archive_verify_failed"
