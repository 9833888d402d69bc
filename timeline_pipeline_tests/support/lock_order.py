"""Two PostgreSQL transactions that want the same two rows: does a batch take them in one order?

`interleave` makes the race that two receiver replicas (or a receiver and reconciliation) run
into by chance, deterministic. A holding transaction takes row A (`first`); a batch that wants
B and A starts in another transaction and runs until PostgreSQL makes it wait for a lock; then
the holder takes row B (`second`) and commits.

A batch that takes its rows in key order waits for A while holding nothing, so the holder gets
B, commits, and the batch finishes. A batch that takes them in arrival order (B first) already
holds B: the holder waits for the batch, the batch for the holder, and PostgreSQL aborts one of
the two as a deadlock (after its `deadlock_timeout`, one second by default). The failures are
returned, so a test asserts that there were none.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Final

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import DBAPIError

WAIT_SECONDS: Final = 20.0


def _describe(error: BaseException) -> str:
    orig = getattr(error, "orig", None) or error
    sqlstate = getattr(orig, "sqlstate", None)
    return f"{type(orig).__name__} ({sqlstate})" if sqlstate else type(orig).__name__


def _wait_until_blocked(engine: Engine, pid: int, finished: threading.Event) -> None:
    """Until the batch's backend waits on a lock; fails if the batch ends without waiting."""
    deadline = time.monotonic() + WAIT_SECONDS
    with engine.connect() as probe:
        while time.monotonic() < deadline:
            waiting = probe.execute(
                text("SELECT wait_event_type FROM pg_stat_activity WHERE pid = :pid"),
                {"pid": pid},
            ).scalar_one_or_none()
            probe.rollback()  # a fresh snapshot of pg_stat_activity next time
            if waiting == "Lock":
                return
            if finished.is_set():
                raise AssertionError("the batch never waited for the holder's row")
            time.sleep(0.02)
    raise AssertionError(f"the batch did not reach the holder's row in {WAIT_SECONDS:.0f} s")


def interleave(
    engine: Engine,
    *,
    first: Callable[[Connection], object],
    batch: Callable[[Connection], object],
    second: Callable[[Connection], object],
) -> list[str]:
    """Run the three steps as described above; the failures, e.g. `DeadlockDetected (40P01)`."""
    failures: list[str] = []
    backend: list[int] = []
    started = threading.Event()
    finished = threading.Event()

    def run_batch() -> None:
        try:
            with engine.begin() as conn:
                backend.append(int(conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()))
                started.set()
                batch(conn)
        except Exception as error:
            failures.append(_describe(error))
        finally:
            started.set()
            finished.set()

    with engine.connect() as holder:
        held = holder.begin()
        first(holder)
        thread = threading.Thread(target=run_batch, name="lock-order-batch", daemon=True)
        thread.start()
        try:
            assert started.wait(WAIT_SECONDS), "the batch's transaction did not start"
            assert backend, f"the batch failed before it began: {failures}"
            _wait_until_blocked(engine, backend[0], finished)
            second(holder)
        except DBAPIError as error:
            failures.append(_describe(error))
            held.rollback()
        except BaseException:
            held.rollback()
            raise
        else:
            held.commit()
        finally:
            thread.join(WAIT_SECONDS)
    assert not thread.is_alive(), "the batch was still waiting after the holder ended"
    return failures
