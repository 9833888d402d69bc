"""What the job service refuses, each with the HTTP status the listener answers and a code.

Every refusal changes nothing. The message is one line for the operator and never quotes
parameters beyond the names of the keys at fault.
"""

from __future__ import annotations

from typing import Any


class MaintenanceError(Exception):
    """A refused request; `status` and `code` are what the listener answers."""

    status = 400
    code = "invalid_request"

    def __init__(self, message: str, *, job: Any = None) -> None:
        super().__init__(message)
        self.job = job


class InvalidInput(MaintenanceError):
    """Limits out of range, parameters that do not validate, a malformed body."""

    code = "invalid_input"


class UnknownProcessor(MaintenanceError):
    """No processor of this type (and version) is registered: fail closed."""

    code = "unknown_type"


class JobNotFound(MaintenanceError):
    status = 404
    code = "job_not_found"


class IdempotencyConflict(MaintenanceError):
    """The key is taken by a job created from different input."""

    status = 409
    code = "idempotency_conflict"


class OpenJobExists(MaintenanceError):
    """A ready or paused job of the same type and scope exists; finish or cancel it first."""

    status = 409
    code = "open_job_exists"


class LegalHoldActive(MaintenanceError):
    """An apply job of a processor that rewrites content, in a workspace a hold reaches."""

    status = 409
    code = "legal_hold_active"


class StaleRevision(MaintenanceError):
    """The caller's revision is not the job's: nothing was done; the body has the job."""

    status = 409
    code = "stale_revision"


class InvalidTransition(MaintenanceError):
    """The action does not apply to the job's status (e.g. resume a completed job)."""

    status = 409
    code = "invalid_transition"


class Busy(MaintenanceError):
    """A short batch holds the job row: retry with backoff. The body has no job."""

    status = 409
    code = "busy"


class TooEarly(MaintenanceError):
    """The job's delay since its last batch has not passed yet."""

    status = 429
    code = "delay"

    def __init__(self, message: str, *, job: Any = None, retry_after_ms: int = 0) -> None:
        super().__init__(message, job=job)
        self.retry_after_ms = retry_after_ms


class ProcessorRefused(Exception):
    """A processor's preflight or state check failed: the job pauses with this reason."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
