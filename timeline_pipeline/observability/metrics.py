"""Prometheus metrics of the Lark event receiver (docs/design.md §12).

Each receiver app owns its own `CollectorRegistry`: two apps in one process (tests, or an embedded
receiver next to another service) then never share or double-register counters, and `/metrics`
shows exactly what that app did. Label values are fixed vocabularies (reason codes, a handful of
event types), never ids, so the series count stays bounded whatever Lark sends.
"""

from __future__ import annotations

from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

KNOWN_EVENT_TYPES: Final = frozenset(
    {
        "url_verification",
        "im.message.receive_v1",
        "im.message.recalled_v1",
        "card.action.trigger",
        "im.message.reaction.created_v1",
        "im.message.reaction.deleted_v1",
    }
)
OTHER_EVENT_TYPE: Final = "other"

# Acks must come back within Lark's ~3 s budget; buckets resolve the interesting part below it.
_LATENCY_BUCKETS: Final = (0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


def event_type_label(event_type: str | None) -> str:
    """Unknown event types collapse into one label: a sender must not mint new series."""
    return event_type if event_type in KNOWN_EVENT_TYPES else OTHER_EVENT_TYPE


class ReceiverMetrics:
    """Every counter the receiver updates, registered on one registry."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.events_received = Counter(
            "timeline_lark_events_received",
            "Callbacks posted to the event endpoint, before any check.",
            registry=r,
        )
        self.events_accepted = Counter(
            "timeline_lark_events_accepted",
            "Callbacks whose effect is committed (or a url_verification answered).",
            ["event_type"],
            registry=r,
        )
        self.events_ignored = Counter(
            "timeline_lark_events_ignored",
            "Authentic callbacks acknowledged with 200 but not stored, by reason.",
            ["event_type", "reason"],
            registry=r,
        )
        self.events_failed = Counter(
            "timeline_lark_events_failed",
            "Callbacks answered with 4xx (rejected) or 5xx (retry later), by reason.",
            ["reason"],
            registry=r,
        )
        self.evidence_writes = Counter(
            "timeline_lark_evidence_writes",
            "Evidence rows written by the receiver: inserted, updated, duplicate, redacted.",
            ["outcome"],
            registry=r,
        )
        self.evidence_skipped = Counter(
            "timeline_lark_evidence_skipped",
            "Message/workspace pairs not stored by the eligibility rules, by reason.",
            ["reason"],
            registry=r,
        )
        self.messages_excluded = Counter(
            "timeline_lark_messages_excluded",
            "Messages kept out of synthesis because a bot or this app sent them.",
            ["reason"],
            registry=r,
        )
        self.handling_seconds = Histogram(
            "timeline_lark_event_handling_seconds",
            "Time from a complete request body to the answer, by result.",
            ["result"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )


class LifecycleMetrics:
    """Retention cleanup rows and failures (docs/metrics.md): counted by the process that runs
    the purge (a Dagster run or `lifecycle run`), labelled by descriptor key and a fixed outcome
    or refusal code, never by an id."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.rows = Counter(
            "timeline_retention_cleanup_rows",
            "Rows the lifecycle engine handled: purged, archived, redacted, held.",
            ["descriptor", "outcome"],
            registry=self.registry,
        )
        self.failures = Counter(
            "timeline_retention_cleanup_failures",
            "Lifecycle runs that failed, by refusal code.",
            ["reason"],
            registry=self.registry,
        )


class MaintenanceMetrics:
    """Counters of the maintenance job service (docs/maintenance.md): label values are
    processor types and fixed outcome codes, never job ids."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.advances = Counter(
            "timeline_maintenance_advances",
            "Advance requests by processor type and outcome (advanced, completed, paused, "
            "busy, stale, delay, refused).",
            ["job_type", "outcome"],
            registry=self.registry,
        )
        self.batch_seconds = Histogram(
            "timeline_maintenance_batch_seconds",
            "Time a maintenance batch held its transaction, by processor type and phase.",
            ["job_type", "phase"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )


class ReviewCardMetrics:
    """Review cards (docs/review-cards.md): callbacks by outcome and refusal reason, answer
    and processing latency, and the gauges the worker refreshes from the database (pending
    cards, callback backlog and its oldest age). Registered on the receiver's registry when
    `serve` runs, so `/metrics` shows both."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.callbacks = Counter(
            "timeline_review_card_callbacks",
            "card.action.trigger callbacks by outcome: admitted, duplicate, refused.",
            ["outcome"],
            registry=r,
        )
        self.refused = Counter(
            "timeline_review_card_callbacks_refused",
            "Card callbacks refused with a toast (HTTP 200), by reason; `expired` counts "
            "callbacks on expired cards.",
            ["reason"],
            registry=r,
        )
        self.answer_seconds = Histogram(
            "timeline_review_card_answer_seconds",
            "Time to answer a card callback (admission committed), by outcome.",
            ["outcome"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.processing_seconds = Histogram(
            "timeline_review_card_processing_seconds",
            "Time from a decision's admission to its curation being applied.",
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.decisions = Counter(
            "timeline_review_card_decisions",
            "Admitted decisions the worker finished, by outcome (applied, or why not).",
            ["outcome"],
            registry=r,
        )
        self.cards = Counter(
            "timeline_review_cards",
            "Card lifecycle events: planned, sent, send_failed, patched, patch_failed, expired.",
            ["event"],
            registry=r,
        )
        self.pending_cards = Gauge(
            "timeline_review_cards_pending",
            "Cards waiting for decisions (status pending), as last read by the worker.",
            registry=r,
        )
        self.backlog = Gauge(
            "timeline_review_card_backlog",
            "Admitted decisions not finished by the worker, by status (queued, applied).",
            ["status"],
            registry=r,
        )
        self.backlog_age = Gauge(
            "timeline_review_card_backlog_oldest_seconds",
            "Age of the oldest admitted decision not finished by the worker.",
            registry=r,
        )


class PinMetrics:
    """Pins from the chat (docs/pins.md): pins created and removed, and reactions refused by a
    fixed reason code (not_curator, other_emoji, own_message, card, ...), never by id.
    Registered on the receiver's registry, so `/metrics` of `serve` shows them."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.created = Counter(
            "timeline_pins_created",
            "Pin reactions that pinned a message to a workspace's timeline (a first pin, or a "
            "pin again after an unpin), one per workspace.",
            registry=r,
        )
        self.removed = Counter(
            "timeline_pins_removed",
            "Removed pin reactions that unpinned a message from a workspace's timeline.",
            registry=r,
        )
        self.refused = Counter(
            "timeline_pins_refused",
            "Reactions that pinned or unpinned nothing, by reason (one per reaction, or per "
            "workspace when the reason is the workspace's own).",
            ["reason"],
            registry=r,
        )
