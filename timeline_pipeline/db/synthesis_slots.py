"""Synthesis slots: `maxConcurrentSynthesis` for model calls made outside Dagster's run queue
(docs/maintenance.md, "Preview a rerun"; docs/dagster.md, "Concurrency").

Dagster's run queue keeps window runs within `maxConcurrentSynthesis` (the `timeline/synthesis`
and `timeline/lane` tag limits of dagster.yaml), but a rerun preview driven through the
maintenance listener is no Dagster run: its model calls would run beside them unbounded. So a
preview batch holds one of `maxConcurrentSynthesis` slots of the database for its model calls:

* PostgreSQL: a slot is a transaction-level advisory lock (`pg_advisory_xact_lock`) in the
  product's namespace, taken on the batch's own connection. It needs no table and no cleanup:
  it ends with the batch's transaction (commit or rollback), and with the session of a process
  that dies, so a crash never leaks a slot. A batch tries every slot without waiting; when all
  are held it waits for one under the job's `lock_timeout` (`maintenance.sql.bounded`), and
  past it fails with `lock_not_available`, which pauses the job as retryable: the driver
  resumes it with backoff (docs/maintenance.md, "Budgets and retries").
* SQLite: every maintenance batch opens with `BEGIN IMMEDIATE` and holds the database's single
  write lock to its end (`maintenance.sql`), so no two preview batches run at once anywhere:
  one slot, at most `maxConcurrentSynthesis` (at least 1). Nothing to take.

A batch that previews several windows takes its slot once: asking again in the same
transaction returns the slot it holds, never a second one.
"""

from __future__ import annotations

import zlib
from typing import Final

from sqlalchemy import Connection, text

__all__ = ["SLOT_NAMESPACE", "hold_synthesis_slot"]

SLOT_NAMESPACE: Final = 0x746C5379
"""The advisory lock namespace (the first of the two int4 keys): "tlSy"."""
_HELD: Final = "timeline.synthesis_slot"


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
    taken: int | None = None
    for slot in range(slots):
        if conn.execute(
            text("SELECT pg_try_advisory_xact_lock(:ns, :slot)"),
            {"ns": SLOT_NAMESPACE, "slot": slot},
        ).scalar_one():
            taken = slot
            break
    if taken is None:
        taken = zlib.crc32(holder.encode("utf-8")) % slots
        conn.execute(
            text("SELECT pg_advisory_xact_lock(:ns, :slot)"),
            {"ns": SLOT_NAMESPACE, "slot": taken},
        )
    conn.info[_HELD] = (transaction, taken)
    return taken
