"""A table's lifecycle descriptor and its validation (pure: no I/O).

Each table's owning store module declares one descriptor (docs/lifecycle.md): how long its
rows live, whether they may be archived, how they are deleted, which indexes the purge relies on
and how large one batch may be. The registry check (`lifecycle registry-check`) validates every
descriptor with `validate_descriptor` before the engine may use it, so that identifiers that end
up in SQL text come only from here and only after they passed `is_safe_identifier`.

Fields that are decisions (partition, archive, deletion) carry their rationale: a reviewer reads
why, not only what. `legal_hold` is documentation only: the engine never reads it to decide
whether a hold applies (a real hold record always applies).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

MAX_BATCH_LIMIT: Final = 50_000
"""The largest batch any descriptor may declare: one batch is one short transaction."""

ARCHIVE_FORMATS: Final = frozenset({"jsonl.gz"})
ARCHIVE_PORTS: Final = frozenset({"local_directory"})
HOLD_PRECEDENCE: Final = "overrides_retention"

_IDENTIFIER: Final = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


@dataclass(frozen=True, slots=True)
class RetentionBounds:
    """The days one class of data may be kept, and the default a descriptor takes unless it
    states its own (docs/lifecycle.md, "Retention")."""

    min_days: int
    default_days: int
    max_days: int


class RetentionClass(StrEnum):
    """What kind of data a table holds; the class frames its retention bounds: a descriptor's
    own bounds and default lie within its class's (a descriptor may narrow them, never widen)."""

    OPERATIONAL_QUEUE = "operational_queue"
    AUDIT_SECURITY = "audit_security"
    ANALYTICS_TELEMETRY = "analytics_telemetry"
    FINANCIAL_TAX = "financial_tax"
    COMMUNICATION_LOG = "communication_log"
    SYSTEM_EVENT = "system_event"

    @property
    def bounds(self) -> RetentionBounds:
        return CLASS_BOUNDS[self]

    @property
    def min_days(self) -> int:
        return CLASS_BOUNDS[self].min_days

    @property
    def default_days(self) -> int:
        return CLASS_BOUNDS[self].default_days

    @property
    def max_days(self) -> int:
        return CLASS_BOUNDS[self].max_days


CLASS_BOUNDS: Final[dict[RetentionClass, RetentionBounds]] = {
    # Queues and scratch rows: gone within days to a year once finished.
    RetentionClass.OPERATIONAL_QUEUE: RetentionBounds(1, 30, 365),
    # Who did what, and credentials' traces: up to seven years.
    RetentionClass.AUDIT_SECURITY: RetentionBounds(1, 730, 2555),
    # No table today: counts and measurements, kept no longer than two years.
    RetentionClass.ANALYTICS_TELEMETRY: RetentionBounds(7, 90, 730),
    # No table today: records an organization may have to keep for years.
    RetentionClass.FINANCIAL_TAX: RetentionBounds(365, 2555, 3650),
    # People's words and what was curated from them: at most two years.
    RetentionClass.COMMUNICATION_LOG: RetentionBounds(7, 180, 730),
    # The system's own state and history: up to five years.
    RetentionClass.SYSTEM_EVENT: RetentionBounds(7, 365, 1825),
}
"""Each class's bounds: a proposal to be confirmed against the organization's retention policy
(docs/lifecycle.md, "Retention"), never a claimed legal period."""


class DeletionMode(StrEnum):
    """How rows leave; only `hard_delete` is executed by the engine today."""

    HARD_DELETE = "hard_delete"
    SOFT_DELETE = "soft_delete"
    ANONYMIZE = "anonymize"


class ExecutionMode(StrEnum):
    """`generic`: the lifecycle engine purges the table. `delegated`: the table has its own
    purge function and job; the engine only reads it for the dry-run."""

    GENERIC = "generic"
    DELEGATED = "delegated"


class Scope(StrEnum):
    """`workspace`: every row belongs to one workspace (a NOT NULL workspace column).
    `global`: rows may belong to none (the workspace column, if any, is nullable)."""

    WORKSPACE = "workspace"
    GLOBAL = "global"


@dataclass(frozen=True, slots=True)
class PartitionDecision:
    eligible: bool
    rationale: str


@dataclass(frozen=True, slots=True)
class ArchiveDecision:
    archivable: bool
    rationale: str
    format: str | None = None
    port: str | None = None


@dataclass(frozen=True, slots=True)
class DeletionDecision:
    mode: str
    rationale: str


@dataclass(frozen=True, slots=True)
class LegalHoldNote:
    """Documentation only; never consulted by the engine."""

    applicable: bool = True
    precedence: str = HOLD_PRECEDENCE


