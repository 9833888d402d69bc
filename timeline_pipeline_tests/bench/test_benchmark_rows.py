"""Each benchmark's figures become rows that hold them to the issue's targets."""

from __future__ import annotations

from dataclasses import replace

import dagster as dg

from bench.discovery.run import SizeFigures, windows_requested
from bench.discovery.run import rows as discovery_rows
from bench.ingest.run import Figures as IngestFigures
from bench.ingest.run import WrkFigures as IngestWrkFigures
from bench.ingest.run import rows as ingest_rows
from bench.reconcile.run import Figures as ReconcileFigures
from bench.reconcile.run import rows as reconcile_rows
from bench.table import BenchRow
from timeline_pipeline.windows.batches import RANGE_END_TAG, RANGE_START_TAG
from timeline_pipeline.windows.run_queue import TAG_WINDOWS


def by_figure(rows: list[BenchRow], start: str) -> BenchRow:
    [row] = [r for r in rows if r.figure.startswith(start)]
    return row


INGEST = IngestFigures(
    events=5000,
    concurrency=16,
    chats=4,
    load_average=1.0,
    seconds=7.0,
    accepted=5000,
    statuses={"200 accepted": 5000},
    events_per_second=700.0,
    p50_ms=20.0,
    p99_ms=40.0,
    raw_rows=6000,
    raw_seconds=3.0,
    raw_rows_per_second=2000.0,
    raw_rows_per_second_before=1800.0,
    raw_rows_per_second_after=2200.0,
    ratio=0.35,
    rows_stored=5500,
    rows_expected=5500,
    receiver_cpu_us_per_event=1000.0,
    load_generator_cpu_us_per_event=800.0,
)


WRK = IngestWrkFigures(
    threads=2,
    connections=16,
    seconds=15.0,
    warmup_seconds=3.0,
    events_built=45000,
    issued=18016,
    responses=18000,
    accepted=18000,
    other=0,
    errors={"connect": 0, "read": 0, "write": 0, "status": 0, "timeout": 0},
    exhausted_threads=0,
    events_per_second=1200.0,
    p50_ms=11.0,
    p90_ms=15.0,
    p99_ms=17.0,
    p99_9_ms=30.0,
    max_ms=33.0,
    rows_stored=25516,
    rows_expected=25516,
    receiver_cpu_us_per_event=700.0,
)


def test_ingest_holds_the_rate_the_ratio_the_latency_and_one_row_per_event_apart() -> None:
    rows = ingest_rows(replace(INGEST, wrk=WRK), cores=2)
    assert by_figure(rows, "accepted events/s (Python").met is False  # 700 < 1,000
    ratio = by_figure(rows, "accepted events/s against the raw upsert rate (Python")
    assert ratio.baseline_value == 2000.0 and ratio.ratio == 0.35 and ratio.met is True
    assert "1,800 rows/s before the load and 2,200 after" in ratio.note
    assert by_figure(rows, "ack latency p99 (Python").met is True
    assert by_figure(rows, "evidence rows stored per event sent (Python").met is True
    assert "at most ~1,111 events/s" in rows[0].note  # 2 cores / 1.8 ms of CPU per event
    lost = ingest_rows(replace(INGEST, rows_stored=5499, p99_ms=50.0, wrk=WRK), cores=2)
    assert by_figure(lost, "evidence rows stored per event sent (Python").met is False
    assert by_figure(lost, "ack latency p99 (Python").met is False


def test_ingest_holds_the_wrk_run_to_the_same_targets_beside_the_same_raw_rate() -> None:
    rows = ingest_rows(replace(INGEST, wrk=WRK), cores=2)
    rate = by_figure(rows, "accepted events/s (wrk, 2 threads, 16 keep-alive connections")
    assert rate.value == 1200.0 and rate.met is True
    ratio = by_figure(rows, "accepted events/s against the raw upsert rate (wrk")
    assert ratio.baseline_value == INGEST.raw_rows_per_second and ratio.ratio == 0.6
    assert ratio.met is True
    p99 = by_figure(rows, "ack latency p99 (wrk")
    assert p99.value == 17.0 and p99.met is True
    assert "p50 11.0 ms, p90 15.0 ms, p99.9 30.0 ms, max 33.0 ms" in p99.note
    assert by_figure(rows, "evidence rows stored per event sent (wrk").met is True

    slow = replace(WRK, p99_ms=315.0, events_per_second=683.0, rows_stored=25515)
    missed = ingest_rows(replace(INGEST, wrk=slow), cores=2)
    assert by_figure(missed, "ack latency p99 (wrk").met is False
    assert by_figure(missed, "accepted events/s (wrk").met is False
    assert by_figure(missed, "accepted events/s against the raw upsert rate (wrk").met is True
    assert by_figure(missed, "evidence rows stored per event sent (wrk").met is False


