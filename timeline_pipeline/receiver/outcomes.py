"""The answers the receiver gives, and the reason codes that name them.

Lark redelivers any callback that does not get a 200, so the status is a decision: 200 for
everything authentic that we chose not to store (retrying would not change the answer), 4xx for
requests that are not authentic or not well-formed, 503 when the database did not answer (the
redelivery is what we want). Reason codes are fixed snake_case strings: they appear in the JSON
answer, as metric labels and in logs, and never carry request content.

A handler's own results live here too (`receiver/registry.py` names what a handler returns):
an `Outcome`, what an event did, and a `Pending`, the database half of an event that the
group-commit writer runs; `receiver/handlers.py` makes them and `receiver/service.py` answers
them.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any, Final

from timeline_pipeline.receiver.batching import GroupWriter


class Reason(enum.StrEnum):
    # 4xx: the request is refused.
    BODY_TOO_LARGE = "body_too_large"
    MALFORMED_JSON = "malformed_json"
    UNDECRYPTABLE = "undecryptable"
    MISSING_SIGNATURE = "missing_signature"
    BAD_SIGNATURE = "bad_signature"
    BAD_TIMESTAMP = "bad_timestamp"
    STALE_TIMESTAMP = "stale_timestamp"
    BAD_TOKEN = "bad_token"  # noqa: S105 - a reason code, not a credential
    UNSUPPORTED_SCHEMA = "unsupported_schema"
    MISSING_EVENT_ID = "missing_event_id"
    MISSING_EVENT_TYPE = "missing_event_type"
    MISSING_EVENT = "missing_event"
    BAD_CHALLENGE = "bad_challenge"
    CLIENT_DISCONNECTED = "client_disconnected"  # the body never arrived; nobody reads the 400
    # 200, counted as ignored.
    UNKNOWN_EVENT_TYPE = "unknown_event_type"
    INGESTION_DISABLED = "ingestion_disabled"
    REVIEW_CARDS_DISABLED = "review_cards_disabled"
    PINS_DISABLED = "pins_disabled"
    NOT_GROUP_CHAT = "not_group_chat"
    UNKNOWN_CHAT_TYPE = "unknown_chat_type"
    SELF_GENERATED = "self_generated"
    UNBOUND_CHAT = "unbound_chat"
    UNSUPPORTED_MESSAGE_TYPE = "unsupported_message_type"
    MESSAGE_NOT_FOUND = "message_not_found"
    # 5xx: Lark should try again.
    DATABASE_UNAVAILABLE = "database_unavailable"
    BINDING_CHANGED = "binding_changed"
    LARK_UNAVAILABLE = "lark_unavailable"
    INTERNAL_ERROR = "internal_error"


class Rejected(Exception):
    """Raised anywhere on the request path to answer `status` with `reason`.

    `reason` is a Reason or a normalization reason code (e.g. `missing_message_id`).
    """

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = str(reason)


@dataclass(frozen=True)
class Reply:
    """The HTTP answer: a status, a small JSON body, and `result` for the latency metric."""

    status: int
    body: dict[str, Any] = field(default_factory=dict)
    result: str = "accepted"

    @classmethod
    def accepted(cls) -> Reply:
        """The same instance every time: the HTTP layer sends its body pre-encoded."""
        return ACCEPTED

    @classmethod
    def ignored(cls, reason: str) -> Reply:
        return cls(200, {"status": "ignored", "reason": reason}, "ignored")

    @classmethod
    def rejected(cls, status: int, reason: str) -> Reply:
        return cls(status, {"status": "rejected", "reason": reason}, "rejected")

    @classmethod
    def retry(cls, reason: str, status: int = 503) -> Reply:
        return cls(status, {"status": "retry", "reason": reason}, "retry")


ACCEPTED: Final = Reply(200, {"status": "accepted"}, "accepted")
"""The answer to almost every callback; never mutate its body."""


@dataclass(frozen=True)
class Outcome:
    """What an event did; `ignored` names the reason when nothing was stored.

    `writes` belongs to the transaction's group of events (see `handlers._write_messages`): it
    is carried by one event of the group, so that summing over events gives the totals.
    """

    message_id: str | None = None
    chat_id: str | None = None
    ignored: str | None = None
    workspace_ids: tuple[str, ...] = ()
    writes: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    excluded: str | None = None


@dataclass(frozen=True)
class Pending:
    """The database half of an event, for the group-commit writer.

    `writer(conn, items)` runs inside the batch transaction for every pending item of the same
    (writer, group) in the batch, and returns one Outcome per item.
    """

    writer: GroupWriter
    item: Any
    group: Hashable
    message_id: str
    chat_id: str
