"""What only the job service refuses, each with the HTTP status the listener answers and a code;
the refusals every package shares (invalid input, an idempotency conflict, a legal hold, a stale
revision, an invalid transition) are the family in `domain/errors.py` (docs/glossary.md,
"Refusal").

Every refusal changes nothing. The message is one line for the operator and never quotes
parameters beyond the names of the keys at fault.
"""

from __future__ import annotations

from typing import Any

from timeline_pipeline.domain.errors import Refused


class MaintenanceError(Refused, code="invalid_request", status=400):
    """A refusal only the job service makes; `status` and `code` are what the listener answers,
    `current` the job when the caller needs its revision."""


class UnknownProcessor(MaintenanceError, code="unknown_type"):
    """No processor of this type (and version) is registered: fail closed."""


class JobNotFound(MaintenanceError, code="job_not_found", status=404): ...


class OpenJobExists(MaintenanceError, code="open_job_exists", status=409):
    """A ready or paused job of the same type and scope exists; finish or cancel it first."""


class Busy(MaintenanceError, code="busy", status=409):
    """A short batch holds the job row: retry with backoff. The body has no job."""


class TooEarly(MaintenanceError, code="delay", status=429):
    """The job's delay since its last batch has not passed yet."""

    def __init__(self, message: str, *, current: Any = None, retry_after_ms: int = 0) -> None:
        super().__init__(message, current=current)
        self.retry_after_ms = retry_after_ms


class ProcessorRefused(Exception):
    """A processor's preflight or state check failed: the job pauses with this reason."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
