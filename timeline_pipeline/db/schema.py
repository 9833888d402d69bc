"""The product's tables (SQLAlchemy Core), the single source that migrations are checked against.

Names listed in DESIGN.md under "Column names that other tools read" are a contract with
operators' scripts and dashboards: columns may be added, never renamed. Status, attempt count,
revision and lease live in real columns (not JSON) so that compare-and-set transitions and the
discovery scans are indexed statements.
"""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    Column,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)

from timeline_pipeline.db.types import BigIntId, JSONType, UTCDateTime
from timeline_pipeline.domain.entries import EntrySource, EntryStatus, SummarySource
from timeline_pipeline.domain.interactions import AdmissionStatus, CardStatus, DeliveryStatus
from timeline_pipeline.domain.maintenance import (
    OPEN_MAINTENANCE_STATUSES,
    MaintenancePhase,
    MaintenanceStatus,
)
from timeline_pipeline.domain.states import WINDOW_STATUSES

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

WORKSPACE_STATUSES = ("firing", "recovered", "archived")


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(str(v)) for v in values)})"


def _workspace_fk(*, primary_key: bool = False) -> Column[str]:
    """The owning workspace; deleting a workspace deletes what belongs to it. `primary_key`:
    the first part of the row's key (a curator, a reconciled thread)."""
    workspace = ForeignKey("workspaces.id", ondelete="CASCADE")
    if primary_key:
        return Column("workspace_id", String(128), workspace, primary_key=True)
    return Column("workspace_id", String(128), workspace, nullable=False)


def _serial_id() -> Column[int]:
    """A surrogate key the database numbers."""
    return Column("id", BigIntId, primary_key=True, autoincrement=True)


def _revision() -> Column[int]:
    """The revision every compare-and-set moves (`db/cas.py`); 1 when the row is made."""
    return Column("revision", Integer(), nullable=False, server_default=text("1"))


def _created_at() -> Column[object]:
    return Column("created_at", UTCDateTime(), nullable=False)


def _timestamps() -> list[Column[object]]:
    return [_created_at(), Column("updated_at", UTCDateTime(), nullable=False)]


workspaces = Table(
    "workspaces",
    metadata,
    Column("id", String(128), primary_key=True),
    Column("type", String(64), nullable=False),
    Column("status", String(16), nullable=False),
    Column("title", String(512), nullable=True),
    *_timestamps(),
    # How a person reads the workspace (docs/i18n.md); NULL follows the `locale` and `timeZone`
    # settings. Migration 0016_workspace_language.
    Column("locale", String(8), nullable=True),
    Column("time_zone", String(64), nullable=True),
    CheckConstraint(_in("status", WORKSPACE_STATUSES), name="status"),
)

workspace_collaboration_resources = Table(
    "workspace_collaboration_resources",
    metadata,
    _serial_id(),
    _workspace_fk(),
    Column("resource_type", String(32), nullable=False),
    Column("resource_key", String(256), nullable=False),
    _created_at(),
    UniqueConstraint("workspace_id", "resource_type", "resource_key"),
    Index(None, "resource_type", "resource_key"),
)

workspace_curators = Table(
    "workspace_curators",
    metadata,
    _workspace_fk(primary_key=True),
    Column("open_id", String(128), primary_key=True),
    _created_at(),
)

workspace_timeline_evidence = Table(
    "workspace_timeline_evidence",
    metadata,
    _serial_id(),
    _workspace_fk(),
    Column("source", String(32), nullable=False),
    Column("source_type", String(64), nullable=False),
    Column("source_key", String(512), nullable=False),
    Column("occurred_at", UTCDateTime(), nullable=False),
    Column("source_updated_at", UTCDateTime(), nullable=False),
    Column("observed_at", UTCDateTime(), nullable=False),
    Column("actor_id", String(128), nullable=True),
    Column("actor_display_name", String(256), nullable=True),
    Column("content", Text(), nullable=False),
    Column("content_hash", String(64), nullable=False),
    Column("metadata_json", JSONType, nullable=False),
    # Additions beyond the contract columns: the chat scope as a real column so that a window's
    # evidence is one index range; flags the synthesis path filters on; a revision that tells an
    # insert (1) from an update (>1) in one RETURNING.
    Column("scope_key", String(256), nullable=True),
    Column("ai_eligible", Boolean(), nullable=False, server_default=text("false")),
    Column("deleted", Boolean(), nullable=False, server_default=text("false")),
    _revision(),
    Column("updated_at", UTCDateTime(), nullable=False),
    # A message recalled under a legal hold: its content, content hash and metadata set aside
    # here (never read by a view) until the hold is released (migration 0011_holds_everywhere;
    # docs/lifecycle.md).
    Column("held_content_json", JSONType, nullable=True),
    UniqueConstraint("workspace_id", "source", "source_type", "source_key"),
    Index(None, "workspace_id", "source", "source_type", "occurred_at"),
    Index(None, "workspace_id", "scope_key", "occurred_at", "id"),
    # The lifecycle purge's keyset (migration 0008_lifecycle).
    Index(None, "workspace_id", "occurred_at", "id"),
    # Maintenance processors page a workspace's rows by id (migration 0006_maintenance).
    Index(None, "workspace_id", "id"),
)

