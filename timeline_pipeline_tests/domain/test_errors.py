"""The refusal family (docs/glossary.md, "Refusal"): each refusal's code and status, declared as
class keywords, and what a subclass inherits when it leaves one out."""

from __future__ import annotations

import pytest

from timeline_pipeline.curation.errors import CurationError, EntryNotFound, SummaryNotFound
from timeline_pipeline.domain.errors import (
    IdempotencyConflict,
    InvalidInput,
    InvalidTransition,
    LegalHoldActive,
    Refused,
    StaleRevision,
)
from timeline_pipeline.lifecycle.errors import (
    ArchiveUnavailable,
    HoldNotFound,
    LifecycleError,
    UnknownDescriptorKey,
)
from timeline_pipeline.maintenance.errors import (
    Busy,
    JobNotFound,
    MaintenanceError,
    TooEarly,
    UnknownProcessor,
)


@pytest.mark.parametrize(
    ("refusal", "code", "status"),
    [
        (Refused, "refused", 400),
        (InvalidInput, "invalid_input", 422),
        (StaleRevision, "stale_revision", 409),
        (InvalidTransition, "invalid_transition", 409),
        (IdempotencyConflict, "idempotency_conflict", 409),
        (LegalHoldActive, "legal_hold_active", 409),
        (CurationError, "curation_error", 400),
        (EntryNotFound, "entry_not_found", 404),
        (SummaryNotFound, "summary_not_found", 404),
        (LifecycleError, "lifecycle_error", 400),
        (UnknownDescriptorKey, "unknown_descriptor", 422),
        (HoldNotFound, "hold_not_found", 404),
        (ArchiveUnavailable, "archive_unavailable", 400),
        (MaintenanceError, "invalid_request", 400),
        (UnknownProcessor, "unknown_type", 400),
        (JobNotFound, "job_not_found", 404),
        (Busy, "busy", 409),
        (TooEarly, "delay", 429),
    ],
)
def test_each_refusal_keeps_its_code_and_status(
    refusal: type[Refused], code: str, status: int
) -> None:
    assert (refusal.code, refusal.status) == (code, status)
    raised = refusal("why")
    assert (raised.code, raised.status, str(raised)) == (code, status, "why")


def test_a_refusal_declared_by_keywords_inherits_what_it_leaves_out() -> None:
    class Gone(LifecycleError, code="gone"): ...

    class GoneForGood(Gone, status=410): ...

    assert (Gone.code, Gone.status) == ("gone", 400)
    assert (GoneForGood.code, GoneForGood.status) == ("gone", 410)
    assert (LifecycleError.code, LifecycleError.status) == ("lifecycle_error", 400)
