"""What the database holds after a fault, measured against what Lark holds.

A fault test's verdict is a `Tally`: for every message of the chat, exactly one evidence row,
and that row equal, field for field, to the complete record the product's own normalization
builds from the Lark history item. A row that exists but differs (a hash without its content,
an old timestamp beside new text) counts as half-written. The comparison is pure; reading the
rows is the only I/O here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from sqlalchemy import Engine, and_, exists, func, select

from timeline_pipeline.db.engine import make_engine, transaction
from timeline_pipeline.db.schema import workspace_timeline_evidence as ev
from timeline_pipeline.db.schema import workspace_timeline_sync_states as states
from timeline_pipeline.domain.evidence import EvidenceRecord, EvidenceRow
from timeline_pipeline.domain.keys import SOURCE_TYPE_WINDOW
from timeline_pipeline.ingest.records import evidence_record
from timeline_pipeline.lark.normalize import normalize_event_message, normalize_list_item
from timeline_pipeline.lark.simulator import ChatStore
from timeline_pipeline.store import evidence, workspaces

COMPLETE_FIELDS: Final = (
    "workspace_id",
    "source",
    "source_type",
    "source_key",
    "occurred_at",
    "source_updated_at",
    "actor_id",
    "content",
    "content_hash",
    "scope_key",
    "deleted",
    "ai_eligible",
)
"""Every fact a committed write carries; metadata is left out because the event and history
shapes legitimately differ in bookkeeping keys that the content hash already ignores."""

FACT_FIELDS: Final = (*COMPLETE_FIELDS, "id", "observed_at", "revision", "metadata")
"""What must not move once a row is acknowledged, unless the message itself changed (the
display name is filled in later by design, so it is not a fact here)."""


def _edited_content(message_type: str, line: str) -> dict[str, Any]:
    """New content in the message's own shape (an edit never changes the type)."""
    if message_type == "post":
        return {"title": "Correction", "content": [[{"tag": "text", "text": line}]]}
    return {"text": line}


def message_versions(
    store: ChatStore, items: list[dict[str, Any]], edit_every: int
) -> dict[str, list[dict[str, Any]]]:
    """message id -> its list items, oldest first: the original, then each edit. Every
    `edit_every`-th message is edited twice in `store` (one and two minutes after it was sent),
    so it has three versions in flight."""
    versions = {item["message_id"]: [item] for item in items}
    for index, item in enumerate(items[::edit_every]):
        created = datetime.fromtimestamp(int(item["create_time"]) / 1000, UTC)
        for edit in (1, 2):
            content = _edited_content(item["msg_type"], f"correction {edit} to update {index}")
            edited = store.edit_message(
                item["message_id"], content, at=created + timedelta(minutes=edit)
            )
            versions[item["message_id"]].append(edited)
    return versions


def message_id_of(source_key: str) -> str:
    return source_key.rsplit("/", 1)[1]


def expected_records(
    items: Iterable[Mapping[str, Any]],
    workspace_id: str,
    *,
    app_id: str,
    max_text_chars: int,
) -> dict[str, EvidenceRecord]:
    """message id -> the complete row the product writes for this history item."""
    records: dict[str, EvidenceRecord] = {}
    for item in items:
        message = normalize_list_item(item, max_text_chars=max_text_chars, app_id=app_id)
        records[message.message_id] = evidence_record(message, workspace_id)
    return records


def expected_from_events(
    events: Iterable[Mapping[str, Any]],
    workspace_id: str,
    *,
    app_id: str,
    max_text_chars: int,
) -> dict[str, EvidenceRecord]:
    """message id -> the complete row the receiver writes for this `im.message.receive_v1`
    callback (for callbacks carrying an edit, the event shape is the reference: see
    `expected_records` for the history shape)."""
    records: dict[str, EvidenceRecord] = {}
    for event in events:
        message = normalize_event_message(
            event["event"], max_text_chars=max_text_chars, app_id=app_id
        )
        records[message.message_id] = evidence_record(message, workspace_id)
    return records


@dataclass(frozen=True)
class Tally:
    rows: int
    lost: frozenset[str]
    duplicated: frozenset[str]
    unexpected: frozenset[str]
    incomplete: frozenset[str]

    @property
    def exact(self) -> bool:
        """One complete row per expected message and nothing else."""
        return not (self.lost or self.duplicated or self.unexpected or self.incomplete)

    def describe(self) -> str:
        return (
            f"{self.rows} evidence rows, {len(self.lost)} lost, {len(self.duplicated)} "
            f"duplicated, {len(self.unexpected)} unexpected, {len(self.incomplete)} half-written"
        )


def differing_fields(row: EvidenceRow, record: EvidenceRecord) -> list[str]:
    return [name for name in COMPLETE_FIELDS if getattr(row, name) != getattr(record, name)]


def tally(rows: Sequence[EvidenceRow], expected: Mapping[str, EvidenceRecord]) -> Tally:
    """Compare stored rows with the expected records, keyed by message id."""
    counts = Counter(message_id_of(row.source_key) for row in rows)
    incomplete = {
        message_id_of(row.source_key)
        for row in rows
        if message_id_of(row.source_key) in expected
        and differing_fields(row, expected[message_id_of(row.source_key)])
    }
    return Tally(
        rows=len(rows),
        lost=frozenset(set(expected) - set(counts)),
        duplicated=frozenset(key for key, count in counts.items() if count > 1),
        unexpected=frozenset(set(counts) - set(expected)),
        incomplete=frozenset(incomplete),
    )


def facts(row: EvidenceRow) -> dict[str, Any]:
    return {name: getattr(row, name) for name in FACT_FIELDS}


def all_evidence(engine: Engine) -> list[EvidenceRow]:
    """Every evidence row of every workspace: a write to the wrong workspace counts too."""
    with engine.connect() as conn:
        owners = conn.execute(select(ev.c.workspace_id).distinct().order_by(ev.c.workspace_id))
        return [
            row
            for workspace_id in owners.scalars()
            for row in evidence.page(conn, workspace_id, limit=1_000_000)
        ]


def rows_by_message(rows: Iterable[EvidenceRow]) -> dict[str, EvidenceRow]:
    return {message_id_of(row.source_key): row for row in rows}


def sync_state_count(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(states)).scalar_one())


def windows_without_evidence(engine: Engine) -> int:
    """Window states whose window holds no evidence row of their chat: state without its data."""
    has_evidence = exists().where(
        and_(
            ev.c.workspace_id == states.c.workspace_id,
            ev.c.scope_key == states.c.scope_key,
            ev.c.occurred_at >= states.c.window_start,
            ev.c.occurred_at < states.c.window_end,
        )
    )
    query = (
        select(func.count())
        .select_from(states)
        .where(states.c.source_type == SOURCE_TYPE_WINDOW, ~has_evidence)
    )
    with engine.connect() as conn:
        return int(conn.execute(query).scalar_one())


@contextmanager
def bound_workspace(url: str, workspace: str, chat: str) -> Iterator[Engine]:
    """An engine on `url` where a firing workspace, six hours old, is bound to `chat`."""
    made = make_engine(url)
    with transaction(made) as conn:
        workspaces.create(conn, workspace, created_at=datetime.now(UTC) - timedelta(hours=6))
        workspaces.bind_chat(conn, workspace, chat)
    try:
        yield made
    finally:
        made.dispose()
