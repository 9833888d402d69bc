"""Group commit: events that arrive together are written in one transaction, then acked.

Events waiting while the previous commit is in flight share the next transaction: one
connection checkout, one BEGIN and one COMMIT for the batch instead of per event. Within a
batch, items submitted with the same group writer and key (e.g. messages of one chat) are
handed to that writer together, so it can write them with one statement. Nothing is delayed on
purpose; a lone event is committed at once.

Groups are written in the order of their keys, not of their arrival: receiver replicas on one
database take the rows of several chats in one transaction each, and two batches that took
them in opposite orders could deadlock (docs/deployment-receivers.md). Writers sort the rows
inside a group the same way (the evidence store's batch upsert does).

An event is acknowledged only after the commit that carried it. If a batch fails for a reason
other than the database being unreachable, every item in it is retried in a transaction of its
own, so one poisoned event cannot make its neighbours fail; a database that does not answer
fails the whole batch with DatabaseUnavailable (the caller answers 503, Lark redelivers).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import psycopg
from sqlalchemy import Connection, Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError

from timeline_pipeline.db.engine import DatabaseUnavailable, transaction

T = TypeVar("T")

GroupWriter = Callable[[Connection, Sequence[Any]], Sequence[Any]]
"""Writes several items in the caller's transaction; returns one result per item, in order.
It may be called again for a subset after a failed batch, so it must not keep side effects
outside the connection."""

UNAVAILABLE_ERRORS: Final = (
    DatabaseUnavailable,
    PoolTimeoutError,
    psycopg.OperationalError,
    psycopg.InterfaceError,
)
"""The database did not answer. Raw psycopg errors are listed because the evidence store drives
psycopg's cursor directly for batch upserts, past SQLAlchemy's wrapping and `transaction`."""

CONFLICT_ERRORS: Final = (IntegrityError, psycopg.IntegrityError)
"""A constraint refused the write: for the receiver, a workspace that disappeared."""

DEFAULT_MAX_BATCH: Final = 64
_STOP: Final = None


@dataclass(frozen=True, slots=True)
class _Job:
    writer: GroupWriter
    item: Any
    key: Hashable
    future: Future[Any]


class WriterClosed(DatabaseUnavailable):
    """Submitted after shutdown began; answered like an unavailable database (503)."""


class WriteBatcher:
    """One writer thread per instance, started on first use; `close` drains and stops it."""

    def __init__(self, engine: Engine, *, max_batch: int = DEFAULT_MAX_BATCH) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self._engine = engine
        self._max_batch = max_batch
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False

    def submit_to_group(self, writer: GroupWriter, item: Any, key: Hashable) -> Future[Any]:
        """Queue `item` for `writer`; items of equal (writer, key) in a batch are written together.

        The future resolves with the item's result after the commit, or with the failure.
        """
        future: Future[Any] = Future()
        with self._lock:
            if self._closed:
                future.set_exception(WriterClosed("the evidence writer is shutting down"))
                return future
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="evidence-writer", daemon=True
                )
                self._thread.start()
            self._jobs.put(_Job(writer, item, key, future))
        return future

    def submit(self, work: Callable[[Connection], T]) -> Future[T]:
        """Queue one write of its own (it still shares the batch's transaction)."""

        def alone(conn: Connection, items: Sequence[Any]) -> list[T]:
            return [work(conn) for _ in items]

        return self.submit_to_group(alone, None, object())

    def run(self, work: Callable[[Connection], T]) -> T:
        """Blocking form of `submit`, for callers without an event loop."""
        return self.submit(work).result()

    def close(self, timeout: float = 30.0) -> None:
        """Write what is queued, then stop the thread."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
            self._jobs.put(_STOP)
        if thread is not None:
            thread.join(timeout)

    def _run(self) -> None:
        stopping = False
        while not stopping:
            job = self._jobs.get()
            if job is _STOP:
                return
            batch = [job]
            while len(batch) < self._max_batch:
                try:
                    more = self._jobs.get_nowait()
                except queue.Empty:
                    break
                if more is _STOP:
                    stopping = True
                    break
                batch.append(more)
            self._commit(batch)

    def _commit(self, batch: list[_Job]) -> None:
        groups: dict[tuple[GroupWriter, Hashable], list[_Job]] = {}
        for job in batch:
            groups.setdefault((job.writer, job.key), []).append(job)
        ordered = sorted(groups.values(), key=lambda jobs: lock_order(jobs[0].key))
        try:
            with transaction(self._engine) as conn:
                results = [(jobs, _write_group(conn, jobs[0].writer, jobs)) for jobs in ordered]
        except UNAVAILABLE_ERRORS as exc:
            for job in batch:
                job.future.set_exception(exc)
            return
        except Exception as exc:
            if len(batch) == 1:
                batch[0].future.set_exception(exc)
                return
            for job in batch:  # isolate the item that failed
                self._commit([job])
            return
        for jobs, outcomes in results:
            for job, outcome in zip(jobs, outcomes, strict=True):
                job.future.set_result(outcome)


def lock_order(key: Hashable) -> tuple[int, tuple[str, ...]]:
    """Where a group goes in its transaction: keys made of strings (`("message", chat_id)`) in
    their own order, the same in every process; any other key (a write of its own) after them,
    in arrival order (the sort is stable)."""
    parts = (key,) if isinstance(key, str) else key
    if isinstance(parts, tuple) and all(isinstance(part, str) for part in parts):
        return (0, tuple(str(part) for part in parts))
    return (1, ())


def _write_group(conn: Connection, writer: GroupWriter, jobs: list[_Job]) -> Sequence[Any]:
    outcomes = writer(conn, [job.item for job in jobs])
    if len(outcomes) != len(jobs):
        raise RuntimeError("a group writer must return one result per item")
    return outcomes
