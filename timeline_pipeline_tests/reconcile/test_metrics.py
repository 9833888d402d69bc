"""Reconciliation metrics: one report in, bounded-label Prometheus series out."""

from __future__ import annotations

from collections import Counter

from prometheus_client import generate_latest

from timeline_pipeline.domain.evidence import UpsertSummary
from timeline_pipeline.reconcile.metrics import ReconcileMetrics
from timeline_pipeline.reconcile.report import ChatReport, FailureKind


def sample(metrics: ReconcileMetrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def test_a_report_becomes_counters_without_ids_in_labels() -> None:
    metrics = ReconcileMetrics()
    ok = ChatReport(
        "inc-1",
        "oc_chat",
        "incremental",
        chat_pages=3,
        thread_pages=2,
        messages=120,
        upserts=UpsertSummary(100, 5, 15),
        skipped=Counter({"before_workspace_created": 2}),
        rejected=Counter({"missing_sender": 1}),
        lag_seconds=42.0,
        duration_seconds=1.5,
    )
    failed = ChatReport("inc-1", "oc_hidden", "incremental")
    failed.fail(FailureKind.PERMISSION_DENIED, "permission_denied: code=230002")

    metrics.observe(ok)
    metrics.observe(failed)

    assert sample(metrics, "timeline_reconcile_chat_runs_total", mode="incremental", outcome="ok")
    assert sample(
        metrics,
        "timeline_reconcile_chat_runs_total",
        mode="incremental",
        outcome="permission_denied",
    )
    assert sample(metrics, "timeline_reconcile_pages_total", container="chat") == 3
    assert sample(metrics, "timeline_reconcile_pages_total", container="thread") == 2
    assert sample(metrics, "timeline_reconcile_evidence_total", outcome="inserted") == 100
    assert sample(metrics, "timeline_reconcile_skipped_total", reason="malformed:missing_sender")
    assert sample(metrics, "timeline_reconcile_lag_seconds") == 42.0
    assert sample(metrics, "timeline_reconcile_duration_seconds_count") == 2
    exposition = generate_latest(metrics.registry).decode()
    assert "oc_chat" not in exposition and "inc-1" not in exposition


def test_two_instances_never_collide_on_registration() -> None:
    ReconcileMetrics()
    ReconcileMetrics()
