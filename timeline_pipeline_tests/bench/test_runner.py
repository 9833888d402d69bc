"""`python -m bench`: every benchmark in its own process, one table, failures as rows.

These start real benchmark processes, but only the offline quality benchmark (seconds) and
benchmarks that are refused or stopped before they measure anything.
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from bench import runner
from bench.runner import Benchmark, outcome_rows, run_all, select
from bench.table import exit_code, failure, measured, rows_to_json

QUALITY = Benchmark("quality")
REFUSED = Benchmark("ingest", module="bench.ingest.run", args=("--events", "0"))
"""A real benchmark given bad input: it exits 2 before touching a database."""


def test_a_failing_benchmark_becomes_a_row_and_the_others_keep_their_figures() -> None:
    echo = io.StringIO()
    outcomes = run_all([REFUSED, QUALITY], quick=True, timeout=300, echo=echo)
    refused, quality = outcomes
    assert refused.returncode == 2
    assert refused.rows == [failure("ingest", refused.rows[0].note)]
    assert "exit 2 without figures" in refused.rows[0].note
    assert "--events must be 1..200000" in refused.rows[0].note
    assert quality.returncode in (0, 1) and not quality.failed
    figures = {row.figure for row in quality.rows}
    assert "rules precision, tuned set (3 transcripts)" in figures
    assert any(figure.startswith("rules recall, held-out half (") for figure in figures)
    assert exit_code([*refused.rows, *quality.rows]) == 3
    assert "== bench ingest" in echo.getvalue() and "== bench quality" in echo.getvalue()


def test_a_benchmark_past_its_time_limit_is_stopped_and_reported() -> None:
    [outcome] = run_all([QUALITY], quick=True, timeout=0.3, echo=io.StringIO())
    assert outcome.returncode is None
    assert outcome.rows == [failure("quality", "stopped after the 0.3 s time limit")]


def test_the_rows_file_decides_not_the_exit_code(tmp_path: Path) -> None:
    rows = [measured("ingest", "ack latency p99", 61, "ms")]
    written = tmp_path / "rows.json"
    written.write_text(rows_to_json(rows))
    assert outcome_rows("ingest", written, 1, 60, []) == rows  # a missed target exits 1
    missing = outcome_rows("ingest", tmp_path / "none.json", 0, 60, ["Traceback", "boom"])
    assert missing == [failure("ingest", "exit 0 without figures: boom")]
    (tmp_path / "empty.json").write_text("[]")
    assert outcome_rows("ingest", tmp_path / "empty.json", 0, 60, [])[0].failed
    (tmp_path / "torn.json").write_text('[{"benchmark": ')
    assert outcome_rows("ingest", tmp_path / "torn.json", 0, 60, [])[0].failed


def test_only_picks_known_benchmarks_in_the_order_given() -> None:
    assert [b.name for b in select([])] == [
        "ingest",
        "reconcile",
        "discovery",
        "maintenance",
        "quality",
        "purge",
        "callbacks",
        "ui",
        "drain",
    ]
    assert [b.name for b in select(["quality", "ingest", "quality"])] == ["quality", "ingest"]
    with pytest.raises(ValueError, match=r"unknown benchmark.*nope"):
        select(["nope"])


def test_quick_runs_pass_smaller_sizes_to_every_database_benchmark(tmp_path: Path) -> None:
    rows_file = tmp_path / "rows.json"
    for benchmark in runner.BENCHMARKS:
        full = benchmark.command(rows_file, quick=False)
        quick = benchmark.command(rows_file, quick=True)
        assert full[1:3] == ["-m", f"bench.{benchmark.name}.run"]
        assert full[-2:] == quick[-2:] == ["--rows", str(rows_file)]
        assert (quick != full) == (benchmark.name != "quality")


def test_the_command_prints_the_report_and_writes_the_same_file(tmp_path: Path) -> None:
    output = tmp_path / "results" / "latest.md"
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--only", "quality", "--output", str(output)],
        cwd=runner.ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert output.read_text() == done.stdout
    text = done.stdout
    assert f"`python -m bench --only quality --output {output}`" in text
    assert "PostgreSQL 1" in text and "cores" in text
    assert "| quality | rules precision, tuned set (3 transcripts) |" in text
    assert ("Every target in the table is met." in text) == (done.returncode == 0)
    assert "| quality |" in done.stderr  # the benchmark's own table went to stderr


def test_an_unknown_benchmark_is_a_usage_error_and_writes_nothing(tmp_path: Path) -> None:
    output = tmp_path / "latest.md"
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--only", "quality,nope", "--output", str(output)],
        cwd=runner.ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "unknown benchmark(s): nope" in done.stderr
    assert not output.exists()
