"""How a store module declares its tables' descriptors in a few lines (no I/O, no SQL).

`declare` fills in what most tables share (docs/lifecycle.md): workspace scope, not partitioned,
not archived, hard delete, the legal-hold note, the backup notes, a batch of 5,000, a generic
purge walking the keyset index; the retention days come from the class unless the table narrows
them; owner and key follow from the declaring module, so they cannot drift from it.
"""

from __future__ import annotations

from timeline_pipeline.domain.lifecycle import (
    ArchiveDecision,
    ChildLink,
    DelegatedPurge,
    DeletionDecision,
    DeletionMode,
    ExecutionMode,
    LegalHoldNote,
    LifecycleDescriptor,
    OnlyWhere,
    ParentLink,
    PartitionDecision,
    RequiredIndex,
    RetentionClass,
    Scope,
    keyset_columns,
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

KEYSET_PURPOSE = "the purge's keyset"

DEFAULT_BATCH_LIMIT = 5_000


def owner_of(module: str) -> str:
    """A descriptor's owner: the short name of its store module (`...store.audit` -> `audit`)."""
    return module.rsplit(".", 1)[-1]


def declare(
    module: str,
    table_name: str,
    retention_class: RetentionClass,
    *,
    cursor_column: str,
    min_days: int | None = None,
    default_days: int | None = None,
    max_days: int | None = None,
    scope: Scope = Scope.WORKSPACE,
    workspace_column: str | None = "workspace_id",
    id_column: str = "id",
    indexes: tuple[RequiredIndex, ...] = (),
    batch_limit: int = DEFAULT_BATCH_LIMIT,
    partition: PartitionDecision = NOT_PARTITIONED,
    archive: ArchiveDecision = NOT_ARCHIVED,
    deletion: DeletionDecision = HARD_DELETE,
    delegated: DelegatedPurge | None = None,
    chain: str | None = None,
    children: tuple[ChildLink, ...] = (),
    parents: tuple[ParentLink, ...] = (),
    only_where: tuple[OnlyWhere, ...] = (),
    report_columns: tuple[str, ...] = (),
    redacts_recalled: bool = False,
    notes: str = "",
) -> LifecycleDescriptor:
    """The descriptor of `table_name`, declared by `module` (pass `__name__`).

    Owner and key follow from the module (`<owner>.<table>`; the key is stored in lifecycle
    runs, holds and audit rows, so a module keeps its name). Days not given are the class's
    (`RetentionClass.bounds`); given ones narrow it, and the registry check refuses any outside
    it. A generic purge gets the keyset index `(workspace, cursor, id)` first, then `indexes`; a
    `delegated` table lists only its own `indexes`."""
    owner = owner_of(module)
    frame = retention_class.bounds
    keyset: tuple[RequiredIndex, ...] = ()
    if delegated is None:
        columns = keyset_columns(scope, workspace_column, cursor_column)
        keyset = (RequiredIndex((*columns, id_column), KEYSET_PURPOSE),)
    return LifecycleDescriptor(
        key=f"{owner}.{table_name}",
        table_name=table_name,
        owner=owner,
        scope=scope,
        cursor_column=cursor_column,
        retention_class=retention_class,
        retention_min_days=frame.min_days if min_days is None else min_days,
        retention_max_days=frame.max_days if max_days is None else max_days,
        default_retention_days=frame.default_days if default_days is None else default_days,
        partition=partition,
        archive=archive,
        deletion=deletion,
        legal_hold=LegalHoldNote(),
        required_indexes=(*keyset, *indexes),
        batch_limit=batch_limit,
        backup_restore_notes=BACKUP_NOTES,
        execution_mode=ExecutionMode.GENERIC if delegated is None else ExecutionMode.DELEGATED,
        delegated=delegated,
        workspace_column=workspace_column,
        id_column=id_column,
        chain=chain,
        children=children,
        parents=parents,
        only_where=only_where,
        report_columns=report_columns,
        redacts_recalled=redacts_recalled,
        notes=notes,
    )
