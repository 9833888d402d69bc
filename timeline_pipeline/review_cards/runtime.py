"""Review cards wired for a process: the callback handler and the worker thread.

`serve` builds one of these when `reviewCardsEnabled` is on; `review-cards work` runs the
worker alone. The worker posts and redraws cards only when the Lark app credentials are set
(LARK_APP_ID, LARK_APP_SECRET); without them it still plans finished windows' cards and
applies decisions.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry
from sqlalchemy import Engine

from timeline_pipeline.lark.card_sender import CardSender, LarkCardSender
from timeline_pipeline.lark.client_factory import build_client
from timeline_pipeline.observability.logs import get_logger
from timeline_pipeline.observability.metrics import ReviewCardMetrics
from timeline_pipeline.review_cards.admission import CardCallbacks
from timeline_pipeline.review_cards.worker import CardWorker
from timeline_pipeline.settings import Settings

log = get_logger("timeline_pipeline.review_cards")


def card_sender(settings: Settings) -> CardSender | None:
    runtime = settings.runtime
    if not runtime.lark_app_id or not runtime.lark_app_secret.get_secret_value():
        return None
    return LarkCardSender(build_client(settings.timeline, runtime), runtime.lark_app_id)


@dataclass
class ReviewCards:
    callbacks: CardCallbacks
    worker: CardWorker
    metrics: ReviewCardMetrics
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    @classmethod
    def build(
        cls,
        settings: Settings,
        engine: Engine,
        registry: CollectorRegistry | None = None,
        sender: CardSender | None = None,
    ) -> ReviewCards:
        metrics = ReviewCardMetrics(registry)
        chosen = sender if sender is not None else card_sender(settings)
        worker = CardWorker(engine, settings.timeline, chosen, metrics)
        return cls(CardCallbacks(engine, settings.timeline, metrics), worker, metrics)

    def start_worker(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(
            target=self.worker.run, args=(self._stop,), name="card-worker", daemon=True
        )
        self._thread.start()
        log.info("card_worker.started", owner=self.worker.owner)

    def stop_worker(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(timeout=30)
        self._thread = None
        self.worker.close()
        log.info("card_worker.stopped", owner=self.worker.owner)
