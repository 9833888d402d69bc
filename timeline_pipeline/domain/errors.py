"""The refusal family: one class per reason a request is refused, shared by every package that
refuses (curation, maintenance, lifecycle) and every edge that answers (docs/glossary.md,
"Refusal").

A refusal is raised before anything is written, or inside the transaction that it rolls back,
so a refused request changes nothing. `code` is the short, stable `reason` clients branch on;
`status` is the HTTP status an edge answers when it reports the refusal as it is. An edge with
its own published table may answer differently (the public API's curation table in
`api/errors.py`, the maintenance listener in docs/maintenance.md); the code never changes.
Pure: no I/O.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "IdempotencyConflict",
    "InvalidInput",
    "InvalidTransition",
    "LegalHoldActive",
    "Refused",
    "StaleRevision",
]


class Refused(Exception):
    """Base of every refusal. `current` is the record as it stands when the caller needs it to
    decide again (a maintenance job, with its revision); most refusals carry none."""

    code: ClassVar[str] = "refused"
    status: ClassVar[int] = 400

    def __init_subclass__(
        cls, *, code: str | None = None, status: int | None = None, **kwargs: Any
    ) -> None:
        """A refusal is declared by its code and status as class keywords
        (`class HoldNotFound(LifecycleError, code="hold_not_found", status=404)`); one left out
        is inherited from the base."""
        super().__init_subclass__(**kwargs)
        if code is not None:
            cls.code = code
        if status is not None:
            cls.status = status

    def __init__(self, message: str, *, current: Any = None) -> None:
        super().__init__(message)
        self.current = current


class InvalidInput(Refused, code="invalid_input", status=422):
    """Input no rule accepts: blank or too long text, an unknown option, a time without a zone,
    evidence of another workspace."""


class StaleRevision(Refused, code="stale_revision", status=409):
    """The caller acted on a revision that is no longer current: re-read, then decide again.
    `current_revision` is the revision now stored, when the edge reports it."""

    def __init__(
        self, message: str, current_revision: int | None = None, *, current: Any = None
    ) -> None:
        super().__init__(message, current=current)
        self.current_revision = current_revision


class InvalidTransition(Refused, code="invalid_transition", status=409):
    """The action does not apply to the current status (confirming a hidden entry, resuming a
    completed job)."""


class IdempotencyConflict(Refused, code="idempotency_conflict", status=409):
    """The idempotency key is taken by a request made from different input."""


class LegalHoldActive(Refused, code="legal_hold_active", status=409):
    """A legal hold reaches the rows the request would delete or rewrite."""