workspace_timeline_sync_states = Table(
    "workspace_timeline_sync_states",
    metadata,
    Column("id", BigIntId, primary_key=True, autoincrement=True),
    _workspace_fk(),
    Column("source", String(32), nullable=False),
    Column("source_type", String(64), nullable=False),
    Column("source_key", String(512), nullable=False),
    Column("status", String(16), nullable=False),
    Column("attempt_count", Integer(), nullable=False, server_default=text("0")),
    Column("revision", Integer(), nullable=False, server_default=text("1")),
    Column("processing_started_at", UTCDateTime(), nullable=True),
    Column("last_seen_updated_at", UTCDateTime(), nullable=True),
    Column("last_seen_cursor", String(512), nullable=True),
    Column("last_seen_content_hash", String(64), nullable=True),
    Column("metadata_json", JSONType, nullable=False),
    # Window coordinates and lease as real columns (discovery and CAS are indexed statements).
    Column("scope_key", String(256), nullable=True),
    Column("processor_version", String(64), nullable=True),
    Column("window_start", UTCDateTime(), nullable=True),
    Column("window_end", UTCDateTime(), nullable=True),
    Column("lease_owner", String(128), nullable=True),
    Column("next_attempt_at", UTCDateTime(), nullable=True),
    Column("summary_attempted", Boolean(), nullable=False, server_default=text("false")),
    Column("last_error", String(1000), nullable=True),
    # Window-level backoff while the model service is unavailable (not an attempt), and runs
    # that ended without claiming the window (migration 0002_window_backoff).
    Column("deferral_count", Integer(), nullable=False, server_default=text("0")),
    Column("deferred", Boolean(), nullable=False, server_default=text("false")),
    Column("unclaimed_runs", Integer(), nullable=False, server_default=text("0")),
    *_timestamps(),
    # A window's size in seconds, recorded when its row is made (migration 0014_window_size):
    # a change of `synthesisWindow` is refused while windows of another size are in use
    # (docs/changing.md, "A 15-minute window"). NULL on older rows: 600, the size before it.
    Column("window_seconds", Integer(), nullable=True),
    # The review card's outbox (migration 0015_review_card_outbox): set by the transaction that
    # completes the window, cleared by the card worker in the transaction that plans the card
    # (docs/review-cards.md, "How a card is planned").
    Column("review_card_pending", Boolean(), nullable=False, server_default=text("false")),
    UniqueConstraint("workspace_id", "source", "source_type", "source_key"),
    CheckConstraint(_in("status", WINDOW_STATUSES), name="status"),
    Index(None, "source_type", "status", "window_start"),
    # The summary decision's keyset scan (docs/design.md §8): windows whose flag is still
    # false, oldest first, with no lookback a late-finishing window could fall out of.
    Index(
        "ix_sync_states_summary_pending", "source_type", "summary_attempted", "window_start", "id"
    ),
    Index(None, "workspace_id", "scope_key", "source_type", "window_start"),
    Index(None, "workspace_id", "updated_at", "id"),
    # The card worker's keyset scan of flagged windows: the flag is cleared once per card, so
    # the rows it reads are the windows still waiting for theirs, never the whole history.
    Index("ix_sync_states_review_card_pending", "review_card_pending", "id"),
)

# When reconciliation last listed each thread of a chat, so that its per-run thread budget goes
# to the threads served longest ago (docs/runbooks.md, "Lark page fetch failure"). One row per
# thread met
# within the ingestion lookback; rows older than the lookback are pruned by the run itself.
workspace_timeline_reconcile_threads = Table(
    "workspace_timeline_reconcile_threads",
    metadata,
    _workspace_fk(primary_key=True),
    Column("chat_id", String(256), primary_key=True),
    Column("thread_id", String(256), primary_key=True),
    Column("last_listed_at", UTCDateTime(), nullable=False),
)

