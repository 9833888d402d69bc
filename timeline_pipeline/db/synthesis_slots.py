"""Synthesis slots: one `maxConcurrentSynthesis` bound for every model call, in Dagster or not
(docs/maintenance.md, "Preview a rerun"; docs/dagster.md, "Concurrency").

Dagster's run queue keeps window runs within `maxConcurrentSynthesis` (the `timeline/synthesis`
and `timeline/lane` tag limits of dagster.yaml), but a rerun preview driven through the
maintenance listener is no Dagster run: the two queues alone would allow twice the limit. So
both take one of `maxConcurrentSynthesis` slots of the database for their model calls, and the
run queue stays the first gate of window runs:

* a preview batch holds a slot on its own batch transaction (`hold_synthesis_slot`) until the
  batch commits or rolls back;
* a window run whose synthesizer calls a model holds one on a connection of its own
  (`take_synthesis_slot`) from its first chunk call until the window ends (finished, failed or
  deferred), one window at a time, so that a preview waiting for a slot gets it between two
  windows of a batch.

* PostgreSQL: a slot is a transaction-level advisory lock (`pg_advisory_xact_lock`) in the
  product's namespace. It needs no table and no cleanup: it ends with its transaction, and with
  the session of a process that dies, so a crash never leaks a slot. A preview batch tries every
  slot without waiting; when all are held it waits for one under the job's `lock_timeout`
  (`maintenance.sql.bounded`), and past it fails with `lock_not_available`, which pauses the job
  as retryable: the driver resumes it with backoff (docs/maintenance.md, "Budgets and
  retries"). A window run tries every slot, polling for a bounded time, and when none came free
  the runner defers the window with backoff (no attempt charged, `synthesis_run.runner`).
* SQLite (single writer, embedded): there is nothing to take. Every maintenance batch opens with
  `BEGIN IMMEDIATE` and holds the database's single write lock to its end (`maintenance.sql`),
  so previews run one batch at a time; a window run can neither claim a window nor commit a
  chunk while a preview batch holds that lock, so the only overlap of the two is the model call
  each window run already had in flight when the batch began. Window runs among themselves are
  bounded by the run queue alone.

A batch that previews several windows takes its slot once: asking again in the same
transaction returns the slot it holds, never a second one.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Final

from sqlalchemy import Connection, Engine, text

__all__ = ["SLOT_NAMESPACE", "HeldSlot", "hold_synthesis_slot", "take_synthesis_slot"]

SLOT_NAMESPACE: Final = 0x746C5379
"""The advisory lock namespace (the first of the two int4 keys): "tlSy"."""
_HELD: Final = "timeline.synthesis_slot"
SLOT_POLL_SECONDS: Final = 0.5
"""How often a waiting window run tries the slots again."""


def _try_every_slot(conn: Connection, slots: int) -> int | None:
    """The first of `slots` free slots, now held by `conn`'s transaction, or None (no wait)."""
    for slot in range(slots):
        if conn.execute(
            text("SELECT pg_try_advisory_xact_lock(:ns, :slot)"),
            {"ns": SLOT_NAMESPACE, "slot": slot},
        ).scalar_one():
            return slot
    return None


def hold_synthesis_slot(conn: Connection, slots: int, *, holder: str) -> int | None:
    """Hold one of `slots` synthesis slots until `conn`'s transaction ends; the slot's number,
    or None where the database serializes batches itself (SQLite).

    `holder` (a job id) picks the slot to wait for when all are taken, so that waiting batches
    spread over the slots. Raises the driver's lock-timeout error past the transaction's
    `lock_timeout` (PostgreSQL).
    """
    if slots < 1:
        raise ValueError("slots must be at least 1")
    if conn.dialect.name != "postgresql":
        return None
    transaction = conn.get_transaction()
    held = conn.info.get(_HELD)
    if held is not None and transaction is not None and held[0] is transaction:
        return int(held[1])
    taken = _try_every_slot(conn, slots)
    if taken is None:
        taken = zlib.crc32(holder.encode("utf-8")) % slots
        conn.execute(
            text("SELECT pg_advisory_xact_lock(:ns, :slot)"),
            {"ns": SLOT_NAMESPACE, "slot": taken},
        )
    conn.info[_HELD] = (transaction, taken)
    return taken


class HeldSlot:
    """A slot held by a transaction on a connection of its own, until `release` (or the end of
    the process). `number` is None where there is nothing to hold (SQLite)."""

    def __init__(self, number: int | None, conn: Connection | None) -> None:
        self.number = number
        self._conn = conn

    def release(self) -> None:
        """Give the slot back: the transaction rolls back (it wrote nothing). Idempotent."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            conn.rollback()
            conn.close()
        except Exception:  # a broken session: its locks ended with it, nothing to give back
            conn.invalidate()
            conn.close()


def take_synthesis_slot(
    engine: Engine,
    slots: int,
    *,
    wait_seconds: float,
    sleep: Callable[[float], None],
    timer: Callable[[], float],
) -> HeldSlot | None:
    """One of `slots` synthesis slots, held on a connection of its own until released; None
    when none came free within `wait_seconds` (0: one try). Never blocks inside the database,
    so a waiting run cannot deadlock with a holder: it tries every slot, then again every
    `SLOT_POLL_SECONDS`. SQLite: an empty `HeldSlot` at once (see the module's docstring)."""
    if slots < 1:
        raise ValueError("slots must be at least 1")
    if engine.dialect.name != "postgresql":
        return HeldSlot(None, None)
    deadline = timer() + max(wait_seconds, 0.0)
    conn = engine.connect()
    try:
        while True:
            conn.begin()
            taken = _try_every_slot(conn, slots)
            if taken is not None:
                return HeldSlot(taken, conn)
            conn.rollback()
            left = deadline - timer()
            if left <= 0:
                conn.close()
                return None
            sleep(min(SLOT_POLL_SECONDS, left))
    except BaseException:
        conn.close()
        raise
