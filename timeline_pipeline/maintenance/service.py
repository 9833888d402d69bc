"""The maintenance job service: create, read, advance, pause, configure, resume, cancel
(docs/maintenance.md).

* Create is idempotent on its key: the same key and the same normalized input return the
  original job; other input under the key conflicts. A job starts as a dry-run unless `apply`
  is set; an apply is always a new job with a new key. One open (ready or paused) job per type
  and scope, whatever its mode.
* Each advance is one short transaction: lock the job row without waiting (busy otherwise),
  check the caller's revision, status and the delay since the last batch, then run one bounded
  processor step under the job's timeouts inside a savepoint, and commit the data, checkpoint,
  counters and revision together. An SQL failure rolls the step back to the savepoint and
  records a paused state with the error (timeouts, deadlocks and serialization failures are
  marked retryable), leaving the checkpoint where it was.
* Pause, configure, resume and cancel take the current revision; a stale one does nothing.
  Configure replaces the limits and keeps checkpoint and parameters. Cancel keeps committed
  data. Completed and cancelled jobs stay for audit.
* Legal holds win (docs/maintenance.md, "Legal holds"): an apply job of a processor that
  rewrites content (`Processor.rewrites`) is refused at create, and every batch asks the
  legal-hold gate (`lifecycle.hold_gate`) before and after its step: a hold pauses the job
  with `legal_hold_active` and rolls the batch back. Dry-runs read only and are never held.
* Who did it: create and every transition (the first batch, pause, configure, resume,
  cancel, completion, a pause by failure) write an audit event with the actor the listener
  received (`cli:<user>` from the driver).
* An apply job's scan is followed by a fresh, independently paged verification pass; only a
  complete one makes the job `completed`. A residual row pauses the job and names the row.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError

from timeline_pipeline.db.engine import connection, transaction
from timeline_pipeline.domain.errors import (
    IdempotencyConflict,
    InvalidInput,
    InvalidTransition,
    LegalHoldActive,
    StaleRevision,
)
from timeline_pipeline.domain.maintenance import (
    OPEN_MAINTENANCE_STATUSES,
    MaintenancePhase,
    MaintenanceStatus,
)
from timeline_pipeline.lifecycle import hold_gate
from timeline_pipeline.maintenance.errors import (
    Busy,
    JobNotFound,
    OpenJobExists,
    ProcessorRefused,
    TooEarly,
    UnknownProcessor,
)
from timeline_pipeline.maintenance.limits import Limits, check_limits
from timeline_pipeline.maintenance.preview_report import RowText, row_ids, with_titles
from timeline_pipeline.maintenance.processor import Processor, Registry, StepOutcome, StepRequest
from timeline_pipeline.maintenance.sql import batch_transaction, bounded, describe_sql_error
from timeline_pipeline.observability.logs import get_logger
from timeline_pipeline.observability.metrics import MaintenanceMetrics
from timeline_pipeline.store import maintenance_jobs as store
from timeline_pipeline.store import rerun_previews
from timeline_pipeline.store.audit import audit_curation
from timeline_pipeline.store.maintenance_jobs import DuplicateJob, JobRowBusy, MaintenanceJob

IDEMPOTENCY_KEY_RE: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,255}$")
JOB_ID_RE: Final = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
ACTIONS: Final = ("advance", "pause", "configure", "resume", "cancel")
LOG_EVENTS: Final = {
    "pause": "maintenance.paused",
    "configure": "maintenance.configured",
    "resume": "maintenance.resumed",
    "cancel": "maintenance.cancelled",
}

log = get_logger("timeline_pipeline.maintenance")

UNATTRIBUTED: Final = "loopback"
"""The actor of a request that named none (the raw listener API without the driver)."""


def _audit(conn: Connection, job: MaintenanceJob, action: str, actor: str, now: datetime) -> None:
    """One audit event per job transition, in its own transaction: ids and counters only."""
    audit_curation(
        conn,
        actor=actor,
        action=f"maintenance.{action}",
        subject_type="maintenance_job",
        subject_id=job.id,
        workspace_id=job.scope_key,
        details={
            "type": job.job_type,
            "mode": "apply" if job.apply else "dry_run",
            "status": job.status,
            "phase": job.phase,
            "revision": job.revision,
        },
        now=now,
    )


def _hold_check(conn: Connection, processor: Processor, job_apply: bool, workspace: str) -> None:
    """LegalHoldActive when a hold reaches a descriptor an apply of this processor rewrites."""
    if not job_apply:
        return
    for key in getattr(processor, "rewrites", ()):
        hold_gate.require_free(conn, key, workspace, what="maintenance apply")


def _utc_now() -> datetime:
    return datetime.now(UTC)


def input_hash(job_type: str, version: str, apply: bool, parameters: Any, limits: Limits) -> str:
    """The digest idempotency compares: everything a create request asks for, normalized."""
    document = {
        "type": job_type,
        "version": version,
        "apply": apply,
        "parameters": parameters,
        "limits": limits.as_dict(),
    }
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def job_json(job: MaintenanceJob) -> dict[str, Any]:
    """What the listener answers and the driver prints for a job."""

    def stamp(value: datetime | None) -> str | None:
        return None if value is None else value.isoformat()

    return {
        "id": job.id,
        "type": job.job_type,
        "processor_version": job.processor_version,
        "scope": job.scope_key,
        "idempotency_key": job.idempotency_key,
        "mode": "apply" if job.apply else "dry_run",
        "status": job.status,
        "phase": job.phase,
        "revision": job.revision,
        "limits": {
            "batch_size": job.batch_size,
            "delay_ms": job.delay_ms,
            "lock_timeout_ms": job.lock_timeout_ms,
            "statement_timeout_ms": job.statement_timeout_ms,
        },
        "parameters": job.parameters,
        "checkpoint": job.checkpoint,
        "progress": job.progress,
        "result": job.result,
        "error": job.error,
        "batches": job.batches,
        "not_before": stamp(job.not_before),
        "created_at": stamp(job.created_at),
        "updated_at": stamp(job.updated_at),
        "finished_at": stamp(job.finished_at),
    }


def check_job_id(job_id: str) -> str:
    if not JOB_ID_RE.match(job_id):
        raise JobNotFound("no maintenance job with this id")
    return job_id


class JobService:
    def __init__(
        self,
        engine: Engine,
        registry: Registry,
        *,
        metrics: MaintenanceMetrics | None = None,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        self.engine = engine
        self.registry = registry
        self.metrics = metrics or MaintenanceMetrics()
        self._clock = clock

    # --- create and read -----------------------------------------------------------------

    def create(
        self,
        *,
        job_type: str,
        idempotency_key: str,
        parameters: Mapping[str, Any],
        limits: Limits,
        apply: bool = False,
        actor: str = UNATTRIBUTED,
    ) -> tuple[MaintenanceJob, bool]:
        """The job and whether this call created it (False: the key's original job)."""
        if not isinstance(idempotency_key, str) or not IDEMPOTENCY_KEY_RE.match(idempotency_key):
            raise InvalidInput(
                "idempotency_key must be 1-256 characters: letters, digits, . _ : - "
                "(starting with a letter or digit)"
            )
        processor = self.registry.latest(job_type)
        validated = processor.validate(parameters)
        check_limits(limits)
        digest = input_hash(job_type, processor.version, apply, validated.parameters, limits)
        now = self._clock()
        with transaction(self.engine) as conn:
            existing = self._by_key(conn, idempotency_key, digest)
            if existing is not None:
                return existing, False
            try:
                processor.preflight(conn, validated.parameters)
            except ProcessorRefused as exc:
                raise InvalidInput(f"preflight refused the job: {exc}") from None
            _hold_check(conn, processor, apply, validated.scope_key)
            self._no_open_job(conn, job_type, validated.scope_key)
            values = {
                "id": str(uuid.uuid4()),
                "job_type": job_type,
                "processor_version": processor.version,
                "scope_key": validated.scope_key,
                "idempotency_key": idempotency_key,
                "input_hash": digest,
                "parameters_json": validated.parameters,
                "apply": apply,
                "status": MaintenanceStatus.READY.value,
                "phase": MaintenancePhase.SCAN.value,
                **limits.as_dict(),
                "checkpoint_json": {},
                "progress_json": {},
                "batches": 0,
                "created_at": now,
                "updated_at": now,
            }
            try:
                job = store.insert(conn, values)
            except DuplicateJob:  # a concurrent create won: the same key, or the same scope
                existing = self._by_key(conn, idempotency_key, digest)
                if existing is not None:
                    return existing, False
                self._no_open_job(conn, job_type, validated.scope_key)
                raise OpenJobExists("another open job of this type and scope exists") from None
            _audit(conn, job, "create", actor, now)
        log.info(
            "maintenance.created",
            job_id=job.id,
            job_type=job_type,
            scope=job.scope_key,
            apply=apply,
        )
        return job, True

    def _by_key(self, conn: Connection, key: str, digest: str) -> MaintenanceJob | None:
        existing = store.get_by_idempotency_key(conn, key)
        if existing is not None and existing.input_hash != digest:
            raise IdempotencyConflict(
                "this idempotency key was used for a job with different input; use a new key"
            )
        return existing

    @staticmethod
    def _no_open_job(conn: Connection, job_type: str, scope_key: str) -> None:
        open_job = store.open_for_scope(conn, job_type, scope_key)
        if open_job is not None:
            raise OpenJobExists(
                f"job {open_job.id} of this type and scope is {open_job.status}: "
                "finish or cancel it first",
                current=open_job,
            )

    def get(self, job_id: str) -> MaintenanceJob:
        check_job_id(job_id)
        with connection(self.engine) as conn:
            job = store.get(conn, job_id)
        if job is None:
            raise JobNotFound("no maintenance job with this id")
        return job

    def view(self, job_id: str) -> dict[str, Any]:
        """The job as the listener answers it (`present`)."""
        return self.present(self.get(job_id))

    def present(self, job: MaintenanceJob) -> dict[str, Any]:
        """The job JSON, with a rerun preview's report given its titles from the preview's
        scratch rows as they are now (docs/maintenance.md, "Preview a rerun"): the stored
        result keeps ids and counts only, so a recall or the purge of the rows takes their
        text out of every later answer."""
        shown = job_json(job)
        report = (job.result or {}).get("preview")
        if not isinstance(report, dict):
            return shown
        with connection(self.engine) as conn:
            found = rerun_previews.texts(conn, job.id, row_ids(report))
        texts = {row: RowText(*text) for row, text in found.items()}
        shown["result"] = {**(job.result or {}), "preview": with_titles(report, texts)}
        return shown

    # --- revisioned actions --------------------------------------------------------------

    def act(
        self,
        job_id: str,
        action: str,
        *,
        revision: int,
        limits: Limits | None = None,
        actor: str = UNATTRIBUTED,
    ) -> MaintenanceJob:
        if action == "advance":
            return self.advance(job_id, revision=revision, actor=actor)
        if action == "configure":
            if limits is None:
                raise InvalidInput("configure needs options")
            return self.configure(job_id, revision=revision, limits=limits, actor=actor)
        if action == "pause":
            return self.pause(job_id, revision=revision, actor=actor)
        if action == "resume":
            return self.resume(job_id, revision=revision, actor=actor)
        if action == "cancel":
            return self.cancel(job_id, revision=revision, actor=actor)
        raise InvalidInput(f"unknown action {action!r}: use one of {', '.join(ACTIONS)}")

    def _mutate(
        self,
        job_id: str,
        revision: int,
        *,
        action: str,
        allowed: tuple[MaintenanceStatus, ...],
        values: Callable[[MaintenanceJob, datetime], dict[str, Any]],
        actor: str,
    ) -> MaintenanceJob:
        check_job_id(job_id)
        try:
            with batch_transaction(self.engine) as conn:
                job = self._locked(conn, job_id, revision)
                if job.status not in allowed:
                    raise InvalidTransition(f"cannot {action} a {job.status} job", current=job)
                now = self._clock()
                moved = store.transition(conn, job, {**values(job, now), "updated_at": now})
                if moved is None:  # unreachable while the row is locked; never guess
                    raise StaleRevision("the job moved on", current=store.get(conn, job_id))
                _audit(conn, moved, action, actor, now)
        except JobRowBusy:
            raise Busy("a batch holds the job row: retry shortly") from None
        log.info(LOG_EVENTS[action], job_id=job_id, revision=moved.revision)
        return moved

    @staticmethod
    def _locked(conn: Connection, job_id: str, revision: int) -> MaintenanceJob:
        job = store.lock_nowait(conn, job_id)
        if job is None:
            raise JobNotFound("no maintenance job with this id")
        if job.revision != revision:
            raise StaleRevision(
                f"revision {revision} is stale: the job is at revision {job.revision}", current=job
            )
        return job

    def _switch(
        self,
        action: str,
        job_id: str,
        revision: int,
        actor: str,
        *,
        source: MaintenanceStatus,
        target: MaintenanceStatus,
    ) -> MaintenanceJob:
        """An operator's switch of an open job between `ready` and `paused` (docs/maintenance.md):
        from `source` only, nothing but the status changes."""
        return self._mutate(
            job_id,
            revision,
            action=action,
            actor=actor,
            allowed=(source,),
            values=lambda _job, _now: {"status": target.value},
        )

    def pause(self, job_id: str, *, revision: int, actor: str = UNATTRIBUTED) -> MaintenanceJob:
        ready, paused = MaintenanceStatus.READY, MaintenanceStatus.PAUSED
        return self._switch("pause", job_id, revision, actor, source=ready, target=paused)

    def resume(self, job_id: str, *, revision: int, actor: str = UNATTRIBUTED) -> MaintenanceJob:
        paused, ready = MaintenanceStatus.PAUSED, MaintenanceStatus.READY
        return self._switch("resume", job_id, revision, actor, source=paused, target=ready)

    def cancel(self, job_id: str, *, revision: int, actor: str = UNATTRIBUTED) -> MaintenanceJob:
        return self._mutate(
            job_id,
            revision,
            action="cancel",
            actor=actor,
            allowed=OPEN_MAINTENANCE_STATUSES,
            values=lambda _job, now: {
                "status": MaintenanceStatus.CANCELLED.value,
                "finished_at": now,
                "not_before": None,
            },
        )

    def configure(
        self, job_id: str, *, revision: int, limits: Limits, actor: str = UNATTRIBUTED
    ) -> MaintenanceJob:
        """New limits; checkpoint, parameters and any pending delay stay as they are."""
        check_limits(limits)
        return self._mutate(
            job_id,
            revision,
            action="configure",
            actor=actor,
            allowed=OPEN_MAINTENANCE_STATUSES,
            values=lambda _job, _now: limits.as_dict(),
        )

    # --- advance -------------------------------------------------------------------------

    def advance(self, job_id: str, *, revision: int, actor: str = UNATTRIBUTED) -> MaintenanceJob:
        check_job_id(job_id)
        job_type = "unknown"
        try:
            with batch_transaction(self.engine) as conn:
                job = self._locked(conn, job_id, revision)
                job_type = job.job_type
                if job.status != MaintenanceStatus.READY:
                    raise InvalidTransition(f"cannot advance a {job.status} job", current=job)
                now = self._clock()
                if job.not_before is not None and job.not_before > now:
                    wait_ms = int((job.not_before - now) / timedelta(milliseconds=1)) + 1
                    raise TooEarly(
                        f"the job's delay runs for another {wait_ms} ms",
                        current=job,
                        retry_after_ms=wait_ms,
                    )
                moved, outcome = self._step(conn, job, now)
                if job.batches == 0 and job.phase == MaintenancePhase.SCAN.value:
                    _audit(conn, moved, "run", actor, now)
                if outcome in ("paused", "completed"):
                    _audit(conn, moved, outcome, actor, now)
        except JobRowBusy:
            self.metrics.advances.labels(job_type, "busy").inc()
            raise Busy("a batch holds the job row: retry shortly") from None
        except StaleRevision:
            self.metrics.advances.labels(job_type, "stale").inc()
            raise
        except TooEarly:
            self.metrics.advances.labels(job_type, "delay").inc()
            raise
        except InvalidTransition:
            self.metrics.advances.labels(job_type, "refused").inc()
            raise
        self.metrics.advances.labels(job_type, outcome).inc()
        log.info(
            "maintenance.advanced",
            job_id=job_id,
            revision=moved.revision,
            status=moved.status,
            phase=moved.phase,
            outcome=outcome,
            error_code=None if moved.error is None else moved.error.get("code"),
        )
        return moved

    def _step(
        self, conn: Connection, job: MaintenanceJob, now: datetime
    ) -> tuple[MaintenanceJob, str]:
        phase = MaintenancePhase(job.phase)
        started = time.perf_counter()
        error: dict[str, Any] | None = None
        outcome: StepOutcome | None = None
        try:
            processor = self.registry.get(job.job_type, job.processor_version)
            request = StepRequest(
                parameters=job.parameters,
                apply=job.apply,
                phase=phase,
                checkpoint=job.checkpoint,
                progress=job.progress,
                batch_size=job.batch_size,
                now=now,
                job_id=job.id,
            )
            with (
                conn.begin_nested(),
                bounded(
                    conn,
                    lock_timeout_ms=job.lock_timeout_ms,
                    statement_timeout_ms=job.statement_timeout_ms,
                ),
            ):
                processor.preflight(conn, job.parameters)
                _hold_check(conn, processor, job.apply, job.scope_key)
                outcome = processor.step(conn, request)
                if outcome.violation is not None:
                    raise _Violation(outcome.violation)
                _hold_check(conn, processor, job.apply, job.scope_key)
        except UnknownProcessor as exc:
            error = {"code": "unknown_processor", "message": str(exc), "retryable": False}
        except ProcessorRefused as exc:
            error = {"code": exc.code, "message": str(exc), "retryable": False}
        except LegalHoldActive as exc:
            error = {"code": exc.code, "message": str(exc), "retryable": False}
        except _Violation as exc:
            found = dict(exc.violation)
            error = {
                "code": "verification_failed",
                "reason": found.pop("code", None),
                **found,
                "retryable": False,
            }
        except DBAPIError as exc:
            error = describe_sql_error(exc)
        except (KeyError, TypeError, ValueError) as exc:
            # Stored parameters or state a processor cannot read (e.g. written by other code):
            # fail closed, naming the class only, never the value.
            error = {
                "code": "malformed_state",
                "error_class": type(exc).__name__,
                "retryable": False,
            }
        finally:
            self.metrics.batch_seconds.labels(job.job_type, phase.value).observe(
                time.perf_counter() - started
            )
        if error is not None or outcome is None:
            error = error or {"code": "no_outcome", "retryable": False}
            values: dict[str, Any] = {
                "status": MaintenanceStatus.PAUSED.value,
                "error_json": {**error, "phase": phase.value, "at": now.isoformat()},
                "updated_at": now,
            }
            kind = "paused"
        else:
            values = {
                "checkpoint_json": outcome.checkpoint,
                "progress_json": outcome.progress,
                "batches": job.batches + 1,
                "error_json": None,
                "not_before": now + timedelta(milliseconds=job.delay_ms),
                "updated_at": now,
            }
            kind = "advanced"
            if outcome.done and phase is MaintenancePhase.SCAN and job.apply:
                values.update(phase=MaintenancePhase.VERIFY.value, checkpoint_json={})
            elif outcome.done:
                values.update(
                    status=MaintenanceStatus.COMPLETED.value,
                    result_json=outcome.result or {},
                    finished_at=now,
                    not_before=None,
                )
                kind = "completed"
        moved = store.transition(conn, job, values, expected_status=MaintenanceStatus.READY)
        if moved is None:  # unreachable while the row is locked; never guess
            raise StaleRevision("the job moved on", current=store.get(conn, job.id))
        return moved, kind


class _Violation(Exception):
    """Verification found a residual row: roll the step back and pause with it."""

    def __init__(self, violation: dict[str, Any]) -> None:
        super().__init__(violation.get("code"))
        self.violation = violation
