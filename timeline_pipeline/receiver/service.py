"""One callback from bytes to answer: verify, dispatch, handle, then count and log.

This is the only place that turns outcomes and exceptions into HTTP statuses, metrics and log
lines, so the three always agree. A callback is handled in two steps: `begin` does the CPU work
(verification, normalization) and either answers at once or returns a `Step`, whose write
`submit` hands to the group-commit writer; `finish` (or `fail`) turns the committed outcome (or
the failure) into the answer. A handler that answers with blocking I/O of its own (a card
callback) gives a `BlockingStep` instead, which `run_blocking` answers in a worker thread.
`handle` chains them for callers without an event loop.

Logs carry ids and reason codes only; an exception is logged by its type, never its text,
because database errors can quote the statement's parameters.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Final

from timeline_pipeline.observability.logs import get_logger
from timeline_pipeline.observability.metrics import ReceiverMetrics, event_type_label
from timeline_pipeline.receiver.batching import CONFLICT_ERRORS, UNAVAILABLE_ERRORS, WriteBatcher
from timeline_pipeline.receiver.bindings import BindingCache
from timeline_pipeline.receiver.outcomes import ACCEPTED, Outcome, Pending, Reason, Rejected, Reply
from timeline_pipeline.receiver.registry import BlockingReply, EventHandlerRegistry, HandlerReply
from timeline_pipeline.receiver.verification import CallbackVerifier, LarkHeaders

LOGGER_NAME: Final = "timeline_pipeline.receiver"
log = get_logger(LOGGER_NAME)
_stdlib_log: Final = logging.getLogger(LOGGER_NAME)
"""The logger structlog's level filter consults: asking it first skips building a record that
the filter would drop (the accepted line is debug, and every accepted event would pay for it)."""


@dataclass
class Step:
    """A callback waiting for its database write."""

    event_type: str
    pending: Pending
    ids: dict[str, Any]
    started: float


@dataclass
class BlockingStep:
    """A callback whose handler answers with blocking I/O: `run_blocking` it off the loop."""

    event_type: str
    blocking: BlockingReply
    ids: dict[str, Any]
    started: float


class EventService:
    def __init__(
        self,
        *,
        verifier: CallbackVerifier,
        registry: EventHandlerRegistry,
        bindings: BindingCache,
        writer: WriteBatcher,
        metrics: ReceiverMetrics,
    ) -> None:
        self._verifier = verifier
        self._registry = registry
        self._bindings = bindings
        self._writer = writer
        self._metrics = metrics
        # Per-event metric children, looked up once: `labels()` validates and locks each call.
        # Both label sets are bounded (results, and `event_type_label`'s known types).
        self._received = metrics.events_received
        self._handling: dict[str, Any] = {}
        self._accepted: dict[str, Any] = {}

    def handle(self, body: bytes, headers: Mapping[str, str]) -> Reply:
        """Both steps, blocking until the write is committed."""
        step = self.begin(body, headers)
        if isinstance(step, Reply):
            return step
        if isinstance(step, BlockingStep):
            return self.run_blocking(step)
        try:
            outcome = self.submit(step).result()
        except Exception as error:
            return self.fail(step, error)
        return self.finish(step, outcome)

    def submit(self, step: Step) -> Future[Outcome]:
        """Hand the step's write to the group-commit writer."""
        pending = step.pending
        return self._writer.submit_to_group(pending.writer, pending.item, pending.group)

    def begin(self, body: bytes, headers: Mapping[str, str]) -> Reply | Step | BlockingStep:
        """Never raises: an answer, a Step to write and then `finish` (or `fail`), or a
        BlockingStep to `run_blocking`."""
        started = time.perf_counter()
        self._received.inc()
        ids: dict[str, Any] = {}
        try:
            result = self._begin(body, LarkHeaders.from_mapping(headers), ids)
        except Exception as error:
            return self._answer_failure(error, ids, started)
        if isinstance(result, Pending):
            ids.update(message_id=result.message_id, chat_id=result.chat_id)
            return Step(ids["event_type"], result, ids, started)
        if isinstance(result, BlockingReply):
            return BlockingStep(ids["event_type"], result, ids, started)
        return self._observe(result, started)

    def run_blocking(self, step: BlockingStep) -> Reply:
        """Never raises: the handler's own answer, counted like any other."""
        try:
            reply = self._answer(step.event_type, step.blocking.call(), step.ids)
        except Exception as error:
            return self._answer_failure(error, step.ids, step.started)
        return self._observe(reply, step.started)

    def finish(self, step: Step, outcome: Outcome) -> Reply:
        return self._observe(self._conclude(step.event_type, outcome, step.ids), step.started)

    def fail(self, step: Step, error: BaseException) -> Reply:
        if isinstance(error, CONFLICT_ERRORS):
            # A write found a cached workspace gone: read the bindings again next time.
            self._bindings.invalidate(step.pending.chat_id)
        return self._answer_failure(error, step.ids, step.started)

    def reject_oversized(self) -> Reply:
        """Called by the HTTP layer, which stops reading a body once it passes the limit."""
        self._metrics.events_received.inc()
        return self._fail(413, Reason.BODY_TOO_LARGE, {})

    def client_disconnected(self) -> Reply:
        """The client went away before its body was complete: counted, logged without ids
        (none were read), and answered with a 400 that nobody will read."""
        self._metrics.events_received.inc()
        self._metrics.events_failed.labels(Reason.CLIENT_DISCONNECTED).inc()
        log.info("lark_event_client_disconnected", reason=Reason.CLIENT_DISCONNECTED)
        return Reply.rejected(400, Reason.CLIENT_DISCONNECTED)

    # --- the steps ------------------------------------------------------------------------

    def _begin(
        self, body: bytes, headers: LarkHeaders, ids: dict[str, Any]
    ) -> Reply | Pending | BlockingReply:
        verified = self._verifier.verify(body, headers)
        ids["event_type"] = verified.event_type
        if verified.event_id is not None:
            ids["event_id"] = verified.event_id
        handler = self._registry.handler_for(verified.event_type)
        if handler is None:
            return self._ignore(verified.event_type, Reason.UNKNOWN_EVENT_TYPE, ids)
        handled = handler(verified)
        if isinstance(handled, Pending | BlockingReply):
            return handled
        if isinstance(handled, HandlerReply):
            return self._answer(verified.event_type, handled, ids)
        return self._conclude(verified.event_type, handled, ids)

    def _answer(self, event_type: str, reply: HandlerReply, ids: dict[str, Any]) -> Reply:
        """A handler's own answer: its body as given, counted like any other answer."""
        if not 200 <= reply.status < 300:
            return self._fail(reply.status, reply.reason, ids)
        self._accept(event_type, ids)
        if reply.body is None:
            return Reply(reply.status, dict(ACCEPTED.body), result="accepted")
        return Reply(reply.status, dict(reply.body), result="accepted")

    def _conclude(self, event_type: str, outcome: Outcome, ids: dict[str, Any]) -> Reply:
        for key in ("message_id", "chat_id"):
            if getattr(outcome, key) is not None:
                ids[key] = getattr(outcome, key)
        if outcome.workspace_ids:
            ids["workspace_ids"] = list(outcome.workspace_ids)
        self._count(outcome)
        if outcome.ignored is not None:
            return self._ignore(event_type, outcome.ignored, ids)
        self._accept(event_type, ids)
        return Reply.accepted()

    def _count(self, outcome: Outcome) -> None:
        metrics = self._metrics
        for name, count in outcome.writes.items():
            if count:
                metrics.evidence_writes.labels(name).inc(count)
        for reason, count in outcome.skipped.items():
            metrics.evidence_skipped.labels(reason).inc(count)
        if outcome.excluded is not None:
            metrics.messages_excluded.labels(outcome.excluded).inc()

    # --- answers --------------------------------------------------------------------------

    def _answer_failure(self, error: BaseException, ids: dict[str, Any], started: float) -> Reply:
        if isinstance(error, Rejected):
            reply = self._fail(error.status, error.reason, ids)
        elif isinstance(error, UNAVAILABLE_ERRORS):
            reply = self._fail(503, Reason.DATABASE_UNAVAILABLE, ids)
        elif isinstance(error, CONFLICT_ERRORS):
            reply = self._fail(503, Reason.BINDING_CHANGED, ids)
        else:  # a bug: answer 500 (Lark retries) and log the type only
            reply = self._fail(500, Reason.INTERNAL_ERROR, ids, error_type=type(error).__name__)
        return self._observe(reply, started)

    def _observe(self, reply: Reply, started: float) -> Reply:
        child = self._handling.get(reply.result)
        if child is None:
            child = self._handling[reply.result] = self._metrics.handling_seconds.labels(
                reply.result
            )
        child.observe(time.perf_counter() - started)
        return reply

    def _accept(self, event_type: str, ids: dict[str, Any]) -> None:
        label = event_type_label(event_type)
        child = self._accepted.get(label)
        if child is None:
            child = self._accepted[label] = self._metrics.events_accepted.labels(label)
        child.inc()
        if _stdlib_log.isEnabledFor(logging.DEBUG):
            log.debug("lark_event_accepted", **ids)

    def _ignore(self, event_type: str, reason: str, ids: dict[str, Any]) -> Reply:
        self._metrics.events_ignored.labels(event_type_label(event_type), reason).inc()
        log.info("lark_event_ignored", reason=reason, **ids)
        return Reply.ignored(reason)

    def _fail(self, status: int, reason: str, ids: dict[str, Any], **fields: Any) -> Reply:
        self._metrics.events_failed.labels(reason).inc()
        if status >= 500:
            log.error("lark_event_failed", status=status, reason=reason, **ids, **fields)
            return Reply.retry(reason, status)
        log.warning("lark_event_rejected", status=status, reason=reason, **ids, **fields)
        return Reply.rejected(status, reason)
