"""The review-card worker: plans the cards of finished windows, posts queued cards, applies
admitted decisions once, redraws cards.

It runs inside `serve` (docs/review-cards.md: why not a Dagster sensor) and standalone as
`timeline-pipeline review-cards work`. Every piece of work is a database row taken with a lease
by compare-and-set, so any number of workers and replicas can run; a worker killed at any point
leaves rows whose lease expires and that another worker takes over:

* a finished window's card is planned in the transaction that clears the window's
  `review_card_pending` flag (`review_cards/planner.py`), so it is queued once, and a worker
  killed before that commit leaves the flag to the next round;
* a decision's curation (through the curation service, with its audit event) commits in the
  same transaction that moves its admission from `queued` to `applied`, so it happens once; it
  is applied at the revision the curator saw (`entry_revision` of the admission), so a draft
  changed since is refused, not overwritten, and the decisions admitted after it on the same
  draft, made on the revision it would have led to, fail with it;
* the card redraw that follows is a PATCH of the whole card drawn from the stored state, so
  repeating it after a crash is harmless;
* a card is posted with its idempotency uuid, so a repeated post lands once;
* a card is drawn in its workspace's language and zone (docs/i18n.md), read once per send or
  redraw in the transaction that issues the card's token.

Execution is bounded by `reviewCardWorkerConcurrency`, apart from admission.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Final

from sqlalchemy import Connection, Engine

from timeline_pipeline.curation.presentation import presentation_of
from timeline_pipeline.curation.rules import Action
from timeline_pipeline.curation.service import CurationService
from timeline_pipeline.curation.timeline import EntryView
from timeline_pipeline.db.engine import transaction
from timeline_pipeline.domain.card_requests import CardRequest, Decision, all_closed, pending_count
from timeline_pipeline.domain.errors import Refused
from timeline_pipeline.domain.interactions import AdmissionStatus, CardAction, CardStatus
from timeline_pipeline.i18n.locales import Presentation
from timeline_pipeline.lark.card_sender import CardSender
from timeline_pipeline.lark.client import LarkApiError
from timeline_pipeline.observability.logs import get_logger
from timeline_pipeline.observability.metrics import ReviewCardMetrics
from timeline_pipeline.retry import RetryPolicy
from timeline_pipeline.review_cards.card_writers import CardMoved, draw_stored_card, while_moved
from timeline_pipeline.review_cards.planner import plan_flagged_cards
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import entries
from timeline_pipeline.store import interaction_admissions as admissions
from timeline_pipeline.store import interaction_requests as cards
from timeline_pipeline.store import interaction_tokens as tokens
from timeline_pipeline.store.interaction_admissions import AdmissionRow
from timeline_pipeline.store.interaction_requests import CardRow

log = get_logger("timeline_pipeline.review_cards")

APPLIED: Final = "applied"
MAX_SEND_ATTEMPTS: Final = 8
MAX_PATCH_ATTEMPTS: Final = 8
_ACTIONS: Final = {CardAction.CONFIRM: Action.CONFIRM, CardAction.HIDE: Action.HIDE}


def _utcnow() -> datetime:
    return datetime.now(UTC)


def actor_of(open_id: str) -> str:
    """How a card decision names its curator in the audit log."""
    return f"lark:{open_id}"


@dataclass
class WorkReport:
    planned: int = 0
    """Review cards planned for flagged windows."""
    cleared: int = 0
    """Window flags taken, with a card or without."""
    sent: int = 0
    applied: Counter[str] = field(default_factory=Counter)
    patched: int = 0
    expired: int = 0
    failed: int = 0

    @property
    def busy(self) -> bool:
        return bool(self.cleared or self.sent or self.applied or self.patched or self.expired)


class _LeaseLost(Exception):
    pass


class CardWorker:
    def __init__(
        self,
        engine: Engine,
        settings: LarkTimelineSettings,
        sender: CardSender | None,
        metrics: ReviewCardMetrics,
        *,
        owner: str | None = None,
        clock: Callable[[], datetime] = _utcnow,
    ) -> None:
        self._engine = engine
        self._settings = settings
        self._sender = sender
        self._metrics = metrics
        self.owner = owner or f"cards-{uuid.uuid4().hex[:12]}"
        self._clock = clock
        self._plan_after: int | None = None
        """The keyset position of the planning pass (`plan_flagged_cards`) between rounds."""
        self._curation = CurationService(
            engine, clock=clock, follow_up_tasks=settings.follow_up_tasks_enabled
        )
        # A send or redraw that failed after the client's own retries waits, between worker
        # rounds, by the product's one retry policy (docs/configuration.md).
        self._retry = RetryPolicy.for_lark_calls(settings)
        self._pool = ThreadPoolExecutor(
            max_workers=settings.review_card_worker_concurrency, thread_name_prefix="card-worker"
        )

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    # --- the loop ------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Work until `stop` is set; idle waits `reviewCardPollInterval` between looks."""
        idle = self._settings.review_card_poll_interval.total_seconds()
        while not stop.is_set():
            try:
                report = self.run_once()
            except Exception as error:  # a database outage: wait and look again
                log.warning("card_worker.failed", error_type=type(error).__name__)
                report = WorkReport()
            if not report.busy:
                stop.wait(idle)

    def run_once(self) -> WorkReport:
        report = WorkReport()
        now = self._clock()
        lease = self._settings.review_card_lease
        # First the cards of windows finished since the last round, so that this round posts
        # them (docs/review-cards.md, "How a card is planned").
        planning = plan_flagged_cards(self._engine, self._settings, now=now, after=self._plan_after)
        self._plan_after = planning.after
        report.planned, report.cleared = planning.planned, planning.cleared
        with transaction(self._engine) as conn:
            expired = cards.expire_due(conn, now=now)
        for card in expired:
            report.expired += 1
            self._metrics.cards.labels("expired").inc()
            self._redraw_closed(card)
        if self._sender is not None:
            with transaction(self._engine) as conn:
                queued = cards.claim_deliveries(
                    conn, owner=self.owner, now=now, lease=lease, limit=8
                )
            for card in queued:
                report.sent += self._deliver(card)
            self._redraw_recalled()
        with transaction(self._engine) as conn:
            taken = admissions.claim(
                conn,
                owner=self.owner,
                now=now,
                lease=lease,
                limit=self._settings.review_card_worker_concurrency,
            )
        for outcome in self._pool.map(self._process, taken):
            if outcome is None:
                report.failed += 1
                continue
            report.applied[outcome] += 1
            report.patched += 1
        self.refresh_gauges()
        return report

    def drain(self, *, max_seconds: float = 30.0) -> WorkReport:
        """Run until nothing is left to do (tests, the demo, `review-cards work --drain`)."""
        total = WorkReport()
        deadline = time.monotonic() + max_seconds
        while time.monotonic() < deadline:
            report = self.run_once()
            total.planned += report.planned
            total.cleared += report.cleared
            total.sent += report.sent
            total.applied.update(report.applied)
            total.patched += report.patched
            total.expired += report.expired
            total.failed += report.failed
            if not report.busy and not report.failed:
                break
        return total

    def refresh_gauges(self) -> None:
        with transaction(self._engine) as conn:
            card_counts = cards.counts(conn)
            backlog = admissions.backlog(conn, now=self._clock())
        self._metrics.pending_cards.set(card_counts[CardStatus.PENDING.value])
        for status in (AdmissionStatus.QUEUED, AdmissionStatus.APPLIED):
            self._metrics.backlog.labels(status.value).set(backlog[status.value])
        self._metrics.backlog_age.set(backlog["oldest_age_seconds"])

    # --- delivery --------------------------------------------------------------------------

    def _deliver(self, card: CardRow) -> int:
        assert self._sender is not None
        now = self._clock()
        with transaction(self._engine) as conn:
            token = tokens.issue(conn, card.id, now=now)
            presentation = presentation_of(conn, card.workspace_id, self._settings)
        content = self._render(card, token, presentation)
        try:
            posted = self._sender.post(
                card.chat_id, content, uuid=card.idempotency_uuid, reply_to=card.reply_to_message_id
            )
        except LarkApiError as error:
            self._metrics.cards.labels("send_failed").inc()
            log.warning(
                "review_card.send_failed",
                card_id=card.id,
                code=error.code,
                retryable=error.retryable,
            )
            with transaction(self._engine) as conn:
                if error.retryable and card.delivery_attempts < MAX_SEND_ATTEMPTS:
                    cards.retry_delivery_at(
                        conn, card, owner=self.owner, at=now + self._wait(card.delivery_attempts)
                    )
                else:
                    cards.fail_delivery(conn, card, owner=self.owner, now=now)
            return 0
        with transaction(self._engine) as conn:
            done = cards.mark_delivered(
                conn,
                card,
                owner=self.owner,
                bot_app_id=self._sender.app_id,
                message_id=posted.message_id,
                thread_id=posted.thread_id,
                now=self._clock(),
            )
        if done is None:
            return 0
        self._metrics.cards.labels("sent").inc()
        log.info("review_card.sent", card_id=card.id, message_id=posted.message_id)
        return 1

    # --- decisions -------------------------------------------------------------------------

    def _process(self, admission: AdmissionRow) -> str | None:
        try:
            current: AdmissionRow | None = admission
            if admission.status == AdmissionStatus.QUEUED:
                current = self._apply(admission)
            if current is None:
                return None
            return self._follow_up(current)
        except _LeaseLost:
            log.info("card_decision.lease_lost", admission_id=admission.id)
            return None
        except Exception as error:
            log.error(
                "card_decision.failed", admission_id=admission.id, error_type=type(error).__name__
            )
            return None

    def _apply(self, admission: AdmissionRow) -> AdmissionRow:
        try:
            return while_moved(self._engine, lambda conn: self._apply_once(conn, admission))
        except CardMoved:
            raise _LeaseLost from None

    def _apply_once(self, conn: Connection, admission: AdmissionRow) -> AdmissionRow:
        now = self._clock()
        card = cards.get(conn, admission.request_id)
        if card is None:
            raise _LeaseLost
        offered = card.request.entry(admission.entry_id)
        outcome = APPLIED
        request = card.request
        if offered is None:
            outcome = "entry_not_offered"
        else:
            try:
                self._curate(conn, card, admission)
            except Refused as error:
                outcome = error.code
        decisions = {k: list(v) for k, v in card.decisions.items()}
        mine = decisions.get(admission.entry_id, [])
        _settle(mine, admission, outcome, now)
        if outcome != APPLIED:
            admissions.retire_key(conn, admission.id)
            # The decisions made on the revision this one would have led to fail with it.
            later = admissions.fail_queued_after(conn, admission, outcome=outcome, now=now)
            if later:
                for position, decision in enumerate(mine):
                    if decision.pending:
                        mine[position] = replace(decision, state="failed", outcome=outcome)
                log.info(
                    "card_decision.followers_failed",
                    admission_id=admission.id,
                    failed=later,
                )
        decisions[admission.entry_id] = mine
        if offered is not None and pending_count(mine) == 0:
            request = _as_stored(conn, request, admission.entry_id)
        status = card.status
        if status == CardStatus.PENDING and all_closed(request, decisions):
            status = CardStatus.SUBMITTED.value
        if (
            cards.write_state(
                conn, card, request=request, decisions=decisions, status=status, now=now
            )
            is None
        ):
            raise CardMoved
        advanced = admissions.advance(
            conn,
            admission,
            owner=self.owner,
            status=AdmissionStatus.APPLIED,
            now=now,
            outcome=outcome,
        )
        if advanced is None:
            raise _LeaseLost  # rolls the curation back with the transaction
        self._metrics.decisions.labels(outcome).inc()
        self._metrics.processing_seconds.observe(
            max(0.0, (now - admission.admitted_at).total_seconds())
        )
        log.info(
            "card_decision.applied",
            admission_id=admission.id,
            card_id=card.id,
            entry_id=admission.entry_id,
            action=admission.action.value,
            outcome=outcome,
        )
        return advanced

    def _curate(self, conn: Connection, card: CardRow, admission: AdmissionRow) -> EntryView:
        """The decision through the curation service, in this transaction, at the revision
        the curator saw when deciding (docs/review-cards.md)."""
        revision = admission.entry_revision
        actor = actor_of(admission.actor_open_id)
        if admission.action in _ACTIONS:
            return self._curation.transition(
                card.workspace_id,
                admission.entry_id,
                _ACTIONS[admission.action],
                expected_revision=revision,
                actor=actor,
                conn=conn,
            )
        field_name = "category" if admission.action is CardAction.CATEGORY else "title"
        return self._curation.edit(
            card.workspace_id,
            admission.entry_id,
            {field_name: admission.value},
            expected_revision=revision,
            actor=actor,
            conn=conn,
        )

    def _follow_up(self, admission: AdmissionRow) -> str:
        """Redraw the card for everyone, then finish the admission. A failed redraw gives the
        row back to be tried again after a backoff (the curation stays applied)."""
        outcome = admission.outcome or APPLIED
        with transaction(self._engine) as conn:
            card = cards.get(conn, admission.request_id)
        if card is not None and card.message_id and self._sender is not None:
            try:
                self._redraw(card)
            except LarkApiError as error:
                self._metrics.cards.labels("patch_failed").inc()
                log.warning("review_card.patch_failed", card_id=card.id, code=error.code)
                if admission.attempts < MAX_PATCH_ATTEMPTS:
                    with transaction(self._engine) as conn:
                        admissions.release(
                            conn,
                            admission,
                            owner=self.owner,
                            at=self._clock() + self._wait(admission.attempts),
                        )
                    return outcome
        final = AdmissionStatus.DONE if outcome == APPLIED else AdmissionStatus.FAILED
        with transaction(self._engine) as conn:
            if (
                admissions.advance(
                    conn, admission, owner=self.owner, status=final, now=self._clock()
                )
                is None
            ):
                raise _LeaseLost
        return outcome

    def _redraw(self, card: CardRow) -> None:
        assert self._sender is not None
        assert card.message_id
        token = None
        with transaction(self._engine) as conn:
            if card.status == CardStatus.PENDING:
                token = tokens.issue(conn, card.id, now=self._clock())
            presentation = presentation_of(conn, card.workspace_id, self._settings)
        self._sender.redraw(card.message_id, self._render(card, token, presentation))
        self._metrics.cards.labels("patched").inc()

    def _redraw_recalled(self) -> None:
        """Patch the cards whose text a recall redacted (`redraw_pending`, docs/lifecycle.md
        "What a recall and a hold do to each copy"); a failed patch is tried next round."""
        with transaction(self._engine) as conn:
            waiting = cards.claim_redraws(conn)
        for card in waiting:
            try:
                self._redraw(card)
            except LarkApiError as error:
                log.warning("review_card.patch_failed", card_id=card.id, code=error.code)
                continue
            with transaction(self._engine) as conn:
                cards.redrawn(conn, card, now=self._clock())

    def _redraw_closed(self, card: CardRow) -> None:
        if not card.message_id or self._sender is None:
            return
        try:
            self._redraw(card)
        except LarkApiError as error:
            log.warning("review_card.patch_failed", card_id=card.id, code=error.code)

    def _wait(self, attempt: int) -> timedelta:
        return timedelta(seconds=self._retry.backoff(attempt))

    def _render(
        self, card: CardRow, token: str | None, presentation: Presentation
    ) -> dict[str, object]:
        return draw_stored_card(
            card,
            token=token,
            link_base_url=self._settings.review_card_link_base_url,
            presentation=presentation,
        )


def _settle(mine: list[Decision], admission: AdmissionRow, outcome: str, now: datetime) -> None:
    """Mark the card's decision of `admission` applied or failed (appended if the card lost it)."""
    state = "applied" if outcome == APPLIED else "failed"
    for position, decision in enumerate(mine):
        if (
            decision.pending
            and decision.action is admission.action
            and decision.actor == admission.actor_open_id
            and decision.value == admission.value
            and decision.revision in (None, admission.entry_revision)
        ):
            mine[position] = replace(
                decision, state=state, outcome=None if outcome == APPLIED else outcome
            )
            return
    mine.append(
        Decision(
            admission.action,
            admission.actor_open_id,
            now,
            state,
            None if outcome == APPLIED else outcome,
            admission.value,
            admission.entry_revision,
        )
    )


def _as_stored(conn: Connection, request: CardRequest, entry_id: int) -> CardRequest:
    """The card's copy of a draft with nothing left in flight: the entry as stored now."""
    row = entries.get(conn, entry_id)
    if row is None:
        return request
    return request.with_revision(entry_id, row.revision, title=row.title, category=row.category)
