"""The states of review cards and of their admitted callbacks (docs/review-cards.md).

One definition for the schema's check constraints, the stores' transitions and the worker.
"""

from __future__ import annotations

from enum import StrEnum


class CardStatus(StrEnum):
    """A review card: waiting for decisions, fully decided, past its expiry, or withdrawn."""

    PENDING = "pending"
    SUBMITTED = "submitted"
    EXPIRED = "expired"
    CANCELLED = "cancelled"


class DeliveryStatus(StrEnum):
    """Whether the card has been posted to its chat yet (the worker posts queued cards)."""

    QUEUED = "queued"
    SENT = "sent"
    FAILED = "failed"


class AdmissionStatus(StrEnum):
    """An admitted callback in the durable queue.

    `queued`: admitted, its decision not yet applied. `applied`: the curation is committed,
    the card patch still to do. `done`: both done. `failed`: the decision could not be applied
    (the entry changed meanwhile); the card is patched to say so.
    """

    QUEUED = "queued"
    APPLIED = "applied"
    DONE = "done"
    FAILED = "failed"


class CardAction(StrEnum):
    """What a curator can do to one draft from the card."""

    CONFIRM = "confirm"
    HIDE = "hide"
    CATEGORY = "category"
    EDIT = "edit"


WORKING_ADMISSION_STATUSES: tuple[AdmissionStatus, ...] = (
    AdmissionStatus.QUEUED,
    AdmissionStatus.APPLIED,
)
"""Admissions the worker still has to take: they hold a slot of the workspace admission limit."""
