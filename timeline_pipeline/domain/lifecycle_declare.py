"""Shorthands the store modules use to declare their descriptors (no I/O, no SQL)."""

from __future__ import annotations

from timeline_pipeline.domain.lifecycle import (
    ArchiveDecision,
    DeletionDecision,
    DeletionMode,
    PartitionDecision,
)

NOT_PARTITIONED = PartitionDecision(
    eligible=False,
    rationale=(
        "Bounded keyset batches on the workspace + cursor index keep a purge cheap at the "
        "volumes this product sees; partitioning would add DDL to every release for no gain."
    ),
)

HARD_DELETE = DeletionDecision(
    mode=DeletionMode.HARD_DELETE,
    rationale="Aged-out rows have no further use; keeping a tombstone would keep the data.",
)


def archive_on_request(what: str) -> ArchiveDecision:
    """Archivable, but only when a run names an archive directory: no standing archive."""
    return ArchiveDecision(
        archivable=True,
        rationale=(
            f"{what} may be exported for a case when an operator names --archive-dir; by default "
            "nothing is archived, so no indefinite copy of the data is created."
        ),
        format="jsonl.gz",
        port="local_directory",
    )


NOT_ARCHIVED = ArchiveDecision(
    archivable=False,
    rationale="Operational state with no value once aged out; nothing to export.",
)

BACKUP_NOTES = (
    "Covered by the product database's regular backups; a purge is not undone by a restore "
    "unless the backup predates it: restore into a scratch database and copy rows back, or "
    "reload an archive part (gzip JSON Lines, one row per line, columns as in the table)."
)