@dataclass(frozen=True, slots=True)
class RequiredIndex:
    columns: tuple[str, ...]
    purpose: str


@dataclass(frozen=True, slots=True)
class DelegatedPurge:
    """The existing purge of a `delegated` table: the function and the job that run it."""

    purge_function: str
    job: str
    description: str


@dataclass(frozen=True, slots=True)
class ChildLink:
    """A child table whose `column` references this table's id: a row of this table is purged
    only when no child row references it any more (leaves first)."""

    descriptor_key: str
    column: str


@dataclass(frozen=True, slots=True)
class ParentLink:
    """A parent this table's `column` references: a row of this table (a link of a chain) is
    purged only when its parent row has aged out too, so a chain ages as a whole."""

    descriptor_key: str
    column: str


@dataclass(frozen=True, slots=True)
class OnlyWhere:
    """Rows are eligible only when `column` is one of `values` (bound as parameters)."""

    column: str
    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LifecycleDescriptor:
    key: str
    table_name: str
    owner: str
    scope: str
    cursor_column: str
    retention_class: str
    retention_min_days: int
    retention_max_days: int
    default_retention_days: int
    partition: PartitionDecision
    archive: ArchiveDecision
    deletion: DeletionDecision
    legal_hold: LegalHoldNote
    required_indexes: tuple[RequiredIndex, ...]
    batch_limit: int
    backup_restore_notes: str
    execution_mode: str
    delegated: DelegatedPurge | None = None
    workspace_column: str | None = "workspace_id"
    id_column: str = "id"
    chain: str | None = None
    """Descriptors of one chain are held together: a hold on any link blocks them all."""
    children: tuple[ChildLink, ...] = ()
    parents: tuple[ParentLink, ...] = ()
    only_where: tuple[OnlyWhere, ...] = ()
    report_columns: tuple[str, ...] = ()
    """Columns of each purged row handed to the caller (ids and keys only, never content)."""
    redacts_recalled: bool = False
    """The engine also redacts recalled rows in place (docs/lifecycle.md, "Retention")."""
    notes: str = field(default="")

    @property
    def is_generic(self) -> bool:
        return self.execution_mode == ExecutionMode.GENERIC


@dataclass(frozen=True, slots=True)
class RegistryError:
    """One problem of one descriptor: the field and the reason."""

    key: str
    field: str
    reason: str

    def __str__(self) -> str:
        return f"{self.key}: {self.field}: {self.reason}"


class UnsafeIdentifier(ValueError):
    """An identifier that is not a plain lower-case SQL name."""


def is_safe_identifier(name: str) -> bool:
    return bool(_IDENTIFIER.match(name))


def safe_identifier(name: str) -> str:
    """The name itself when it may be written into SQL text, else UnsafeIdentifier."""
    if not is_safe_identifier(name):
        raise UnsafeIdentifier(f"unsafe SQL identifier {name!r}")
    return name


def identifiers_of(d: LifecycleDescriptor) -> list[tuple[str, str]]:
    """Every (field, identifier) of a descriptor that SQL text may contain."""
    names = [("table_name", d.table_name), ("cursor_column", d.cursor_column)]
    names.append(("id_column", d.id_column))
    if d.workspace_column is not None:
        names.append(("workspace_column", d.workspace_column))
    for i, index in enumerate(d.required_indexes):
        names.extend((f"required_indexes[{i}].columns", c) for c in index.columns)
    names.extend((f"children[{i}].column", c.column) for i, c in enumerate(d.children))
    names.extend((f"parents[{i}].column", p.column) for i, p in enumerate(d.parents))
    names.extend((f"only_where[{i}].column", w.column) for i, w in enumerate(d.only_where))
    names.extend((f"report_columns[{i}]", c) for i, c in enumerate(d.report_columns))
    return names


def _has_index_prefix(d: LifecycleDescriptor, prefix: tuple[str, ...]) -> bool:
    return any(index.columns[: len(prefix)] == prefix for index in d.required_indexes)


def keyset_index(d: LifecycleDescriptor) -> tuple[str, ...]:
    """The composite index a generic purge walks: workspace (if any), cursor, id."""
    return keyset_columns(d.scope, d.workspace_column, d.cursor_column)


def keyset_columns(scope: str, workspace_column: str | None, cursor_column: str) -> tuple[str, ...]:
    """The leading columns of the keyset index: workspace (when scoped by one), cursor."""
    lead = (workspace_column,) if scope == Scope.WORKSPACE and workspace_column else ()
    return (*lead, cursor_column)


