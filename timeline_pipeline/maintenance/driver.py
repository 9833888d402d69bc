"""The driver of one maintenance job: advance it batch by batch within budgets (docs/maintenance.md,
"Dry-run, then apply").

The same loop serves the `timeline-pipeline maintenance run` command (over HTTP to the loopback
listener) and the Dagster job (straight to the job service). Its rules:

* exit 0 when the job is `completed`, 2 when the batch or time budget ran out first, 1 for an
  error, a cancelled job, or a paused one (a job paused before the run starts is resumed only
  with `resume=True`; one paused by a retryable SQL error during the run is resumed with backoff
  up to `max_retries` times);
* an advance waits for its answer as long as the job's batch may take
  (`advance_timeout.AdvanceTimeout`: batch size times a window's bound for a preview, else the
  statement timeout, plus a margin), within the time budget;
* an advance whose answer was lost (timeout, transport error) is retried with its *original*
  revision: a 409 carrying a job at another revision acknowledges that the lost advance
  committed, and nothing is advanced twice; while the lost batch still runs the retry finds
  the job busy, and those answers are waited out for as long as the batch may take, without
  spending `max_retries`;
* 429 waits out the job's delay; busy (409 without a job) retries with capped exponential
  backoff; the time budget covers requests, delays and retries alike, and every wait is cut
  short by it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    retry_if_result,
    wait_exponential,
)
from tenacity.stop import stop_base

from timeline_pipeline.maintenance.advance_timeout import AdvanceTimeout

EXIT_COMPLETED: Final = 0
EXIT_ERROR: Final = 1
EXIT_BUDGET: Final = 2
DEFAULT_RETRIES: Final = 3
MAX_RETRIES: Final = 10
BACKOFF_BASE_SECONDS: Final = 0.2
BACKOFF_CAP_SECONDS: Final = 5.0


class TransportError(Exception):
    """The request's outcome is unknown (no answer, a timeout, a broken connection)."""


@dataclass(frozen=True)
class Reply:
    status: int
    body: Mapping[str, Any]

    @property
    def job(self) -> dict[str, Any] | None:
        if self.status in (200, 201):
            return dict(self.body)
        job = self.body.get("job")
        return dict(job) if isinstance(job, Mapping) else None

    @property
    def busy(self) -> bool:
        return self.status == 409 and self.job is None and self.code == "busy"

    @property
    def code(self) -> str:
        detail = self.body.get("detail")
        return str(detail.get("code", "")) if isinstance(detail, Mapping) else ""

    @property
    def message(self) -> str:
        detail = self.body.get("detail")
        if isinstance(detail, Mapping):
            return str(detail.get("message", ""))
        return f"HTTP {self.status}"


class Transport(Protocol):
    def get(self, job_id: str) -> Reply: ...

    def post(
        self, job_id: str, action: str, body: Mapping[str, Any], *, timeout: float | None = None
    ) -> Reply:
        """`timeout`: how long to wait for the answer (None: the transport's own)."""
        ...


@dataclass(frozen=True)
class Budget:
    max_batches: int
    max_seconds: float
    max_retries: int = DEFAULT_RETRIES
    resume: bool = False


@dataclass
class RunReport:
    exit_code: int
    job: dict[str, Any] | None
    batches: int
    reason: str


