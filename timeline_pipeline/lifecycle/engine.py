"""The archive and purge engine for `generic` descriptors (docs/lifecycle.md, "Purge runbook").

One run evaluates every retention at one instant and walks each selected descriptor, leaves
before parents, in bounded batches along the keyset `(cursor, id)` of the descriptor's composite
index. Each batch is one transaction that:

1. reads the active holds of the descriptor's whole chain and leaves held workspaces out (a run
   selecting one held workspace is refused, nothing deleted);
2. deletes at most `batch_limit` aged-out rows that no live child references and whose parents
   aged out too, from the padded lower bound on (`plan.pad_lower_bound`), in one
   `DELETE ... WHERE id IN (SELECT ... ORDER BY cursor, id LIMIT n) RETURNING ...`;
3. archives the rows it returned through the archive port (written, fsynced, read back and
   verified) when the descriptor is archivable and the run has an archive;
4. reads the holds once more: a hold that appeared meanwhile on a workspace of the batch rolls
   the batch back, as does a child row that arrived under a row being deleted;
5. adds the batch's counts to the run's row, and only then commits.

When nothing needs the rows (no archive, nothing to report), PostgreSQL deletes and counts in
one statement that sends back a single row.

A process killed anywhere loses no row that was not archived: the deletion commits only after
its part is verified, and a killed transaction is rolled back by the database. Only
`hard_delete` is executed; other modes are refused before anything is deleted. Every run is
recorded in `lifecycle_runs`, counts only. A purge of many rows is followed by
`VACUUM (ANALYZE)` on PostgreSQL. Identifiers come from validated descriptors
(`lifecycle.queries`), values are bound parameters.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from sqlalchemy import Connection, Engine, delete, func, select, text
from sqlalchemy.exc import IntegrityError

from timeline_pipeline.db.engine import transaction
from timeline_pipeline.domain.errors import LegalHoldActive, Refused
from timeline_pipeline.domain.lifecycle import (
    DeletionMode,
    LifecycleDescriptor,
    safe_identifier,
)
from timeline_pipeline.lifecycle.archive import ArchivePort
from timeline_pipeline.lifecycle.errors import DeletionModeRefused, NotGeneric
from timeline_pipeline.lifecycle.hold_gate import held_workspaces
from timeline_pipeline.lifecycle.partitions import window_partition_keys
from timeline_pipeline.lifecycle.plan import RetentionPlan, build_plan, pad_lower_bound
from timeline_pipeline.lifecycle.queries import col, in_scope, purge_scope, table_of
from timeline_pipeline.lifecycle.registry import Registry
from timeline_pipeline.observability.logs import get_logger
from timeline_pipeline.observability.metrics import LifecycleMetrics
from timeline_pipeline.store import lifecycle_runs, retired_partitions

log = get_logger(__name__)

VACUUM_THRESHOLD: Final = 10_000
"""Rows purged from one table in one run after which PostgreSQL gets `VACUUM (ANALYZE)`."""
STALE_AFTER: Final = timedelta(hours=1)
"""A `running` run whose heartbeat is older than this was killed: the next run marks it failed.
Every batch beats; one batch is far shorter than this."""
MAX_RETRIES: Final = 5
"""Batches rolled back by a concurrent change before the run gives up (and fails)."""


@dataclass
class DescriptorOutcome:
    descriptor: str
    scanned: int = 0
    held: int = 0
    archived: int = 0
    purged: int = 0
    redacted: int = 0
    batches: int = 0
    skipped: str | None = None
    vacuumed: bool = False
    duration_seconds: float = 0.0


@dataclass
class RunOutcome:
    run_id: int
    run_key: str
    status: str
    as_of: str
    manifest: str | None
    descriptors: list[DescriptorOutcome] = field(default_factory=list)
    duration_seconds: float = 0.0
    error_code: str | None = None
    stale_runs_failed: list[int] = field(default_factory=list)
    """Earlier `running` runs whose heartbeat had stopped, marked failed by this one."""

    def total(self, name: str) -> int:
        return sum(int(getattr(d, name)) for d in self.descriptors)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for name in ("scanned", "held", "archived", "purged", "redacted", "batches"):
            data[name] = self.total(name)
        return data


class _HoldsMoved(Exception):
    """A hold appeared during a batch on one of its workspaces: the batch is rolled back."""


def _recheck_holds(
    conn: Connection,
    chain: tuple[str, ...],
    before: Mapping[str, list[str]],
    touched: Collection[Any] | None,
) -> None:
    """Holds are read again after each batch (docs/lifecycle.md, "What a hold stops"): one
    that appeared since `before` on a workspace the batch touched rolls the batch back.
    `touched` None: the rows are not at hand and the batch may have touched any workspace."""
    appeared = set(held_workspaces(conn, chain)) - set(before)
    if appeared and (touched is None or appeared & set(touched)):
        raise _HoldsMoved()


PurgedRows = Callable[[LifecycleDescriptor, Sequence[Mapping[str, Any]]], None]


@dataclass
class PurgeEngine:
    engine: Engine
    registry: Registry
    archive: ArchivePort | None = None
    batch_limit: int | None = None
    """At most the descriptor's own limit; smaller for throttled runs and tests."""
    batch_delay_ms: int = 0
    vacuum_threshold: int = VACUUM_THRESHOLD
    on_purged: PurgedRows | None = None
    actor: str = "lifecycle"
    metrics: LifecycleMetrics | None = None
    stale_after: timedelta = STALE_AFTER

    def run(
        self,
        *,
        workspace_id: str | None = None,
        descriptor_key: str | None = None,
        as_of: datetime | None = None,
        retention_days_override: int | None = None,
    ) -> RunOutcome:
        started = time.monotonic()
        moment = (as_of or datetime.now(UTC)).astimezone(UTC)
        now = datetime.now(UTC)
        run_key = f"run_{now.strftime('%Y%m%dT%H%M%SZ')}_{secrets.token_hex(4)}"
        with transaction(self.engine) as conn:
            stale = lifecycle_runs.fail_stale(conn, before=now - self.stale_after, now=now)
            run_id = lifecycle_runs.start(
                conn,
                {
                    "run_key": run_key,
                    "mode": "purge",
                    "workspace_id": workspace_id,
                    "descriptor_key": descriptor_key,
                    "as_of": moment,
                    "retention_days_override": retention_days_override,
                    "archive_dir": None,
                    "started_at": now,
                    "heartbeat_at": now,
                },
            )
        outcome = RunOutcome(run_id, run_key, "running", moment.isoformat(), None)
        outcome.stale_runs_failed = stale
        if stale and self.metrics is not None:
            self.metrics.failures.labels(reason="stale_heartbeat").inc(len(stale))
        log.info("lifecycle.run_started", run_id=run_id, run_key=run_key, stale_failed=len(stale))
        try:
            selected = self.registry.select(descriptor_key)
            plan = build_plan(
                self.registry.descriptors.values(),
                [d.key for d in selected],
                as_of=moment,
                override=retention_days_override,
            )
            runnable = self._runnable(selected, descriptor_key, outcome)
            self._refuse_held_selection(runnable, workspace_id)
            if self.archive is not None:
                self.archive.open_run(run_key, moment)
                outcome.manifest = self.archive.manifest_location()
            for d in runnable:
                outcome.descriptors.append(self._purge(d, plan, workspace_id, run_id))
        except Exception as exc:
            code = exc.code if isinstance(exc, Refused) else "internal_error"
            message = str(exc) if isinstance(exc, Refused) else type(exc).__name__
            outcome.status, outcome.error_code = "failed", code
            outcome.duration_seconds = round(time.monotonic() - started, 3)
            self._finish(outcome, "failed", code, message)
            self._count(outcome)
            if self.metrics is not None:
                self.metrics.failures.labels(reason=code).inc()
            log.warning("lifecycle.run_failed", run_id=run_id, error_code=code)
            raise
        outcome.status = "succeeded"
        outcome.duration_seconds = round(time.monotonic() - started, 3)
        self._finish(outcome, "succeeded", None, None)
        self._count(outcome)
        log.info("lifecycle.run_finished", run_id=run_id, purged=outcome.total("purged"))
        return outcome

    def _count(self, outcome: RunOutcome) -> None:
        if self.metrics is None:
            return
        for d in outcome.descriptors:
            for name in ("purged", "archived", "redacted", "held"):
                value = int(getattr(d, name))
                if value:
                    self.metrics.rows.labels(descriptor=d.descriptor, outcome=name).inc(value)

    def _finish(
        self, outcome: RunOutcome, status: str, code: str | None, message: str | None
    ) -> None:
        counts = {d.descriptor: asdict(d) for d in outcome.descriptors}
        if outcome.manifest:
            counts["_manifest"] = {"path": outcome.manifest}
        with transaction(self.engine) as conn:
            lifecycle_runs.finish(
                conn,
                outcome.run_id,
                status=status,
                now=datetime.now(UTC),
                counts=counts,
                error_code=code,
                error_message=message,
            )

    def _runnable(
        self, selected: list[LifecycleDescriptor], key: str | None, outcome: RunOutcome
    ) -> list[LifecycleDescriptor]:
        runnable = []
        for d in selected:
            if not d.is_generic:
                if key is not None:
                    job = d.delegated.job if d.delegated else "its own job"
                    raise NotGeneric(
                        f"--descriptor: {d.key} is purged by {job}; "
                        "the engine only reads it for the dry-run"
                    )
                outcome.descriptors.append(DescriptorOutcome(d.key, skipped="delegated"))
                continue
            if d.deletion.mode != DeletionMode.HARD_DELETE:
                raise DeletionModeRefused(
                    f"{d.key}: deletion.mode {d.deletion.mode!r} is not executed (only hard_delete)"
                )
            runnable.append(d)
        return runnable

    def _refuse_held_selection(
        self, runnable: list[LifecycleDescriptor], workspace_id: str | None
    ) -> None:
        if workspace_id is None:
            return
        with transaction(self.engine) as conn:
            for d in runnable:
                holds = held_workspaces(conn, self.registry.chain_keys(d)).get(workspace_id)
                if holds:
                    raise LegalHoldActive(
                        f"--workspace: {workspace_id} is under legal hold {', '.join(holds)} "
                        f"(reaching {d.key}); nothing was deleted"
                    )

    def _purge(
        self, d: LifecycleDescriptor, plan: RetentionPlan, workspace_id: str | None, run_id: int
    ) -> DescriptorOutcome:
        started = time.monotonic()
        out = DescriptorOutcome(d.key)
        chain = self.registry.chain_keys(d)
        t = table_of(d)
        cursor = col(t, d.cursor_column)
        ident = col(t, d.id_column)
        limit = min(d.batch_limit, self.batch_limit or d.batch_limit)
        archiving = self.archive is not None and d.archive.archivable
        with transaction(self.engine) as conn:
            holds = held_workspaces(conn, chain)
            if holds and d.workspace_column is not None:
                ws = col(t, d.workspace_column)
                out.held = int(
                    conn.execute(
                        select(text("count(*)"))
                        .select_from(t)
                        .where(*in_scope(d, plan, workspace_id), ws.in_(sorted(holds)))
                    ).scalar_one()
                )
        if d.redacts_recalled:
            out.redacted = self._redact_recalled(d, workspace_id, chain, run_id, limit)
        if archiving:
            columns: list[Any] = list(t.c)
        else:
            wanted = [d.id_column, d.cursor_column, *d.report_columns]
            if d.workspace_column is not None:
                wanted.append(d.workspace_column)
            columns = [col(t, name) for name in dict.fromkeys(wanted)]
        lower: datetime | None = None
        retries = 0
        while True:
            try:
                n, last, rows = self._batch(
                    d, plan, workspace_id, chain, columns, lower, limit, archiving, run_id
                )
            except (_HoldsMoved, IntegrityError):
                # A hold appeared on the batch's workspace, or a child row arrived under a row
                # being deleted: the batch rolled back; read everything again.
                retries += 1
                if retries > MAX_RETRIES:
                    raise
                continue
            if not n:
                break
            out.batches += 1
            out.scanned += n
            out.purged += n
            out.archived += n if archiving else 0
            assert last is not None
            lower = pad_lower_bound(last)
            if self.on_purged is not None and d.report_columns and rows:
                self.on_purged(d, rows)
            if self.batch_delay_ms:
                time.sleep(self.batch_delay_ms / 1000)
        del cursor, ident
        if out.purged >= self.vacuum_threshold and self.engine.dialect.name == "postgresql":
            with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(text(f"VACUUM (ANALYZE) {safe_identifier(t.name)}"))
            out.vacuumed = True
        out.duration_seconds = round(time.monotonic() - started, 3)
        log.info(
            "lifecycle.descriptor_purged",
            descriptor=d.key,
            run_id=run_id,
            purged=out.purged,
            batches=out.batches,
        )
        return out

    def _batch(
        self,
        d: LifecycleDescriptor,
        plan: RetentionPlan,
        workspace_id: str | None,
        chain: tuple[str, ...],
        columns: list[Any],
        lower: datetime | None,
        limit: int,
        archiving: bool,
        run_id: int,
    ) -> tuple[int, datetime | None, list[dict[str, Any]]]:
        """One batch in one transaction: the rows are deleted and handed back by the same
        statement, archived and verified, and only then committed; any failure before the
        commit (an archive that cannot be written, a hold that appeared, a process killed)
        rolls the deletion back."""
        t = table_of(d)
        cursor = col(t, d.cursor_column)
        ident = col(t, d.id_column)
        with transaction(self.engine) as conn:
            holds = held_workspaces(conn, chain)
            if workspace_id is not None and workspace_id in holds:
                raise LegalHoldActive(
                    f"--workspace: {workspace_id} came under legal hold "
                    f"{', '.join(holds[workspace_id])} during the run"
                )
            conds = purge_scope(d, self.registry, plan, workspace_id, holds)
            if lower is not None:
                conds.append(cursor >= lower)
            chosen = select(ident).where(*conds).order_by(cursor, ident).limit(limit)
            doomed = delete(t).where(ident.in_(chosen.scalar_subquery()))
            if self._counts_only(conn, d, archiving):
                # Nothing needs the rows themselves: PostgreSQL deletes and counts in one
                # statement and sends back one row (the count and the last cursor).
                gone = doomed.returning(cursor).cte("gone")
                n, last = conn.execute(select(func.count(), func.max(gone.c[cursor.name]))).one()
                if not n:
                    return 0, None, []
                if d.workspace_column is not None:
                    scope = None if workspace_id is None else [workspace_id]
                    _recheck_holds(conn, chain, holds, scope)
                lifecycle_runs.add_counts(
                    conn, run_id, datetime.now(UTC), scanned=n, purged=n, batches=1
                )
                return int(n), last, []
            rows = conn.execute(doomed.returning(*columns)).all()
            if not rows:
                return 0, None, []
            batch = sorted(
                (dict(r._mapping) for r in rows),
                key=lambda r: (r[d.cursor_column], r[d.id_column]),
            )
            if archiving:
                assert self.archive is not None
                self.archive.write_part(d.key, batch, d.cursor_column)
            if d.workspace_column is not None:
                _recheck_holds(conn, chain, holds, [r[d.workspace_column] for r in batch])
            if d.report_columns:
                # Durable in the deletion's own transaction, whichever path purges.
                retired_partitions.retire(
                    conn, window_partition_keys(batch), run_id=run_id, now=datetime.now(UTC)
                )
            lifecycle_runs.add_counts(
                conn,
                run_id,
                datetime.now(UTC),
                scanned=len(batch),
                archived=len(batch) if archiving else 0,
                purged=len(batch),
                batches=1,
            )
        return len(batch), batch[-1][d.cursor_column], batch

    def _counts_only(self, conn: Connection, d: LifecycleDescriptor, archiving: bool) -> bool:
        wants_rows = archiving or bool(d.report_columns)
        return not wants_rows and conn.dialect.name == "postgresql"

    def _redact_recalled(
        self,
        d: LifecycleDescriptor,
        workspace_id: str | None,
        chain: tuple[str, ...],
        run_id: int,
        limit: int,
    ) -> int:
        """Recalled evidence keeps its identity and loses its content (docs/lifecycle.md,
        "Retention";
        docs/lifecycle.md): a sweep for rows recalled before that policy applied at ingest, and
        for content a hold set aside, once no hold reaches their workspace. Holds are read
        before each batch and again after it: one that appeared on a workspace of the batch
        rolls it back."""
        from timeline_pipeline.store import evidence as evidence_store

        total = 0
        retries = 0
        while True:
            try:
                with transaction(self.engine) as conn:
                    holds = held_workspaces(conn, chain)
                    touched = evidence_store.redact_recalled(
                        conn, workspace_id=workspace_id, skip_workspaces=sorted(holds), limit=limit
                    )
                    _recheck_holds(conn, chain, holds, touched)
                    lifecycle_runs.add_counts(
                        conn, run_id, datetime.now(UTC), redacted=len(touched)
                    )
            except _HoldsMoved:
                retries += 1
                if retries > MAX_RETRIES:
                    raise
                continue
            total += len(touched)
            if len(touched) < limit:
                return total
