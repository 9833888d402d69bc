"""The results document: where and how the figures were taken, the table, and what missed."""

from __future__ import annotations

from datetime import UTC, datetime

from bench.machine import MachineFacts
from bench.report import Outcome, all_rows, render_report
from bench.table import Target, failure, measured

STARTED = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)


def facts(load_before: float = 0.1, cores: int = 2) -> MachineFacts:
    return MachineFacts(
        cores=cores,
        cpu_model="Example CPU",
        memory_gib=8.0,
        python="3.11.7",
        postgresql="15.20",
        system="Linux x86_64",
        commit="0123456789ab",
        load_before=load_before,
    )


INGEST = Outcome(
    "ingest",
    [
        measured(
            "ingest",
            "accepted events/s",
            640,
            "events/s",
            target=Target(">=", 1000),
            note="CPU-bound on 2 cores",
        ),
        measured("ingest", "ack latency p99", 41, "ms", target=Target("<", 50)),
    ],
    seconds=31.4,
    returncode=1,
    load_after=0.4,
)
QUALITY = Outcome(
    "quality",
    [measured("quality", "recall, gold set", 0.95, target=Target(">=", 0.8))],
    seconds=2,
    returncode=0,
    load_after=0.3,
)
STOPPED = Outcome(
    "discovery",
    [failure("discovery", "stopped after the 1800 s time limit")],
    seconds=1801,
    returncode=None,
    load_after=0.5,
)


def test_the_report_says_when_where_and_with_what_command() -> None:
    text = render_report(
        [QUALITY], facts(), command="python -m bench --only quality", started=STARTED
    )
    assert "- date: 2026-11-30 09:05 UTC" in text
    assert "`python -m bench --only quality`" in text
    assert "2 cores (Example CPU), 8 GiB memory" in text
    assert "Python 3.11.7, PostgreSQL 15.20" in text
    assert "commit: 0123456789ab" in text
    assert "| quality | recall, gold set | 0.95 |" in text
    assert "| quality | 2 s | 0 | 0.30 |" in text
    assert "Every target in the table is met." in text


def test_every_missed_target_and_failed_benchmark_is_listed_with_its_reason() -> None:
    outcomes = [INGEST, STOPPED, QUALITY]
    text = render_report(outcomes, facts(), command="python -m bench", started=STARTED)
    misses = text.split("## Targets not met", 1)[1].split("## Notes", 1)[0]
    assert (
        "accepted events/s: 640 events/s, target ≥ 1,000 events/s. CPU-bound on 2 cores." in misses
    )
    assert "**discovery** did not finish: stopped after the 1800 s time limit" in misses
    assert "ack latency" not in misses and "recall" not in misses
    assert "| discovery | 1801 s | stopped (time limit) | 0.50 |" in text
    assert [row.benchmark for row in all_rows(outcomes)] == [
        "ingest",
        "ingest",
        "discovery",
        "quality",
    ]


def test_a_busy_machine_is_called_out_and_a_quiet_one_is_not() -> None:
    quiet = render_report([QUALITY], facts(load_before=0.2), command="c", started=STARTED)
    busy_during = Outcome("ingest", INGEST.rows, seconds=30, returncode=1, load_after=1.8)
    busy = render_report([busy_during], facts(load_before=0.2), command="c", started=STARTED)
    assert "The cores were busy during the run" not in quiet
    assert "The cores were busy during the run" in busy
    assert "0.20 before the run, at most 1.80 after a benchmark, on 2 cores" in busy


def test_a_quick_run_and_the_operators_notes_are_in_the_notes() -> None:
    text = render_report(
        [QUALITY], facts(), command="c", started=STARTED, quick=True, notes=["Ran beside a build."]
    )
    notes = text.split("## Notes", 1)[1]
    assert "`--quick`: smaller sizes" in notes
    assert "- Ran beside a build." in notes
