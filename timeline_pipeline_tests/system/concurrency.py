"""What the run queue did, from runs' creation, start and end times. Pure.

A limit is only tested when more runs wanted to run than it allows: `max_waiting` says how
deep the queue was (created and not finished), `max_running` how many ran at once, and
`waited_behind` which runs were created while another run of the same group was unfinished
and started only after it ended.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from timeline_pipeline_tests.system.graphql import Run


def _interval(run: Run) -> tuple[float, float]:
    if run.started is None or run.ended is None:
        raise ValueError(f"run {run.run_id} has not finished ({run.status})")
    return run.started, run.ended


def _peak(spans: Iterable[tuple[float, float]]) -> int:
    """Most spans open at one moment; a span ending when another starts does not overlap it."""
    events = sorted(
        [(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans],
        key=lambda event: (event[0], event[1]),  # ends before starts at the same instant
    )
    peak = current = 0
    for _, step in events:
        current += step
        peak = max(peak, current)
    return peak


def max_running(runs: Sequence[Run]) -> int:
    return _peak([_interval(run) for run in runs])


def max_waiting(runs: Sequence[Run]) -> int:
    """Most runs created and not yet finished at one moment (queued or running)."""
    return _peak([(run.created, _interval(run)[1]) for run in runs])


def overlapping_pairs(runs: Sequence[Run]) -> list[tuple[str, str]]:
    ordered = sorted(runs, key=lambda run: _interval(run)[0])
    pairs: list[tuple[str, str]] = []
    for index, first in enumerate(ordered):
        first_end = _interval(first)[1]
        for second in ordered[index + 1 :]:
            if _interval(second)[0] >= first_end:
                break
            pairs.append((first.run_id, second.run_id))
    return pairs


def waited_behind(runs: Sequence[Run]) -> list[tuple[str, str]]:
    """(waiting run, run it waited for): created before the other ended, started after."""
    found: list[tuple[str, str]] = []
    for waiting in runs:
        start = _interval(waiting)[0]
        for other in runs:
            if other is waiting:
                continue
            other_start, other_end = _interval(other)
            if other_start < start and waiting.created < other_end <= start:
                found.append((waiting.run_id, other.run_id))
                break
    return found


def by_tag(runs: Iterable[Run], key: str) -> dict[str, list[Run]]:
    groups: dict[str, list[Run]] = {}
    for run in runs:
        value = run.tags.get(key)
        if value is not None:
            groups.setdefault(value, []).append(run)
    return groups