def validate_descriptor(d: LifecycleDescriptor, declaring_module: str) -> list[RegistryError]:
    """Every problem of one descriptor on its own (the registry adds the cross-descriptor ones).

    `declaring_module` is the short name of the store module that declared it (its owner)."""
    errors: list[RegistryError] = []

    def bad(field_name: str, reason: str) -> None:
        errors.append(RegistryError(d.key, field_name, reason))

    for field_name, name in identifiers_of(d):
        if not is_safe_identifier(name):
            bad(field_name, f"unsafe SQL identifier {name!r} (allowed: [a-z_][a-z0-9_]*, 63 max)")
    if d.owner != declaring_module:
        bad("owner", f"is {d.owner!r} but the descriptor is declared by {declaring_module!r}")
    if d.key != f"{d.owner}.{d.table_name}":
        bad("key", f"must be '<owner>.<table>' = {d.owner}.{d.table_name!r}")
    if d.scope not in set(Scope):
        bad("scope", f"unknown scope {d.scope!r} (one of {', '.join(Scope)})")
    if d.scope == Scope.WORKSPACE and d.workspace_column is None:
        bad("workspace_column", "a workspace-scoped table needs its workspace column")
    if d.retention_class not in set(RetentionClass):
        bad(
            "retention_class",
            f"unknown retention class {d.retention_class!r} (one of {', '.join(RetentionClass)})",
        )
    if d.retention_min_days < 1:
        bad("retention_min_days", "must be at least 1 day")
    if d.retention_class in CLASS_BOUNDS:
        frame = RetentionClass(d.retention_class)
        if d.retention_min_days < frame.min_days:
            bad(
                "retention_min_days",
                f"{d.retention_min_days} is below the {frame} class's minimum {frame.min_days}",
            )
        if d.retention_max_days > frame.max_days:
            bad(
                "retention_max_days",
                f"{d.retention_max_days} is above the {frame} class's maximum {frame.max_days}",
            )
    if d.retention_max_days < d.retention_min_days:
        bad("retention_max_days", "must not be below retention_min_days")
    if not d.retention_min_days <= d.default_retention_days <= d.retention_max_days:
        bad("default_retention_days", "must lie within retention_min_days..retention_max_days")
    if not 1 <= d.batch_limit <= MAX_BATCH_LIMIT:
        bad("batch_limit", f"must be 1..{MAX_BATCH_LIMIT}, is {d.batch_limit}")
    if not d.partition.rationale.strip():
        bad("partition.rationale", "a partition decision needs its rationale")
    if not d.archive.rationale.strip():
        bad("archive.rationale", "an archive decision needs its rationale")
    if d.archive.archivable:
        if d.archive.format not in ARCHIVE_FORMATS:
            bad("archive.format", f"an archivable table needs a format ({sorted(ARCHIVE_FORMATS)})")
        if d.archive.port not in ARCHIVE_PORTS:
            bad("archive.port", f"an archivable table needs a port ({sorted(ARCHIVE_PORTS)})")
    if d.deletion.mode not in set(DeletionMode):
        bad("deletion.mode", f"unknown deletion mode {d.deletion.mode!r}")
    if not d.deletion.rationale.strip():
        bad("deletion.rationale", "a deletion decision needs its rationale")
    if d.legal_hold.applicable and d.legal_hold.precedence != HOLD_PRECEDENCE:
        bad("legal_hold.precedence", f"an applicable hold must be {HOLD_PRECEDENCE!r}")
    if not d.backup_restore_notes.strip():
        bad("backup_restore_notes", "say how the table is backed up and restored")
    for i, index in enumerate(d.required_indexes):
        if not index.columns:
            bad(f"required_indexes[{i}].columns", "an index needs at least one column")
        if not index.purpose.strip():
            bad(f"required_indexes[{i}].purpose", "say what the index serves")
    if d.execution_mode == ExecutionMode.GENERIC:
        if d.delegated is not None:
            bad("delegated", "a generic descriptor must not name a delegated purge")
        if d.id_column != "id":
            bad("id_column", "a generic descriptor needs an `id` primary key")
        if not _has_index_prefix(d, keyset_index(d)):
            bad("required_indexes", f"a generic purge needs the composite index {keyset_index(d)}")
    elif d.execution_mode == ExecutionMode.DELEGATED:
        if d.delegated is None:
            bad("delegated", "a delegated descriptor names its purge function and job")
        elif not (d.delegated.purge_function.strip() and d.delegated.job.strip()):
            bad("delegated", "purge_function and job must both be named")
    else:
        bad("execution_mode", f"unknown execution mode {d.execution_mode!r}")
    return errors
