"""Review-card figures for the pipeline health asset (docs/metrics.md): the same counts the
worker's `/metrics` gauges show, read from the database so Dagster plots them over time, and
the windows whose card the worker has still to plan (docs/review-cards.md, "How a card is
planned")."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Engine

from timeline_pipeline.db.engine import connection
from timeline_pipeline.store import interaction_admissions as admissions
from timeline_pipeline.store import interaction_requests as cards
from timeline_pipeline.store import review_card_outbox


def review_card_figures(engine: Engine, now: datetime) -> dict[str, float]:
    with connection(engine) as conn:
        by_status = cards.counts(conn)
        backlog = admissions.backlog(conn, now=now)
        unplanned, oldest = review_card_outbox.awaiting_card(conn)
    return {
        "review_cards_unplanned": unplanned,
        "review_cards_unplanned_oldest_seconds": (
            0.0 if oldest is None else max(0.0, (now - oldest).total_seconds())
        ),
        "review_cards_pending": by_status["pending"],
        "review_cards_undelivered": by_status["undelivered"],
        "review_cards_expired": by_status["expired"],
        "review_card_backlog": backlog["queued"] + backlog["applied"],
        "review_card_backlog_oldest_seconds": backlog["oldest_age_seconds"],
    }
