"""Receiver metrics: one registry per app, bounded label values."""

from __future__ import annotations

from prometheus_client import generate_latest

from timeline_pipeline.observability.metrics import ReceiverMetrics, event_type_label


def test_two_apps_in_one_process_count_independently() -> None:
    first, second = ReceiverMetrics(), ReceiverMetrics()

    first.events_received.inc()
    first.evidence_writes.labels("inserted").inc(3)

    assert first.registry.get_sample_value("timeline_lark_events_received_total") == 1
    assert second.registry.get_sample_value("timeline_lark_events_received_total") == 0
    text = generate_latest(first.registry).decode()
    assert 'timeline_lark_evidence_writes_total{outcome="inserted"} 3.0' in text


def test_event_types_that_we_do_not_know_share_one_label() -> None:
    assert event_type_label("im.message.receive_v1") == "im.message.receive_v1"
    assert event_type_label("im.chat.disbanded_v1") == "other"
    assert event_type_label("x" * 1000) == "other"
    assert event_type_label(None) == "other"