def test_an_event_supply_that_ran_out_is_named_beside_the_row_count() -> None:
    short = replace(WRK, exhausted_threads=1, rows_stored=25510)
    [row] = [
        r
        for r in ingest_rows(replace(INGEST, wrk=short), cores=2)
        if r.figure.startswith("evidence rows stored per event sent (wrk")
    ]
    assert row.met is False
    assert "1 thread(s) ran out of the 45,000 events built" in row.note


def test_without_wrk_one_row_says_it_is_missing_and_how_to_install_it() -> None:
    missing = "wrk is not installed: install it with `apt-get install wrk`"
    rows = ingest_rows(replace(INGEST, wrk=None, wrk_missing=missing), cores=2)

    [row] = [r for r in rows if r.figure.startswith("wrk")]
    assert row.value is None and row.met is False and not row.failed
    assert "apt-get install wrk" in row.note
    assert len(rows) == 5  # the Python load generator's four rows are still there


RECONCILE = ReconcileFigures(
    messages=20000,
    listed=20000,
    min_pages=400,
    backfill_pages=400,
    thread_pages=0,
    incremental_pages=1,
    incremental_expected_pages=1,
    incremental_messages=50,
    overlap_messages=50,
    requests=401,
    busiest_1s=50,
    busiest_1s_token_requests=0,
    busiest_60s=401,
    wall_seconds=8.5,
    fetch_seconds=4.0,
    normalize_seconds=0.7,
    write_seconds=3.0,
    messages_per_second=2353.0,
    bare_page_tx_seconds=1.6,
    bare_page_tx_seconds_before=1.5,
    bare_page_tx_seconds_after=1.7,
    bare_single_tx_seconds=1.2,
    write_ratio_page_tx=1.875,
    write_ratio_single_tx=2.5,
    processing_ratio_page_tx=2.3,
    wall_ratio_page_tx=5.3,
)


def test_reconcile_pages_limits_and_write_path() -> None:
    rows = reconcile_rows(RECONCILE)
    assert all(row.met in (True, None) for row in rows)
    write = by_figure(rows, "write path time")
    assert write.ratio == 3.0 / 1.6 and write.target == "≤ 2x baseline"
    worse = reconcile_rows(
        replace(
            RECONCILE,
            backfill_pages=401,
            incremental_messages=120,
            busiest_1s=52,
            busiest_1s_token_requests=1,
            write_seconds=3.3,
        )
    )
    assert by_figure(worse, "backfill pages").met is False
    assert by_figure(worse, "incremental run: messages").met is False
    busiest = by_figure(worse, "busiest 1 s")
    assert busiest.met is False and "1 of the busiest second's requests" in busiest.note
    assert by_figure(worse, "write path time").met is False  # 3.3 / 1.6 > 2


def size(rows: int, cold: float, statements: int = 1, requests: int = 200) -> SizeFigures:
    return SizeFigures(
        rows=rows,
        window_states=rows // 2,
        load_seconds=1.0,
        cold_ms=cold,
        warm_ms=100.0,
        idle_ms=5.0,
        idle_statements=statements,
        cold_requests=requests,
        warm_requests=requests,
        uncovered=200,
    )


def test_discovery_compares_the_largest_history_with_the_smallest() -> None:
    rows = discovery_rows([size(10_200, 400.0), size(1_000_200, 790.0)])
    cold = by_figure(rows, "cold tick")
    assert cold.baseline_value == 400.0 and cold.met is True
    assert by_figure(rows, "statements in an idle tick").met is True
    worse = discovery_rows(
        [size(10_200, 400.0), size(1_000_200, 800.0, statements=2, requests=150)]
    )
    assert by_figure(worse, "cold tick").met is False  # exactly 2x is not < 2x
    assert by_figure(worse, "statements in an idle tick").met is False
    assert by_figure(worse, "windows requested").met is False


def test_discovery_counts_the_windows_a_batch_run_covers_not_its_run_requests() -> None:
    # A sensor tick asks for closed windows in batch runs over a partition range (docs/scaling.md):
    # counting run requests would report 2 of 5 windows and fail a tick that found them all.
    batch = dg.RunRequest(
        run_key="batch", tags={RANGE_START_TAG: "a", RANGE_END_TAG: "d", TAG_WINDOWS: "4"}
    )
    retry = dg.RunRequest(run_key="retry", partition_key="e")
    assert windows_requested(dg.SensorResult(run_requests=[batch, retry])) == 5
    assert windows_requested(dg.SensorResult(skip_reason="nothing closed")) == 0
