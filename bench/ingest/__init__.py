"""Event ingestion throughput and ack latency of `timeline-pipeline serve` on PostgreSQL."""