# A recall that arrived before its message (migration 0013_recall_tombstones; docs/design.md
# §4): the message's later arrival, by event or history, is stored redacted. One row per
# workspace and message; ids and times only, never content.
workspace_timeline_recall_tombstones = Table(
    "workspace_timeline_recall_tombstones",
    metadata,
    _serial_id(),
    _workspace_fk(),
    Column("chat_id", String(256), nullable=False),
    Column("message_id", String(256), nullable=False),
    Column("recalled_at", UTCDateTime(), nullable=False),
    _created_at(),
    UniqueConstraint("workspace_id", "chat_id", "message_id"),
    Index(None, "workspace_id", "created_at", "id"),  # the lifecycle purge
)

workspace_timeline_entries = Table(
    "workspace_timeline_entries",
    metadata,
    _serial_id(),
    _workspace_fk(),
    Column("occurred_at", UTCDateTime(), nullable=False),
    Column("title", String(512), nullable=False),
    Column("detail", Text(), nullable=True),
    Column("category", String(32), nullable=False),
    Column("source", String(8), nullable=False),
    Column("status", String(16), nullable=False),
    Column("fingerprint", String(64), nullable=True),
    Column("human_edited", Boolean(), nullable=False, server_default=text("false")),
    _revision(),
    Column(
        "window_state_id",
        BigIntId,
        ForeignKey("workspace_timeline_sync_states.id", ondelete="SET NULL"),
        nullable=True,
    ),
    Column("metadata_json", JSONType, nullable=False),
    *_timestamps(),
    # One of its messages was recalled and the entry kept its text (0019_recalled_copies).
    Column("recalled_evidence", Boolean(), nullable=False, server_default=text("false")),
    CheckConstraint(_in("source", tuple(EntrySource)), name="source"),
    CheckConstraint(_in("status", tuple(EntryStatus)), name="status"),
    UniqueConstraint("workspace_id", "fingerprint"),
    Index(None, "workspace_id", "occurred_at", "id"),
)

