"""One row per figure, so every benchmark reports the same way and one command can collect them.

A row carries the figure, the baseline measured in the same run (never a number from another
machine or another day), their ratio, and the target the figure is held to. Whether the target
is met is computed here from the numbers, so a table can never claim a target it does not show.
Pure: no I/O beyond turning rows into JSON or Markdown text.
"""

from __future__ import annotations

import json
import math
import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

Op = Literal["<", "<=", ">", ">=", "=="]
_OPS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
}
_SYMBOLS = {"<": "<", "<=": "≤", ">": ">", ">=": "≥", "==": "="}


@dataclass(frozen=True)
class Target:
    """A bound on the figure itself (`of="value"`) or on its ratio to the same-run baseline."""

    op: Op
    bound: float
    of: Literal["value", "ratio"] = "value"
    text: str = ""
    """How to say it in the table when the bound alone reads badly (e.g. "= minimum")."""

    def met(self, value: float | None, ratio: float | None) -> bool | None:
        subject = value if self.of == "value" else ratio
        if subject is None or math.isnan(subject):
            return None
        return _OPS[self.op](subject, self.bound)

    def describe(self, unit: str) -> str:
        if self.text:
            return self.text
        if self.of == "ratio":
            return f"{_SYMBOLS[self.op]} {format_number(self.bound)}x baseline"
        return f"{_SYMBOLS[self.op]} {format_number(self.bound)} {unit}".rstrip()


@dataclass(frozen=True)
class BenchRow:
    benchmark: str
    figure: str
    value: float | None
    unit: str = ""
    baseline: str = ""
    """What the baseline is; empty when the figure has none."""
    baseline_value: float | None = None
    baseline_unit: str = ""
    ratio: float | None = None
    target: str = ""
    met: bool | None = None
    """None: no target (the figure is reported for context) or no figure to judge."""
    note: str = ""
    failed: bool = False
    """The benchmark did not run to the end: this row stands in for all of its figures."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BenchRow:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def measured(
    benchmark: str,
    figure: str,
    value: float,
    unit: str = "",
    *,
    baseline: str = "",
    baseline_value: float | None = None,
    baseline_unit: str | None = None,
    target: Target | None = None,
    note: str = "",
) -> BenchRow:
    """A row whose ratio comes from its own baseline and whose verdict comes from its target."""
    ratio = None
    if baseline_value is not None and baseline_value != 0:
        ratio = value / baseline_value
    return BenchRow(
        benchmark=benchmark,
        figure=figure,
        value=value,
        unit=unit,
        baseline=baseline,
        baseline_value=baseline_value,
        baseline_unit=unit if baseline_unit is None else baseline_unit,
        ratio=ratio,
        target=target.describe(unit) if target else "",
        met=target.met(value, ratio) if target else None,
        note=note,
    )


def failure(benchmark: str, reason: str) -> BenchRow:
    """The row that replaces a benchmark's figures when it crashed, timed out or was refused."""
    return BenchRow(
        benchmark=benchmark,
        figure="benchmark failed: no figures",
        value=None,
        met=False,
        note=" ".join(reason.split())[:300],
        failed=True,
    )


def rows_to_json(rows: Iterable[BenchRow]) -> str:
    return json.dumps([row.to_json() for row in rows], indent=1, sort_keys=True)


def rows_from_json(text: str) -> list[BenchRow]:
    data = json.loads(text)
    if not isinstance(data, list):
        raise ValueError("benchmark rows must be a JSON list")
    return [BenchRow.from_json(item) for item in data]


def exit_code(rows: Sequence[BenchRow]) -> int:
    """0: every target met; 1: a target missed; 3: a benchmark failed to give its figures."""
    if any(row.failed for row in rows):
        return 3
    return 1 if any(row.met is False for row in rows) else 0


def format_number(value: float) -> str:
    if not math.isfinite(value):
        return "n/a"
    if value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}"
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 0.1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def format_ratio(ratio: float) -> str:
    return f"{ratio:.3f}x" if abs(ratio) < 0.1 else f"{ratio:.2f}x"


def _quantity(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    return f"{format_number(value)} {unit}".rstrip()


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _verdict(row: BenchRow) -> str:
    if row.failed:
        return "**FAILED**"
    if row.met is None:
        return "—"
    return "yes" if row.met else "**no**"


COLUMNS = ("benchmark", "figure", "value", "baseline (same run)", "ratio", "target", "met", "note")


def render_markdown(rows: Sequence[BenchRow]) -> str:
    lines = [
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "|".join("---" for _ in COLUMNS) + "|",
    ]
    for row in rows:
        baseline = ""
        if row.baseline_value is not None:
            baseline = _quantity(row.baseline_value, row.baseline_unit)
            if row.baseline:
                baseline += f" ({row.baseline})"
        elif row.baseline:
            baseline = row.baseline
        ratio = "" if row.ratio is None else format_ratio(row.ratio)
        cells = (
            row.benchmark,
            row.figure,
            _quantity(row.value, row.unit) if not row.failed else "—",
            baseline,
            ratio,
            row.target,
            _verdict(row),
            row.note,
        )
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"
