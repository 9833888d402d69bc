"""The database session rules of one maintenance batch (docs/maintenance.md).

PostgreSQL: the job row is locked NOWAIT and the job's lock and statement timeouts are set for
the transaction only (`SET LOCAL`). SQLite has neither row locks, NOWAIT nor timeouts, so the
embedded default does this instead: the transaction opens with `BEGIN IMMEDIATE` under a zero
busy timeout, so it either takes the database's single write lock at once or fails busy without
waiting (any concurrent writer, not only another batch of the same job, makes it busy; the
driver retries with backoff), and the job's statement timeout bounds the whole batch through
SQLite's progress handler, which interrupts a statement that runs past it. A lock timeout has no
meaning once the write lock is held.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

import psycopg
from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import DBAPIError

from timeline_pipeline.store.maintenance_jobs import JobRowBusy, is_lock_busy

SQLITE_BUSY_TIMEOUT_MS: Final = 10000
"""The engine's usual busy timeout (`db.engine`), restored after a batch."""
PROGRESS_HANDLER_OPS: Final = 1000

RETRYABLE_SQLSTATES: Final = frozenset(
    {
        "55P03",  # lock_not_available: lock_timeout
        "57014",  # query_canceled: statement_timeout
        "40P01",  # deadlock_detected
        "40001",  # serialization_failure
    }
)
_SQLITE_RETRYABLE: Final = ("locked", "busy", "interrupted")


def _sqlite(conn: Connection) -> sqlite3.Connection | None:
    raw: Any = conn.connection.driver_connection
    return raw if isinstance(raw, sqlite3.Connection) else None


@contextmanager
def batch_transaction(engine: Engine) -> Iterator[Connection]:
    """One transaction that either has the write access a batch needs now or raises
    JobRowBusy; committed when the block ends without an exception."""
    with engine.connect() as conn:
        raw = _sqlite(conn)
        if raw is not None:
            raw.execute("PRAGMA busy_timeout=0")
        try:
            try:
                transaction = conn.begin()
            except DBAPIError as exc:
                if is_lock_busy(exc):
                    raise JobRowBusy from None
                raise
            with transaction:
                yield conn
        finally:
            if raw is not None:
                raw.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")


@contextmanager
def bounded(conn: Connection, *, lock_timeout_ms: int, statement_timeout_ms: int) -> Iterator[None]:
    """The job's timeouts around a batch: `SET LOCAL` on PostgreSQL (they end with the
    transaction), a deadline for the whole batch on SQLite."""
    raw = _sqlite(conn)
    if raw is None:
        conn.execute(text(f"SET LOCAL lock_timeout = {int(lock_timeout_ms)}"))
        conn.execute(text(f"SET LOCAL statement_timeout = {int(statement_timeout_ms)}"))
        yield
        return
    deadline = time.monotonic() + statement_timeout_ms / 1000
    raw.set_progress_handler(lambda: int(time.monotonic() > deadline), PROGRESS_HANDLER_OPS)
    try:
        yield
    finally:
        raw.set_progress_handler(None, PROGRESS_HANDLER_OPS)


def describe_sql_error(exc: DBAPIError) -> dict[str, Any]:
    """What a job records of a failed batch: the driver's error class and SQLSTATE and whether
    a retry may succeed (timeouts, deadlocks, serialization failures). Never the message, which
    can quote the statement's parameters."""
    orig = exc.orig
    sqlstate = orig.sqlstate if isinstance(orig, psycopg.Error) else None
    if isinstance(orig, sqlite3.Error):
        retryable = any(word in str(orig).lower() for word in _SQLITE_RETRYABLE)
    else:
        retryable = sqlstate in RETRYABLE_SQLSTATES
    return {
        "code": "sql_error",
        "error_class": type(orig).__name__,
        "sqlstate": sqlstate,
        "retryable": retryable,
    }
