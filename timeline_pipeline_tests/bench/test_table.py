"""Benchmark rows: the ratio comes from the same-run baseline, the verdict from the target."""

from __future__ import annotations

import math

import pytest

from bench.table import (
    BenchRow,
    Target,
    exit_code,
    failure,
    measured,
    render_markdown,
    rows_from_json,
    rows_to_json,
)


def test_the_ratio_is_the_figure_over_the_baseline_measured_with_it() -> None:
    slow_raw = measured(
        "ingest",
        "events/s",
        600,
        "events/s",
        baseline_value=1500,
        baseline_unit="rows/s",
        target=Target(">=", 1 / 3, of="ratio"),
    )
    fast_raw = measured(
        "ingest",
        "events/s",
        600,
        "events/s",
        baseline_value=2400,
        baseline_unit="rows/s",
        target=Target(">=", 1 / 3, of="ratio"),
    )
    assert slow_raw.ratio == pytest.approx(0.4) and slow_raw.met is True
    assert fast_raw.ratio == pytest.approx(0.25) and fast_raw.met is False


@pytest.mark.parametrize(
    ("target", "value", "met"),
    [
        (Target(">=", 1000), 1000, True),
        (Target(">=", 1000), 999.9, False),
        (Target(">", 1000), 1000, False),
        (Target("<", 50), 49.9, True),
        (Target("<", 50), 50, False),
        (Target("<=", 50), 50, True),
        (Target("<=", 50), 51, False),
        (Target("==", 1), 1, True),
        (Target("==", 1), 2, False),
    ],
)
def test_a_target_on_the_value_ignores_the_baseline(
    target: Target, value: float, met: bool
) -> None:
    row = measured("b", "f", value, baseline_value=value * 10, target=target)
    assert row.met is met


def test_a_ratio_target_without_a_usable_baseline_has_no_verdict() -> None:
    assert measured("b", "f", 5, target=Target("<", 2, of="ratio")).met is None
    zero = measured("b", "f", 5, baseline_value=0, target=Target("<", 2, of="ratio"))
    assert zero.ratio is None and zero.met is None
    assert measured("b", "f", math.nan, target=Target("<", 2)).met is None


def test_a_figure_without_a_target_is_context_not_a_pass() -> None:
    row = measured("quality", "model calls", 31, "calls", baseline_value=482)
    assert row.met is None and row.target == ""
    assert exit_code([row]) == 0


def test_the_exit_code_says_missed_targets_and_failed_benchmarks_apart() -> None:
    met = measured("b", "f", 1, target=Target("==", 1))
    missed = measured("b", "f", 2, target=Target("==", 1))
    assert exit_code([met]) == 0
    assert exit_code([met, missed]) == 1
    assert exit_code([met, missed, failure("discovery", "stopped")]) == 3


def test_a_failure_row_stands_in_for_the_figures_and_says_why() -> None:
    row = failure(
        "ingest", "exit 2 without figures:\n  error: --events must be 1..200000 " + "x" * 500
    )
    assert row.failed and row.met is False and row.value is None
    assert "\n" not in row.note and len(row.note) <= 300
    line = render_markdown([row]).splitlines()[-1]
    assert "**FAILED**" in line and "--events must be 1..200000" in line


def test_the_markdown_table_shows_the_baseline_ratio_target_and_verdict() -> None:
    rows = [
        measured(
            "reconcile",
            "write path time",
            3.0,
            "s",
            baseline="bare upsert | same records",
            baseline_value=2.0,
            target=Target("<=", 2, of="ratio"),
            note="a|b",
        ),
        measured("ingest", "ack latency p99", 61.25, "ms", target=Target("<", 50)),
    ]
    lines = render_markdown(rows).splitlines()
    assert len(lines) == 4
    assert {line.count(" | ") for line in (lines[0], *lines[2:])} == {7}  # pipes escaped
    assert (
        "| 3 s | 2 s (bare upsert \\| same records) | 1.50x | ≤ 2x baseline | yes | a\\|b |"
        in (lines[2])
    )
    assert "| 61.2 ms |  |  | < 50 ms | **no** |" in lines[3]


def test_rows_survive_the_file_between_a_benchmark_and_the_runner() -> None:
    rows = [
        measured(
            "discovery",
            "cold tick",
            210.5,
            "ms",
            baseline_value=190.0,
            target=Target("<", 2, of="ratio"),
        ),
        failure("ingest", "stopped"),
    ]
    assert rows_from_json(rows_to_json(rows)) == rows
    with_extra = '[{"benchmark": "b", "figure": "f", "value": 1, "added_later": true}]'
    assert rows_from_json(with_extra) == [BenchRow("b", "f", 1)]
    with pytest.raises(ValueError, match="list"):
        rows_from_json('{"benchmark": "b"}')
