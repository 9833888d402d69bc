"""The receiver's side of pins from the chat: a reaction's answer (docs/pins.md).

A reaction that pinned or unpinned is `accepted`; one that changed nothing is `ignored` with its
reason (always a 200: Lark must not redeliver what we chose not to do); a Lark read that failed
on the way is a 503, so that Lark delivers the reaction again.
"""

from __future__ import annotations

from collections.abc import Callable

from timeline_pipeline.pins.reactions import Reaction
from timeline_pipeline.pins.service import LarkUnavailable, PinService
from timeline_pipeline.receiver.outcomes import Reason, Rejected
from timeline_pipeline.receiver.registry import HandlerReply


def pin_reactions(service: PinService) -> Callable[[Reaction], HandlerReply]:
    def answer(reaction: Reaction) -> HandlerReply:
        try:
            result = service.handle(reaction)
        except LarkUnavailable:
            raise Rejected(503, Reason.LARK_UNAVAILABLE) from None
        if result.changed:
            return HandlerReply(200)
        return HandlerReply(200, {"status": "ignored", "reason": result.reason or "unchanged"})

    return answer
