"""Prometheus metrics of reconciliation: duration, pages, messages, lag, failures.

What they cover is docs/design.md §12.

Like the receiver's metrics, each instance owns its registry, so a test or a second embedded
runner never double-registers a series. Label values are fixed vocabularies (modes, failure
kinds, skip and normalizer reason codes), never workspace or chat ids, so series stay bounded.
Dagster runs record the same figures as materialization metadata, which outlives the process.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from timeline_pipeline.reconcile.report import ChatReport

_DURATION_BUCKETS = (0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600)


class ReconcileMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.runs = Counter(
            "timeline_reconcile_chat_runs",
            "Chat reconciliation runs by mode and outcome (ok or a failure kind).",
            ["mode", "outcome"],
            registry=r,
        )
        self.pages = Counter(
            "timeline_reconcile_pages",
            "History pages fetched, by container (chat or thread).",
            ["container"],
            registry=r,
        )
        self.messages = Counter(
            "timeline_reconcile_messages", "History items normalized into messages.", registry=r
        )
        self.evidence = Counter(
            "timeline_reconcile_evidence",
            "Evidence upserts from reconciliation, by outcome.",
            ["outcome"],
            registry=r,
        )
        self.skipped = Counter(
            "timeline_reconcile_skipped", "Items left out, by reason.", ["reason"], registry=r
        )
        self.duration = Histogram(
            "timeline_reconcile_duration_seconds",
            "Wall time of one chat's reconciliation.",
            buckets=_DURATION_BUCKETS,
            registry=r,
        )
        self.lag = Gauge(
            "timeline_reconcile_lag_seconds",
            "Seconds between a run and the newest collected message of the chat it ran last.",
            registry=r,
        )

    def observe(self, report: ChatReport) -> None:
        outcome = report.failure.value if report.failure else "ok"
        self.runs.labels(report.mode, outcome).inc()
        self.pages.labels("chat").inc(report.chat_pages)
        self.pages.labels("thread").inc(report.thread_pages)
        self.messages.inc(report.messages)
        self.evidence.labels("inserted").inc(report.upserts.inserted)
        self.evidence.labels("updated").inc(report.upserts.updated)
        self.evidence.labels("duplicate").inc(report.upserts.duplicate)
        for reason, count in report.skipped.items():
            self.skipped.labels(reason).inc(count)
        for code, count in report.rejected.items():
            self.skipped.labels(f"malformed:{code}").inc(count)
        self.duration.observe(report.duration_seconds)
        if report.lag_seconds is not None:
            self.lag.set(report.lag_seconds)
