"""The refusals only the lifecycle subsystem makes, each with a stable code (CLI, API, run
records); invalid input, an idempotency conflict and a legal hold are the shared family in
`domain/errors.py` (docs/glossary.md, "Refusal").

Every one is raised before anything is written or deleted, or rolls back the batch it stopped.
"""

from __future__ import annotations

from timeline_pipeline.domain.errors import Refused


class LifecycleError(Refused, code="lifecycle_error"):
    """A refusal an operator can cause; its message names the cause and never row content."""


class UnknownDescriptorKey(LifecycleError, code="unknown_descriptor", status=422): ...


class RetentionOverrideOutOfRange(LifecycleError, code="retention_override_out_of_range"): ...


class HoldCannotHold(LifecycleError, code="hold_holds_nothing", status=422):
    """A hold on a descriptor whose rows belong to no workspace: it would hold nothing."""


class HoldNotFound(LifecycleError, code="hold_not_found", status=404): ...


class HoldNotActive(LifecycleError, code="hold_not_active", status=409): ...


class DeletionModeRefused(LifecycleError, code="deletion_mode_not_executed"): ...


class NotGeneric(LifecycleError, code="delegated_descriptor"): ...


class ArchiveUnavailable(LifecycleError, code="archive_unavailable"): ...


class ArchiveVerifyFailed(LifecycleError, code="archive_verify_failed"): ...
