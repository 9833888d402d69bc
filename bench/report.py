"""The results document: when, where and how the figures were taken, the table, and what missed.

Pure: the runner hands in what it measured; this module only turns it into Markdown, so the
document written to `bench/results/latest.md` and the one printed are the same text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from bench.machine import MachineFacts
from bench.table import BenchRow, format_number, render_markdown

BUSY_LOAD_PER_CORE = 0.5
"""Above this 1-minute load average per core, something else shared the cores with the run."""


@dataclass(frozen=True)
class Outcome:
    """One benchmark process: its rows (a failure row when it gave none) and what it cost."""

    name: str
    rows: list[BenchRow] = field(default_factory=list)
    seconds: float = 0.0
    returncode: int | None = None
    """None: it was stopped for running past the time limit."""
    load_after: float = math.nan

    @property
    def failed(self) -> bool:
        return any(row.failed for row in self.rows)


def all_rows(outcomes: Sequence[Outcome]) -> list[BenchRow]:
    return [row for outcome in outcomes for row in outcome.rows]


def render_report(
    outcomes: Sequence[Outcome],
    facts: MachineFacts,
    *,
    command: str,
    started: datetime,
    quick: bool = False,
    notes: Sequence[str] = (),
) -> str:
    rows = all_rows(outcomes)
    lines = [
        "# Benchmark results",
        "",
        f"- date: {started.strftime('%Y-%m-%d %H:%M UTC')}",
        f"- command: `{command}` (from the repository root)",
        f"- commit: {facts.commit}",
        f"- machine: {facts.cores} cores ({facts.cpu_model}), "
        f"{format_number(facts.memory_gib)} GiB memory, {facts.system}",
        f"- Python {facts.python}, PostgreSQL {facts.postgresql}",
        "",
        "## Figures",
        "",
        "Every baseline is measured in the same run, on the same database server, moments "
        "before or after its figure; the ratio is figure / baseline.",
        "",
        render_markdown(rows).rstrip("\n"),
        "",
        "## Runs",
        "",
        "| benchmark | wall time | exit | load average after |",
        "|---|---|---|---|",
        *(_run_line(outcome) for outcome in outcomes),
        "",
        "## Targets not met",
        "",
        *_misses(rows),
        "",
        "## Notes",
        "",
        *(f"- {note}" for note in _notes(outcomes, facts, quick, notes)),
        "",
    ]
    return "\n".join(lines)


def _run_line(outcome: Outcome) -> str:
    stopped = outcome.returncode is None
    exit_text = "stopped (time limit)" if stopped else str(outcome.returncode)
    load = "n/a" if math.isnan(outcome.load_after) else f"{outcome.load_after:.2f}"
    return f"| {outcome.name} | {outcome.seconds:.0f} s | {exit_text} | {load} |"


def _misses(rows: Sequence[BenchRow]) -> list[str]:
    missed = [row for row in rows if row.met is False]
    if not missed:
        return ["Every target in the table is met."]
    lines = []
    for row in missed:
        if row.failed:
            lines.append(f"- **{row.benchmark}** did not finish: {row.note}")
            continue
        value = "n/a" if row.value is None else f"{format_number(row.value)} {row.unit}".rstrip()
        why = f" {row.note}." if row.note else ""
        lines.append(f"- **{row.benchmark}**, {row.figure}: {value}, target {row.target}.{why}")
    return lines


def _notes(
    outcomes: Sequence[Outcome], facts: MachineFacts, quick: bool, extra: Sequence[str]
) -> list[str]:
    notes = []
    if quick:
        notes.append(
            "`--quick`: smaller sizes than the targets are stated for; a smoke run, not the "
            "figures to judge the targets by."
        )
    loads = [o.load_after for o in outcomes if not math.isnan(o.load_after)]
    peak = max([facts.load_before, *loads])
    notes.append(
        f"Load average (1 min): {facts.load_before:.2f} before the run, at most {peak:.2f} "
        f"after a benchmark, on {facts.cores} cores."
    )
    if peak > BUSY_LOAD_PER_CORE * facts.cores:
        notes.append(
            "The cores were busy during the run (the benchmarks' own processes count), so absolute "
            "rates and latencies are "
            "noisy (on a shared 2-core machine they moved by up to +-40 % between runs, see "
            "bench/ingest/NOTES.md); ratios against a same-run baseline are steadier, but the "
            "baseline and the figure were not measured at the same instant."
        )
    notes.extend(extra)
    return notes
