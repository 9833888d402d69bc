"""What a review card offered and what was decided on it, as stored in the interaction store.

The stored request is authoritative: a callback's field types and option values are rebuilt
from it, never read from the callback. Pure (de)serialization, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Final

from timeline_pipeline.domain.interactions import CardAction

KIND_DRAFT_REVIEW: Final = "draft_review"
KIND_CHAT_PIN: Final = "chat_pin"
"""The reply to a pin from the chat (docs/pins.md): one entry, its category to change."""
CLOSING_ACTIONS: Final = frozenset({CardAction.CONFIRM, CardAction.HIDE})
"""Actions after which the draft leaves the card's open list."""


@dataclass(frozen=True, slots=True)
class CardEntry:
    """One draft as the card shows it.

    `revision` is the entry revision the card stands for: the entry's stored revision plus one
    for each decision admitted on the card and not yet applied (each change moves it by one),
    so that a curator's next click on the redrawn card names the revision its decision follows
    (docs/review-cards.md). `title` and `category` likewise show admitted changes.
    """

    id: int
    revision: int
    occurred_at: datetime
    title: str
    category: str
    message_count: int = 0

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "revision": self.revision,
            "occurred_at": self.occurred_at.isoformat(),
            "title": self.title,
            "category": self.category,
            "message_count": self.message_count,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CardEntry:
        return cls(
            int(data["id"]),
            int(data["revision"]),
            datetime.fromisoformat(str(data["occurred_at"])),
            str(data["title"]),
            str(data["category"]),
            int(data.get("message_count", 0)),
        )


@dataclass(frozen=True, slots=True)
class Decision:
    """A curator's decision on one draft; `state` is admitted, applied or failed, and
    `revision` the entry revision it was made on (None on cards stored before it was kept)."""

    action: CardAction
    actor: str
    at: datetime
    state: str = "admitted"
    outcome: str | None = None
    value: str | None = None
    revision: int | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "action": self.action.value,
            "actor": self.actor,
            "at": self.at.isoformat(),
            "state": self.state,
            "outcome": self.outcome,
            "value": self.value,
            "revision": self.revision,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Decision:
        return cls(
            CardAction(str(data["action"])),
            str(data["actor"]),
            datetime.fromisoformat(str(data["at"])),
            str(data.get("state", "admitted")),
            data.get("outcome"),
            data.get("value"),
            int(data["revision"]) if data.get("revision") is not None else None,
        )

    @property
    def pending(self) -> bool:
        return self.state == "admitted"


@dataclass(frozen=True, slots=True)
class PinNote:
    """What a pin's reply card says besides its entry: which timeline, whose pin."""

    workspace_label: str
    operator: str

    def as_json(self) -> dict[str, Any]:
        return {"workspace_label": self.workspace_label, "operator": self.operator}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PinNote:
        return cls(str(data["workspace_label"]), str(data["operator"]))


@dataclass(frozen=True, slots=True)
class CardRequest:
    """The drafts offered, the field types and the option values of the category select."""

    entries: tuple[CardEntry, ...]
    options: tuple[str, ...]
    title_max_chars: int
    fields: Mapping[str, str] = field(
        default_factory=lambda: {"title": "text", "category": "select"}
    )
    pin: PinNote | None = None
    """Set on a pin's reply card (`KIND_CHAT_PIN`): it offers only the category select."""

    def entry(self, entry_id: int) -> CardEntry | None:
        return next((e for e in self.entries if e.id == entry_id), None)

    def with_revision(self, entry_id: int, revision: int, **changes: Any) -> CardRequest:
        entries = tuple(
            replace(e, revision=revision, **changes) if e.id == entry_id else e
            for e in self.entries
        )
        return replace(self, entries=entries)

    def as_json(self) -> dict[str, Any]:
        return {
            "entries": [e.as_json() for e in self.entries],
            "options": list(self.options),
            "title_max_chars": self.title_max_chars,
            "fields": dict(self.fields),
            **({"pin": self.pin.as_json()} if self.pin is not None else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CardRequest:
        return cls(
            tuple(CardEntry.from_json(e) for e in data["entries"]),
            tuple(str(o) for o in data["options"]),
            int(data["title_max_chars"]),
            {str(k): str(v) for k, v in dict(data.get("fields") or {}).items()},
            PinNote.from_json(data["pin"]) if data.get("pin") else None,
        )


Decisions = dict[int, list[Decision]]


def decisions_from_json(data: Mapping[str, Any]) -> Decisions:
    return {int(k): [Decision.from_json(d) for d in v] for k, v in data.items()}


def decisions_as_json(decisions: Decisions) -> dict[str, Any]:
    return {str(k): [d.as_json() for d in v] for k, v in sorted(decisions.items())}


def closing_decision(decisions: Sequence[Decision]) -> Decision | None:
    """The confirm or hide that closed a draft on the card, unless it failed to apply."""
    return next((d for d in decisions if d.action in CLOSING_ACTIONS and d.state != "failed"), None)


def pending_count(decisions: Sequence[Decision]) -> int:
    """Decisions admitted on a draft and not yet applied: how far the card's revision of the
    draft runs ahead of the stored entry's."""
    return sum(1 for d in decisions if d.pending)


def all_closed(request: CardRequest, decisions: Decisions) -> bool:
    return all(closing_decision(decisions.get(e.id, [])) for e in request.entries)