class Driver:
    def __init__(
        self,
        transport: Transport,
        *,
        on_job: Callable[[dict[str, Any]], None] = lambda _job: None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        timeouts: AdvanceTimeout | None = None,
    ) -> None:
        self._transport = transport
        self._timeouts = timeouts or AdvanceTimeout()
        self._on_job = on_job
        self._sleep = sleep
        self._clock = clock

    def run(self, job_id: str, budget: Budget) -> RunReport:
        if not 0 <= budget.max_retries <= MAX_RETRIES:
            raise ValueError(f"max_retries must be between 0 and {MAX_RETRIES}")
        deadline = self._clock() + budget.max_seconds
        reply = self._call(lambda: self._transport.get(job_id), budget, deadline)
        if not isinstance(reply, Reply) or reply.job is None:
            return self._failed(None, 0, reply)
        job = reply.job
        self._on_job(job)
        if job["status"] == "paused" and not budget.resume:
            return RunReport(EXIT_ERROR, job, 0, "the job is paused: run again with --resume")
        if job["status"] == "paused":
            outcome = self._resume(job, budget, deadline)
            if isinstance(outcome, RunReport):
                return outcome
            job = outcome
        batches = 0
        sql_retries = 0
        while True:
            status = job["status"]
            if status == "completed":
                return RunReport(EXIT_COMPLETED, job, batches, "completed")
            if status == "cancelled":
                return RunReport(EXIT_ERROR, job, batches, "the job is cancelled")
            if status == "paused":
                error = job.get("error") or {}
                if not error.get("retryable") or sql_retries >= budget.max_retries:
                    code = error.get("code", "paused")
                    return RunReport(EXIT_ERROR, job, batches, f"the job is paused ({code})")
                sql_retries += 1
                self._wait(self._backoff(sql_retries), deadline)
                if self._clock() >= deadline:
                    return RunReport(EXIT_BUDGET, job, batches, "time budget ran out")
                outcome = self._resume(job, budget, deadline)
                if isinstance(outcome, RunReport):
                    return RunReport(outcome.exit_code, outcome.job, batches, outcome.reason)
                job = outcome
                continue
            if batches >= budget.max_batches:
                return RunReport(EXIT_BUDGET, job, batches, "batch budget ran out")
            if self._clock() >= deadline:
                return RunReport(EXIT_BUDGET, job, batches, "time budget ran out")
            advanced = self._advance(job, budget, deadline)
            if isinstance(advanced, RunReport):
                return RunReport(advanced.exit_code, advanced.job, batches, advanced.reason)
            job, committed = advanced
            batches += committed
            if committed:
                self._on_job(job)
                if job["status"] == "ready":
                    self._wait(int(job["limits"]["delay_ms"]) / 1000, deadline)

    # --- one advance -----------------------------------------------------------------------

    def _advance(
        self, job: dict[str, Any], budget: Budget, deadline: float
    ) -> tuple[dict[str, Any], int] | RunReport:
        """The job after one advance and whether a batch was committed (0 or 1)."""
        revision = int(job["revision"])

        def advance() -> Reply:
            timeout = self._timeouts.read_timeout(job, deadline - self._clock())
            return self._transport.post(
                job["id"], "advance", {"revision": revision}, timeout=timeout
            )

        while True:
            reply = self._call(advance, budget, deadline)
            if self._clock() >= deadline and (not isinstance(reply, Reply) or reply.busy):
                return RunReport(
                    EXIT_BUDGET,
                    job,
                    0,
                    "time budget ran out with a batch in flight: it may still commit, and a "
                    "later run recognises it by the job's revision",
                )
            if not isinstance(reply, Reply):
                return self._failed(job, 0, reply)
            if reply.status == 200 and reply.job is not None:
                return reply.job, 1
            if reply.status == 429:
                wait_ms = reply.body.get("retry_after_ms", 0)
                self._wait(
                    max(1, int(wait_ms)) / 1000 if isinstance(wait_ms, int) else 1.0, deadline
                )
                if self._clock() >= deadline:
                    return RunReport(EXIT_BUDGET, reply.job or job, 0, "time budget ran out")
                continue
            current = reply.job
            if reply.status == 409 and current is not None:
                if int(current["revision"]) != revision:
                    # Someone (maybe our own lost request) moved the job: acknowledge, never
                    # advance again on its behalf.
                    self._on_job(current)
                    return current, 0
                return RunReport(EXIT_ERROR, current, 0, reply.message)
            return self._failed(job, 0, reply)

    def _resume(
        self, job: dict[str, Any], budget: Budget, deadline: float
    ) -> dict[str, Any] | RunReport:
        revision = int(job["revision"])
        reply = self._call(
            lambda: self._transport.post(job["id"], "resume", {"revision": revision}),
            budget,
            deadline,
        )
        if isinstance(reply, Reply) and reply.job is not None:
            if reply.status == 200 or reply.job["status"] == "ready":
                self._on_job(reply.job)
                return reply.job
            return RunReport(EXIT_ERROR, reply.job, 0, reply.message)
        return self._failed(job, 0, reply)

    # --- retries and waits -------------------------------------------------------------------

    def _call(
        self, request: Callable[[], Reply], budget: Budget, deadline: float
    ) -> Reply | TransportError:
        """The request, retried while its outcome is unknown or the job row is busy.

        Once an answer was lost, a busy job is most likely that very request's batch still
        running (it outlasted its read timeout): busy answers are then waited out within the
        time budget without counting against `max_retries`, until the batch commits (the next
        answer names the job at another revision) or ends; the driver must learn which.
        """

        clock = self._clock
        lost: list[bool] = []
        charged = [0]

        def attempt() -> Reply:
            try:
                return request()
            except TransportError:
                lost.append(True)
                raise

        class _Spent(stop_base):
            def __call__(self, retry_state: RetryCallState) -> bool:
                if clock() >= deadline:
                    return True
                outcome = retry_state.outcome
                settling = lost and outcome is not None and not outcome.failed
                if settling and outcome is not None and outcome.result().busy:
                    return False  # the lost batch still holds the job row: wait for it
                charged[0] += 1
                return charged[0] >= budget.max_retries + 1

        def last(state: RetryCallState) -> Reply | TransportError:
            assert state.outcome is not None
            error = state.outcome.exception()
            if isinstance(error, TransportError):
                return error
            result: Reply = state.outcome.result()
            return result

        retrying = Retrying(
            stop=_Spent(),
            wait=wait_exponential(multiplier=BACKOFF_BASE_SECONDS, max=BACKOFF_CAP_SECONDS),
            retry=retry_if_exception_type(TransportError) | retry_if_result(lambda r: r.busy),
            sleep=lambda seconds: self._wait(seconds, deadline),
            retry_error_callback=last,
        )
        outcome: Reply | TransportError = retrying(attempt)
        return outcome

    def _backoff(self, attempt: int) -> float:
        return float(min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2 ** (attempt - 1)))

    def _wait(self, seconds: float, deadline: float) -> None:
        remaining = deadline - self._clock()
        if remaining > 0 and seconds > 0:
            self._sleep(min(seconds, remaining))

    @staticmethod
    def _failed(
        job: dict[str, Any] | None, batches: int, reply: Reply | TransportError
    ) -> RunReport:
        if isinstance(reply, TransportError):
            return RunReport(
                EXIT_ERROR,
                job,
                batches,
                f"no answer from the listener ({reply}); read `status` before continuing: "
                "an unanswered advance may have committed",
            )
        if reply.busy:
            return RunReport(EXIT_ERROR, job, batches, "the job stayed busy through every retry")
        return RunReport(
            EXIT_ERROR,
            reply.job or job,
            batches,
            f"{reply.message} (HTTP {reply.status}, {reply.code or 'error'})",
        )
