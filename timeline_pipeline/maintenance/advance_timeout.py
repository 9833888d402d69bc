"""How long the driver waits for the answer to one advance: the job's own batch budget
(docs/maintenance.md, "Dry-run, then apply"). Pure.

A batch of statements is cut by the job's statement timeout; a rerun preview's batch
synthesizes up to `batch_size` windows, each as long as a window run may take (with Claude,
tens of seconds: `--batch-size 20` takes minutes). A fixed read timeout shorter than that made
the driver give up on a batch that then committed. The wait is the batch's bound (never below
`base_seconds`) plus a margin for the job row's bookkeeping and the commit, and never beyond
what is left of the run's time budget. An answer lost all the same is settled by the job's
revision (`driver`), not reported as a failure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["BASE_SECONDS", "MARGIN_SECONDS", "WINDOW_SECONDS", "AdvanceTimeout"]

BASE_SECONDS: Final = 30.0
"""The least any request is given: the listener's queue, a batch of statements and its commit."""
WINDOW_SECONDS: Final = 120.0
"""One synthesized window: a model call (`modelTimeout`, 60 s by default) and one more attempt."""
MARGIN_SECONDS: Final = 10.0
"""The job row's bookkeeping, the legal-hold checks and the commit after the batch's work."""
SYNTHESIZING: Final = frozenset({("window_rerun", "dry_run")})
"""(type, mode) of jobs whose batch synthesizes windows: a rerun's preview
(docs/maintenance.md, "Preview a rerun")."""


@dataclass(frozen=True, slots=True)
class AdvanceTimeout:
    """The driver's read timeout of an advance, from the job's limits."""

    base_seconds: float = BASE_SECONDS
    window_seconds: float = WINDOW_SECONDS
    margin_seconds: float = MARGIN_SECONDS

    def batch_seconds(self, job: Mapping[str, Any]) -> float:
        """The longest one batch of `job` should take: `batch_size` windows for a job that
        synthesizes them, else its statement timeout; never below `base_seconds`."""
        limits = job.get("limits")
        limits = limits if isinstance(limits, Mapping) else {}
        batch_size = _number(limits.get("batch_size"), 1.0)
        statement = _number(limits.get("statement_timeout_ms"), 0.0) / 1000
        bound = statement
        if (job.get("type"), job.get("mode")) in SYNTHESIZING:
            bound = batch_size * self.window_seconds
        return max(self.base_seconds, bound)

    def read_timeout(self, job: Mapping[str, Any], remaining: float) -> float:
        """The wait for an advance's answer: the batch, the margin, at most `remaining`."""
        wanted = self.batch_seconds(job) + self.margin_seconds
        return max(0.001, min(wanted, remaining))


def _number(value: Any, default: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return default
    return float(value)