workspace_timeline_entry_evidence = Table(
    "workspace_timeline_entry_evidence",
    metadata,
    # An id and the workspace (migration 0008_lifecycle): the lifecycle engine purges bindings
    # by the same workspace + cursor keyset as every other table.
    _serial_id(),
    _workspace_fk(),
    Column(
        "entry_id",
        BigIntId,
        ForeignKey("workspace_timeline_entries.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column(
        "evidence_id",
        BigIntId,
        # RESTRICT: evidence bound to an entry cannot vanish under it; the lifecycle engine
        # purges leaves (bindings) first, and a cascade would hide a wrong order.
        ForeignKey("workspace_timeline_evidence.id", ondelete="RESTRICT"),
        nullable=False,
    ),
    _created_at(),
    UniqueConstraint("entry_id", "evidence_id"),
    Index(None, "evidence_id"),
    Index(None, "workspace_id", "created_at", "id"),
)

workspace_timeline_summaries = Table(
    "workspace_timeline_summaries",
    metadata,
    _serial_id(),
    Column(
        "workspace_id",
        String(128),
        ForeignKey("workspaces.id", ondelete="CASCADE"),
        nullable=False,
        unique=True,
    ),
    Column("content", Text(), nullable=False),
    Column("source", String(8), nullable=False),
    _revision(),
    Column("metadata_json", JSONType, nullable=False),
    *_timestamps(),
    CheckConstraint(_in("source", tuple(SummarySource)), name="source"),
    Index(None, "workspace_id", "updated_at", "id"),
)

audit_events = Table(
    "audit_events",
    metadata,
    _serial_id(),
    Column("occurred_at", UTCDateTime(), nullable=False),
    Column("actor", String(128), nullable=False),
    Column("action", String(64), nullable=False),
    Column("subject_type", String(64), nullable=False),
    Column("subject_id", String(256), nullable=False),
    Column("workspace_id", String(128), nullable=True),
    Column("details_json", JSONType, nullable=False),
    # `critical` for legal holds, `info` otherwise (migration 0011_holds_everywhere).
    Column("severity", String(16), nullable=False, server_default=text("'info'")),
    Index(None, "subject_type", "subject_id", "occurred_at"),
    Index(None, "occurred_at", "id"),
)

api_tokens = Table(
    "api_tokens",
    metadata,
    Column("id", String(64), primary_key=True),
    _workspace_fk(),
    Column("token_hash", String(64), nullable=False, unique=True),
    _created_at(),
    Column("revoked_at", UTCDateTime(), nullable=True),
    # Space-separated scopes (migration 0008_lifecycle); tokens made before it keep the
    # timeline scopes they always had.
    Column(
        "scopes",
        String(512),
        nullable=False,
        server_default=text("'timeline:read timeline:curate'"),
    ),
)

HOLD_STATUSES = ("active", "released")
LIFECYCLE_RUN_STATUSES = ("running", "succeeded", "failed")
LIFECYCLE_RUN_MODES = ("dry_run", "purge")

# Legal holds (docs/lifecycle.md, "Legal holds"). No foreign key to workspaces: a hold is a record
# that
# outlives what it held, and deleting a workspace must not delete the hold on it.
legal_holds = Table(
    "legal_holds",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("workspace_id", String(128), nullable=False),
    Column("descriptor_key", String(128), nullable=True),
    Column("status", String(16), nullable=False),
    _revision(),
    Column("reason", String(1000), nullable=False),
    Column("review_at", UTCDateTime(), nullable=True),
    Column("created_by", String(128), nullable=False),
    # Idempotency keys are scoped per workspace (migration 0011_holds_everywhere).
    Column("create_idempotency_key", String(256), nullable=False),
    Column("create_request_hash", String(64), nullable=False),
    Column("released_at", UTCDateTime(), nullable=True),
    Column("released_by", String(128), nullable=True),
    Column("release_reason", String(1000), nullable=True),
    Column("release_idempotency_key", String(256), nullable=True),
    Column("release_request_hash", String(64), nullable=True),
    *_timestamps(),
    CheckConstraint(_in("status", HOLD_STATUSES), name="status"),
    UniqueConstraint("workspace_id", "create_idempotency_key"),
    UniqueConstraint("workspace_id", "release_idempotency_key"),
    Index(None, "status", "workspace_id"),
)

# One row per dry-run or purge run: counts only, never row content (docs/lifecycle.md, "Purge
# runbook").
lifecycle_runs = Table(
    "lifecycle_runs",
    metadata,
    _serial_id(),
    Column("run_key", String(64), nullable=False, unique=True),
    Column("mode", String(16), nullable=False),
    Column("status", String(16), nullable=False),
    Column("workspace_id", String(128), nullable=True),
    Column("descriptor_key", String(128), nullable=True),
    Column("as_of", UTCDateTime(), nullable=False),
    Column("retention_days_override", Integer(), nullable=True),
    Column("archive_dir", String(1024), nullable=True),
    Column("scanned", Integer(), nullable=False, server_default=text("0")),
    Column("held", Integer(), nullable=False, server_default=text("0")),
    Column("archived", Integer(), nullable=False, server_default=text("0")),
    Column("purged", Integer(), nullable=False, server_default=text("0")),
    Column("redacted", Integer(), nullable=False, server_default=text("0")),
    Column("batches", Integer(), nullable=False, server_default=text("0")),
    Column("counts_json", JSONType, nullable=False),
    Column("error_code", String(64), nullable=True),
    Column("error_message", String(1000), nullable=True),
    Column("started_at", UTCDateTime(), nullable=False),
    Column("heartbeat_at", UTCDateTime(), nullable=False),
    Column("finished_at", UTCDateTime(), nullable=True),
    CheckConstraint(_in("status", LIFECYCLE_RUN_STATUSES), name="status"),
    CheckConstraint(_in("mode", LIFECYCLE_RUN_MODES), name="mode"),
    Index(None, "started_at", "id"),
)

# Dagster window partitions retired by a purge of their window states, written in the purge's
# transaction; a sensor forgets them in Dagster and marks them done (migration
# 0011_holds_everywhere).
lifecycle_retired_partitions = Table(
    "lifecycle_retired_partitions",
    metadata,
    _serial_id(),
    Column("partition_key", String(512), nullable=False, unique=True),
    Column("status", String(16), nullable=False),
    Column("run_id", BigIntId, nullable=True),
    Column("retired_at", UTCDateTime(), nullable=False),
    Column("forgotten_at", UTCDateTime(), nullable=True),
    CheckConstraint(_in("status", ("pending", "done")), name="status"),
    Index(None, "status", "id"),
    Index(None, "retired_at", "id"),
)

# Operator-driven maintenance jobs (docs/maintenance.md): one row per job, kept after it
# completes or is cancelled. Limits are real columns with the documented ranges as checks, so a
# row can never hold a limit the service would refuse; the partial unique index allows one open
# (ready or paused) job per type and scope, whatever its mode.
MAINTENANCE_STATUSES = tuple(status.value for status in MaintenanceStatus)
MAINTENANCE_PHASES = tuple(phase.value for phase in MaintenancePhase)
MAINTENANCE_OPEN_PREDICATE = _in("status", tuple(s.value for s in OPEN_MAINTENANCE_STATUSES))

maintenance_jobs = Table(
    "maintenance_jobs",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("job_type", String(64), nullable=False),
    Column("processor_version", String(32), nullable=False),
    Column("scope_key", String(256), nullable=False),
    Column("idempotency_key", String(256), nullable=False, unique=True),
    Column("input_hash", String(64), nullable=False),
    Column("parameters_json", JSONType, nullable=False),
    Column("apply", Boolean(), nullable=False),
    Column("status", String(16), nullable=False),
    Column("phase", String(16), nullable=False),
    _revision(),
    Column("batch_size", Integer(), nullable=False),
    Column("delay_ms", Integer(), nullable=False),
    Column("lock_timeout_ms", Integer(), nullable=False),
    Column("statement_timeout_ms", Integer(), nullable=False),
    Column("checkpoint_json", JSONType, nullable=False),
    Column("progress_json", JSONType, nullable=False),
    Column("result_json", JSONType, nullable=True),
    Column("error_json", JSONType, nullable=True),
    Column("batches", Integer(), nullable=False, server_default=text("0")),
    Column("not_before", UTCDateTime(), nullable=True),
    *_timestamps(),
    Column("finished_at", UTCDateTime(), nullable=True),
    # The job's workspace, its parameters' `workspace_id` (0018_maintenance_workspace): holds
    # and the lifecycle see whose job it is. No foreign key: the record outlives nothing.
    Column("workspace_id", String(128), nullable=True),
    CheckConstraint(_in("status", MAINTENANCE_STATUSES), name="status"),
    CheckConstraint(_in("phase", MAINTENANCE_PHASES), name="phase"),
    CheckConstraint("batch_size BETWEEN 1 AND 5000", name="batch_size"),
    CheckConstraint("delay_ms BETWEEN 1 AND 60000", name="delay_ms"),
    CheckConstraint(
        "lock_timeout_ms >= 1 AND lock_timeout_ms <= statement_timeout_ms "
        "AND statement_timeout_ms <= 5000",
        name="timeouts",
    ),
    Index(
        "uq_maintenance_jobs_one_open_per_scope",
        "job_type",
        "scope_key",
        unique=True,
        sqlite_where=text(MAINTENANCE_OPEN_PREDICATE),
        postgresql_where=text(MAINTENANCE_OPEN_PREDICATE),
    ),
    Index(None, "updated_at", "id"),  # the lifecycle purge before 0018_maintenance_workspace
    Index(None, "workspace_id", "updated_at", "id"),  # the lifecycle purge
)

# --- review cards (migration 0007_interactions; docs/review-cards.md) -----------------------

CARD_STATUSES = tuple(s.value for s in CardStatus)
DELIVERY_STATUSES = tuple(s.value for s in DeliveryStatus)
ADMISSION_STATUSES = tuple(s.value for s in AdmissionStatus)

# One interactive card per window and processor version: the authoritative record of what the
# card offered (entries and their revisions, field types, option values), where it was delivered,
# by which bot, its status and its persisted expiry. A callback is checked against this row only.
interaction_requests = Table(
    "interaction_requests",
    metadata,
    _serial_id(),
    _workspace_fk(),
    Column("kind", String(32), nullable=False),
    # The window whose drafts the card shows; no foreign key: the card outlives a purged window.
    Column("window_state_id", BigIntId, nullable=True),
    Column("processor_version", String(64), nullable=False),
    Column("idempotency_uuid", String(50), nullable=False, unique=True),
    Column("bot_app_id", String(128), nullable=True),  # the app that delivered it
    Column("chat_id", String(256), nullable=False),
    Column("reply_to_message_id", String(256), nullable=True),
    Column("message_id", String(256), nullable=True),
    Column("thread_id", String(256), nullable=True),
    Column("delivery_status", String(16), nullable=False),
    Column("delivery_attempts", Integer(), nullable=False, server_default=text("0")),
    Column("delivery_owner", String(128), nullable=True),
    Column("delivery_due_at", UTCDateTime(), nullable=True),
    Column("delivered_at", UTCDateTime(), nullable=True),
    Column("status", String(16), nullable=False),
    Column("request_json", JSONType, nullable=False),
    Column("decisions_json", JSONType, nullable=False),
    _revision(),
    Column("expires_at", UTCDateTime(), nullable=False),
    *_timestamps(),
    # A recall redacted the card's text: patch it in Lark (0019_recalled_copies).
    Column("redraw_pending", Boolean(), nullable=False, server_default=text("false")),
    CheckConstraint(_in("status", CARD_STATUSES), name="status"),
    CheckConstraint(_in("delivery_status", DELIVERY_STATUSES), name="delivery_status"),
    UniqueConstraint("message_id"),
    Index(None, "status", "expires_at"),
    Index(None, "delivery_status", "delivery_due_at"),
    Index(None, "workspace_id", "created_at"),
    Index(None, "workspace_id", "expires_at", "id"),  # the lifecycle purge (0008_lifecycle)
)

# Callback tokens, stored only as SHA-256 hashes. A card gets a new token each time the product
# draws it (delivery, every patch); each stays valid until the card's expiry, so a patch that
# never reached Lark cannot disable the card people still see.
interaction_tokens = Table(
    "interaction_tokens",
    metadata,
    Column("token_hash", String(64), primary_key=True),
    Column(
        "request_id",
        BigIntId,
        ForeignKey("interaction_requests.id", ondelete="CASCADE"),
        nullable=False,
    ),
    _created_at(),
    Index(None, "request_id"),
)

# The durable admission queue: a callback is admitted (idempotently on its event id, and on
# the decision it asks for) in the same transaction as its resume intent; the worker takes rows
# with a lease and applies each decision once.
interaction_admissions = Table(
    "interaction_admissions",
    metadata,
    _serial_id(),
    Column(
        "request_id",
        BigIntId,
        ForeignKey("interaction_requests.id", ondelete="CASCADE"),
        nullable=False,
    ),
    _workspace_fk(),
    Column("event_id", String(128), nullable=False, unique=True),
    Column("decision_key", String(256), nullable=False, unique=True),
    Column("entry_id", BigIntId, nullable=False),
    Column("entry_revision", Integer(), nullable=False),
    Column("action", String(16), nullable=False),
    Column("value_json", JSONType, nullable=False),
    Column("actor_open_id", String(128), nullable=False),
    Column("status", String(16), nullable=False),
    Column("attempts", Integer(), nullable=False, server_default=text("0")),
    _revision(),
    Column("lease_owner", String(128), nullable=True),
    Column("lease_expires_at", UTCDateTime(), nullable=True),
    Column("outcome", String(64), nullable=True),
    Column("admitted_at", UTCDateTime(), nullable=False),
    Column("applied_at", UTCDateTime(), nullable=True),
    Column("finished_at", UTCDateTime(), nullable=True),
    CheckConstraint(_in("status", ADMISSION_STATUSES), name="status"),
    Index(None, "status", "lease_expires_at", "id"),
    Index(None, "workspace_id", "status"),
    Index(None, "request_id"),
    Index(None, "workspace_id", "admitted_at", "id"),  # the lifecycle purge (0008_lifecycle)
)

ui_signin_links = Table(
    "ui_signin_links",
    metadata,
    Column("id", String(64), primary_key=True),
    _workspace_fk(),
    Column("token_hash", String(64), nullable=False, unique=True),
    _created_at(),
    Column("expires_at", UTCDateTime(), nullable=False),
    Column("used_at", UTCDateTime(), nullable=True),
    Index(None, "workspace_id", "expires_at", "id"),  # the lifecycle purge (0008_lifecycle)
)

ui_sessions = Table(
    "ui_sessions",
    metadata,
    Column("id", String(64), primary_key=True),
    _workspace_fk(),
    Column("session_hash", String(64), nullable=False, unique=True),
    Column(
        "link_id", String(64), ForeignKey("ui_signin_links.id", ondelete="CASCADE"), nullable=True
    ),
    _created_at(),
    Column("expires_at", UTCDateTime(), nullable=False),
    Column("revoked_at", UTCDateTime(), nullable=True),
    Index(None, "workspace_id", "revoked_at"),
    Index(None, "workspace_id", "expires_at", "id"),  # the lifecycle purge (0008_lifecycle)
    Index(None, "link_id"),
)

# --- rerun previews (migration 0009_rerun_preview; docs/maintenance.md "Preview a rerun") ------

# Scratch rows of a `window_rerun` dry-run: what the new processor version would propose per
# window and which stored entries it would leave alone. Keyed by the maintenance job; no
# foreign key to entries or jobs, so the scratch never holds back their purge, and nothing but
# the preview and the lifecycle purge reads it: a preview row is never an entry.
PREVIEW_KINDS = ("proposal", "prior")
window_rerun_previews = Table(
    "window_rerun_previews",
    metadata,
    _serial_id(),
    _workspace_fk(),
    Column("job_id", String(36), nullable=False),
    Column("chat_id", String(128), nullable=False),
    Column("window_start", UTCDateTime(), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("outcome", String(16), nullable=False),
    Column("entry_id", BigIntId, nullable=True),
    Column("image_id", BigIntId, nullable=True),
    Column("fingerprint", String(64), nullable=True),
    Column("occurred_at", UTCDateTime(), nullable=False),
    Column("title", String(512), nullable=False),
    Column("category", String(32), nullable=False),
    Column("detail", Text(), nullable=True),
    Column("old_title", String(512), nullable=True),
    Column("old_category", String(32), nullable=True),
    Column("status", String(16), nullable=True),
    Column("source", String(8), nullable=True),
    Column("reason", String(32), nullable=True),
    Column("evidence_json", JSONType, nullable=False),
    _created_at(),
    CheckConstraint(_in("kind", PREVIEW_KINDS), name="kind"),
    Index(None, "job_id", "kind", "fingerprint"),
    Index(None, "job_id", "kind", "entry_id"),
    Index(None, "workspace_id", "created_at", "id"),  # the lifecycle purge
)

# A curator's pin of a chat message (docs/pins.md): one row per workspace, message and curator,
# so a repeated or redelivered reaction finds its row instead of pinning twice. `action_at` is
# the Lark time of the last reaction applied: an older event (a late redelivery) changes nothing.
PIN_STATUSES = ("pinned", "unpinned")

timeline_chat_pins = Table(
    "timeline_chat_pins",
    metadata,
    _serial_id(),
    _workspace_fk(),
    Column("message_id", String(256), nullable=False),
    Column("operator_open_id", String(128), nullable=False),
    Column("chat_id", String(256), nullable=False),
    Column("evidence_id", BigIntId, nullable=False),
    Column("entry_id", BigIntId, nullable=False),
    Column("status", String(16), nullable=False),
    Column("action_at", UTCDateTime(), nullable=False),
    _revision(),
    *_timestamps(),
    CheckConstraint(_in("status", PIN_STATUSES), name="status"),
    UniqueConstraint("workspace_id", "message_id", "operator_open_id"),
    Index(None, "message_id", "operator_open_id"),
    Index(None, "workspace_id", "updated_at", "id"),  # the lifecycle purge
)

# A pin reaction's removal that arrived before its creation (migration 0017_pin_tombstones;
# docs/pins.md): the later creation with an older `action_time` does not pin. One row per
# workspace, message, curator and emoji; ids and times only.
timeline_pin_tombstones = Table(
    "timeline_pin_tombstones",
    metadata,
    _serial_id(),
    _workspace_fk(),
    Column("message_id", String(256), nullable=False),
    Column("operator_open_id", String(128), nullable=False),
    Column("emoji_type", String(64), nullable=False),
    Column("removed_at", UTCDateTime(), nullable=False),
    *_timestamps(),
    UniqueConstraint("workspace_id", "message_id", "operator_open_id", "emoji_type"),
    Index(None, "workspace_id", "updated_at", "id"),  # the lifecycle purge
)

# The incident report (migration 0020_incident_reports; docs/report.md).

# Each build of a workspace's report is a new revision; the previous are kept. `content_json`
# and `markdown` quote entries' text (a copy of message text: declared in
# `store/incident_reports.py`); `cited_evidence_ids` ties a revision to the messages it quotes;
# `input_stamp` is the digest of what the build read (confirmed entries, status, milestones),
# the sensor's test for "changed since it was built".
incident_reports = Table(
    "incident_reports",
    metadata,
    _serial_id(),
    _workspace_fk(),
    Column("revision", Integer(), nullable=False),
    Column("content_json", JSONType, nullable=False),
    Column("markdown", Text(), nullable=False),
    Column("content_fingerprint", String(64), nullable=False),
    Column("input_stamp", String(64), nullable=False),
    Column("cited_evidence_ids", JSONType, nullable=False),
    Column("built_by", String(128), nullable=False),
    Column("trigger", String(32), nullable=False),
    Column("withdrawn", Boolean(), nullable=False, server_default=text("false")),
    *_timestamps(),
    UniqueConstraint("workspace_id", "revision"),
    Index(None, "workspace_id", "updated_at", "id"),  # the lifecycle purge
)

MILESTONE_NAMES = ("started", "detected", "mitigated", "resolved")

# A curator's time for a milestone; the derived one is computed from the timeline each build,
# so it is never lost.
incident_report_milestones = Table(
    "incident_report_milestones",
    metadata,
    _serial_id(),
    _workspace_fk(),
    Column("milestone", String(16), nullable=False),
    Column("at", UTCDateTime(), nullable=False),
    Column("set_by", String(128), nullable=False),
    *_timestamps(),
    CheckConstraint(_in("milestone", MILESTONE_NAMES), name="milestone"),
    UniqueConstraint("workspace_id", "milestone"),
    Index(None, "workspace_id", "updated_at", "id"),  # the lifecycle purge
)

REPORT_DOCUMENT_STATES = ("active", "deleted")

# The workspace's report document in Lark Docs: one per workspace, written revision by
# revision (ids and states only; the text lives in Lark and in `incident_reports`).
incident_report_documents = Table(
    "incident_report_documents",
    metadata,
    _serial_id(),
    _workspace_fk(),
    Column("folder_token", String(128), nullable=False),
    Column("title", String(512), nullable=False),
    Column("document_id", String(128), nullable=True),
    Column("document_url", String(1024), nullable=True),
    Column("create_started_at", UTCDateTime(), nullable=True),
    Column("target_revision", Integer(), nullable=False),
    Column("written_revision", Integer(), nullable=True),
    # The revision whose write already emptied the document (a retry does not empty it again
    # after the insert that followed landed; docs/report.md, "The Lark document").
    Column("cleared_for_revision", Integer(), nullable=True),
    Column("chat_id", String(256), nullable=True),
    Column("reply_uuid", String(64), nullable=True),
    Column("reply_message_id", String(128), nullable=True),
    Column("attempt_count", Integer(), nullable=False, server_default=text("0")),
    Column("last_error", String(256), nullable=True),
    # `deleted` once the document was deleted in Lark because the report it showed aged out
    # (docs/report.md, "Retention and holds"); only then is the row itself purged.
    Column("state", String(16), nullable=False, server_default=text("'active'")),
    Column("deleted_at", UTCDateTime(), nullable=True),
    _revision(),
    *_timestamps(),
    CheckConstraint(_in("state", REPORT_DOCUMENT_STATES), name="state"),
    UniqueConstraint("workspace_id"),
    Index(None, "workspace_id", "updated_at", "id"),  # the lifecycle purge
)

FOLLOW_UP_STATES = ("pending", "created", "failed")

# A confirmed next step's Lark task, created once (idempotent by `client_token`).
follow_up_tasks = Table(
    "follow_up_tasks",
    metadata,
    _serial_id(),
    _workspace_fk(),
    Column("entry_id", BigIntId, nullable=False),
    Column("client_token", String(64), nullable=False),
    Column("state", String(16), nullable=False),
    Column("task_guid", String(128), nullable=True),
    Column("task_url", String(1024), nullable=True),
    Column("requested_by", String(128), nullable=False),
    Column("attempt_count", Integer(), nullable=False, server_default=text("0")),
    Column("last_error", String(256), nullable=True),
    _revision(),
    *_timestamps(),
    CheckConstraint(_in("state", FOLLOW_UP_STATES), name="state"),
    UniqueConstraint("entry_id"),
    Index(None, "state", "id"),
    Index(None, "workspace_id", "updated_at", "id"),  # the lifecycle purge
)

# When a workspace's status changed and who changed it: the `resolved` milestone reads the last
# change to `recovered`, the report sensor the change out of `firing`.
workspace_status_changes = Table(
    "workspace_status_changes",
    metadata,
    _serial_id(),
    _workspace_fk(),
    Column("status", String(16), nullable=False),
    Column("changed_by", String(128), nullable=False),
    Column("changed_at", UTCDateTime(), nullable=False),
    CheckConstraint(_in("status", WORKSPACE_STATUSES), name="status"),
    Index(None, "workspace_id", "changed_at", "id"),
)
