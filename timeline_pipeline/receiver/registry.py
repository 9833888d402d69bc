"""Which handler answers which Lark callback: a map from `header.event_type` to a handler.

In the spirit of lark-oapi's `EventDispatcherHandler` (one registration per event type), but
over the callback the receiver has already verified (see `event_types.py` for why lark-oapi's
dispatcher itself is not used). A handler gets the verified callback and returns one of:

* an `Outcome`: settled on the request (stored nothing, or was ignored with a reason);
* a `Pending`: a database write for the group-commit writer; answered once it is committed;
* a `HandlerReply`: an answer with its own JSON body, e.g. a card callback's
  `{"toast": ..., "card": ...}` (Lark shows whatever the body says);
* a `BlockingReply`: a `HandlerReply` that needs blocking I/O of its own (a card callback's
  admission transaction): the receiver runs it in the thread pool, off the event loop.

Adding an event type is one `registry.register(EVENT_TYPE, handler)` in
`receiver/handlers.py::register_lark_handlers`; an event type nobody registered is answered as
before, 200 `ignored` / `unknown_event_type`. Add the type to `KNOWN_EVENT_TYPES` in
`observability/metrics.py` too, or its metrics are labelled `other`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from timeline_pipeline.receiver.outcomes import Outcome, Pending
from timeline_pipeline.receiver.verification import VerifiedCallback

__all__ = [
    "BlockingReply",
    "EventHandler",
    "EventHandlerRegistry",
    "HandlerReply",
    "HandlerResult",
]


@dataclass(frozen=True)
class HandlerReply:
    """An answer a handler writes itself: `status`, and `body` as the JSON object sent.

    With `body` None a 200 carries the receiver's usual `{"status": "accepted"}`. A 2xx counts
    as accepted in the metrics; anything else as rejected, with `reason` as the label."""

    status: int = 200
    body: Mapping[str, Any] | None = None
    reason: str = "handler_refused"


@dataclass(frozen=True)
class BlockingReply:
    """`call()` gives the answer; it may block (database I/O), so it runs off the event loop."""

    call: Callable[[], HandlerReply]


HandlerResult: TypeAlias = Outcome | Pending | HandlerReply | BlockingReply
EventHandler: TypeAlias = Callable[[VerifiedCallback], HandlerResult]


class EventHandlerRegistry:
    """Event type -> handler; each type is registered once (a second registration is a bug)."""

    def __init__(self) -> None:
        self._handlers: dict[str, EventHandler] = {}

    def register(self, event_type: str, handler: EventHandler) -> EventHandlerRegistry:
        """Route `event_type` to `handler`; returns the registry, so registrations chain."""
        if not event_type:
            raise ValueError("an event type is required")
        if event_type in self._handlers:
            raise ValueError(f"{event_type} already has a handler")
        self._handlers[event_type] = handler
        return self

    def handler_for(self, event_type: str) -> EventHandler | None:
        return self._handlers.get(event_type)

    def __contains__(self, event_type: object) -> bool:
        return event_type in self._handlers

    def __iter__(self) -> Iterator[str]:
        return iter(self._handlers)
