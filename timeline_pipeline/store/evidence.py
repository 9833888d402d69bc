"""Evidence store: idempotent upserts and keyset reads of `workspace_timeline_evidence`.

Functions take a Connection so that callers compose them into one transaction (the receiver
commits a message for every bound workspace at once; reconciliation commits a page at once).
Statements are built once per dialect: rebuilding an upsert per row halves the write rate.

The only module with SQL on `workspace_timeline_evidence`; other stores' statements embed its
correlated subqueries (`latest_eligible_at`, `first_eligible_at`) instead of writing their own
(README, "Package layout").
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from functools import cache
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Dialect,
    Insert,
    ScalarSelect,
    Select,
    and_,
    bindparam,
    false,
    func,
    or_,
    select,
    text,
    true,
    tuple_,
)
from sqlalchemy.engine import Row

from timeline_pipeline.db.rows import by_source_key, json_object, records
from timeline_pipeline.db.schema import workspace_timeline_evidence as ev
from timeline_pipeline.db.upsert import insert_for_dialect
from timeline_pipeline.domain import held_versions
from timeline_pipeline.domain.content_lineage import OnRecall, Tie, declare_content
from timeline_pipeline.domain.evidence import (
    EvidenceCursor,
    EvidenceRecord,
    EvidenceRow,
    HashInput,
    UpsertOutcome,
    UpsertSummary,
)
from timeline_pipeline.domain.keys import SOURCE_LARK, SOURCE_TYPE_LARK_MESSAGE
from timeline_pipeline.domain.lifecycle import ChildLink, RetentionClass
from timeline_pipeline.domain.lifecycle_declare import archive_on_request, declare
from timeline_pipeline.domain.records import record_of


@cache
def _upsert_statement(dialect: str) -> Insert:
    stmt = insert_for_dialect(dialect, ev)
    excluded = stmt.excluded
    # An update happens only when the content really changed, the stored row is not already
    # redacted (a recall is final), and the incoming version is not older than the stored one
    # (out-of-order delivery must not roll an edit back). A redaction always wins.
    changed = and_(
        ev.c.deleted == false(),
        ev.c.content_hash != excluded.content_hash,
        or_(excluded.deleted == true(), excluded.source_updated_at >= ev.c.source_updated_at),
    )
    upsert: Insert = stmt.on_conflict_do_update(
        index_elements=[ev.c.workspace_id, ev.c.source, ev.c.source_type, ev.c.source_key],
        set_={
            "source_updated_at": excluded.source_updated_at,
            "content": excluded.content,
            "content_hash": excluded.content_hash,
            "metadata_json": excluded.metadata_json,
            "actor_display_name": func.coalesce(
                excluded.actor_display_name, ev.c.actor_display_name
            ),
            "ai_eligible": excluded.ai_eligible,
            "deleted": excluded.deleted,
            "revision": ev.c.revision + 1,
            "updated_at": excluded.updated_at,
        },
        where=changed,
    ).returning(ev.c.source_key, ev.c.revision)
    return upsert


def _params(record: EvidenceRecord, now: datetime) -> dict[str, Any]:
    return {
        "workspace_id": record.workspace_id,
        "source": record.source,
        "source_type": record.source_type,
        "source_key": record.source_key,
        "occurred_at": record.occurred_at,
        "source_updated_at": record.source_updated_at,
        "observed_at": now,
        "actor_id": record.actor_id,
        "actor_display_name": record.actor_display_name,
        "content": record.content,
        "content_hash": record.content_hash,
        "metadata_json": record.metadata,
        "scope_key": record.scope_key,
        "ai_eligible": record.ai_eligible,
        "deleted": record.deleted,
        "revision": 1,
        "updated_at": now,
    }


def _latest_per_key(records: Iterable[EvidenceRecord]) -> list[EvidenceRecord]:
    """One record per identity, in identity order: a multi-row upsert may not touch the same
    row twice, and must lock its rows in one order.

    The winner is the one the database would keep anyway: a redaction, else the newest. The
    order is the key's, never the arrival's: an upsert locks each row it inserts or finds (even
    one it leaves unchanged), so two batches holding the same messages in opposite orders, from
    two receiver replicas or a receiver and reconciliation, would each hold a row the other
    waits for, and PostgreSQL would abort one as a deadlock (docs/deployment-receivers.md).
    """
    chosen: dict[tuple[str, str, str, str], EvidenceRecord] = {}
    for record in records:
        key = (record.workspace_id, record.source, record.source_type, record.source_key)
        held = chosen.get(key)
        if held is None or (
            not held.deleted
            and (record.deleted or record.source_updated_at >= held.source_updated_at)
        ):
            chosen[key] = record
    return [chosen[key] for key in sorted(chosen)]


def upsert(
    conn: Connection, record: EvidenceRecord, *, now: datetime | None = None
) -> UpsertOutcome:
    """Insert, update or recognise a duplicate, in one statement."""
    stmt = _upsert_statement(conn.dialect.name)
    row = conn.execute(stmt, _params(record, now or datetime.now(UTC))).first()
    return _outcome(row)


def upsert_many(
    conn: Connection,
    records: Sequence[EvidenceRecord],
    *,
    now: datetime | None = None,
    batch_size: int = 500,
) -> UpsertSummary:
    """Batch upsert for reconciliation pages and the receiver's batches; same semantics as
    `upsert`, row for row, written in key order (`_latest_per_key`)."""
    unique = _latest_per_key(records)
    stamp = now or datetime.now(UTC)
    write = _pg_batch if conn.dialect.name == "postgresql" else _generic_batch
    inserted = updated = 0
    for start in range(0, len(unique), batch_size):
        batch = [_params(r, stamp) for r in unique[start : start + batch_size]]
        for revision in write(conn, batch):
            if revision == 1:
                inserted += 1
            else:
                updated += 1
    return UpsertSummary(inserted, updated, len(records) - inserted - updated)


def _generic_batch(conn: Connection, batch: list[dict[str, Any]]) -> list[int]:
    return [row.revision for row in conn.execute(_upsert_statement(conn.dialect.name), batch)]


_COLUMNS = (
    "workspace_id",
    "source",
    "source_type",
    "source_key",
    "occurred_at",
    "source_updated_at",
    "observed_at",
    "actor_id",
    "actor_display_name",
    "content",
    "content_hash",
    "metadata_json",
    "scope_key",
    "ai_eligible",
    "deleted",
    "revision",
    "updated_at",
)


@cache
def _pg_batch_sql(dialect: Dialect) -> tuple[str, dict[str, Any]]:
    compiled = _upsert_statement("postgresql").compile(dialect=dialect, column_keys=list(_COLUMNS))
    constants = {k: v for k, v in compiled.params.items() if k not in _COLUMNS}
    return str(compiled), constants


def _pg_batch(conn: Connection, batch: list[dict[str, Any]]) -> list[int]:
    """psycopg's pipelined executemany of the one-row upsert, in the caller's transaction.

    SQLAlchemy would send one multi-row VALUES statement; psycopg does not cache the
    conversion of statements with that many parameters, which made a page of 500 rows cost
    more on the client than in the database (about 2,400 rows/s here). Pipelined single-row
    statements keep RETURNING per row and run at executemany speed.
    """
    sql, constants = _pg_batch_sql(conn.dialect)
    rows = [
        {**params, **constants, "metadata_json": json.dumps(params["metadata_json"])}
        for params in batch
    ]
    revisions: list[int] = []
    raw = conn.connection.driver_connection
    assert raw is not None
    with raw.cursor() as cursor:
        cursor.executemany(sql, rows, returning=True)
        while True:
            revisions.extend(revision for _key, revision in cursor.fetchall())
            if not cursor.nextset():
                break
    return revisions


def _outcome(row: Row[Any] | None) -> UpsertOutcome:
    if row is None:
        return UpsertOutcome.DUPLICATE
    return UpsertOutcome.INSERTED if row.revision == 1 else UpsertOutcome.UPDATED


def _to_row(row: Row[Any]) -> EvidenceRow:
    return record_of(
        EvidenceRow,
        row,
        metadata=json_object(row.metadata_json),
        ai_eligible=bool(row.ai_eligible),
        deleted=bool(row.deleted),
        held_content=row.held_content_json is not None,
    )


def _keyset_page(
    conn: Connection, stmt: Select[Any], after: EvidenceCursor | None, limit: int
) -> list[EvidenceRow]:
    """One page of `stmt` in (occurred_at, id) order after `after`: every evidence listing
    pages by this keyset, never by offset (docs/design.md §4)."""
    if after is not None:
        stmt = stmt.where(tuple_(ev.c.occurred_at, ev.c.id) > tuple_(after.occurred_at, after.id))
    return records(conn, stmt.order_by(ev.c.occurred_at, ev.c.id).limit(limit), _to_row)


def get_by_key(
    conn: Connection, workspace_id: str, source: str, source_type: str, source_key: str
) -> EvidenceRow | None:
    row = by_source_key(conn, ev, workspace_id, source, source_type, source_key)
    return _to_row(row) if row else None


def get_many(conn: Connection, workspace_id: str, ids: Sequence[int]) -> list[EvidenceRow]:
    if not ids:
        return []
    return records(
        conn,
        select(ev)
        .where(ev.c.workspace_id == workspace_id, ev.c.id.in_(list(ids)))
        .order_by(ev.c.occurred_at, ev.c.id),
        _to_row,
    )


def page(
    conn: Connection,
    workspace_id: str,
    *,
    source: str | None = None,
    source_type: str | None = None,
    after: EvidenceCursor | None = None,
    limit: int = 100,
) -> list[EvidenceRow]:
    """Keyset page ordered by (occurred_at, id): stable under equal timestamps and inserts."""
    stmt = select(ev).where(ev.c.workspace_id == workspace_id)
    if source is not None:
        stmt = stmt.where(ev.c.source == source)
    if source_type is not None:
        stmt = stmt.where(ev.c.source_type == source_type)
    return _keyset_page(conn, stmt, after, limit)


def _chat_range(
    workspace_id: str, scope_key: str, start: datetime, end: datetime, *, eligible_only: bool = True
) -> list[ColumnElement[bool]]:
    """One chat's evidence in [start, end), by default only what synthesis may read: the window
    listings and their counts must agree on which rows a window holds (docs/design.md §4, §7)."""
    conditions: list[ColumnElement[bool]] = [
        ev.c.workspace_id == workspace_id,
        ev.c.scope_key == scope_key,
        ev.c.occurred_at >= start,
        ev.c.occurred_at < end,
    ]
    if eligible_only:
        conditions += [ev.c.ai_eligible == true(), ev.c.deleted == false()]
    return conditions


def scope_range(
    conn: Connection,
    workspace_id: str,
    scope_key: str,
    start: datetime,
    end: datetime,
    *,
    after: EvidenceCursor | None = None,
    limit: int = 1000,
    ai_eligible_only: bool = True,
) -> list[EvidenceRow]:
    """Evidence of one chat in [start, end), in (occurred_at, id) order, by keyset."""
    stmt = select(ev).where(
        *_chat_range(workspace_id, scope_key, start, end, eligible_only=ai_eligible_only)
    )
    return _keyset_page(conn, stmt, after, limit)


def scope_nearest_before(
    conn: Connection,
    workspace_id: str,
    scope_key: str,
    start: datetime,
    end: datetime,
    *,
    limit: int,
) -> list[EvidenceRow]:
    """The `limit` eligible rows of one chat in [start, end) nearest to `end`, in time order.

    Read-only context for a window is the talk just before it: in a busy chat the lookback
    holds more rows than the prompt takes, and the ones to keep are the latest, not the first.
    One descending seek of the (workspace_id, scope_key, occurred_at, id) index, reversed.
    """
    if limit < 1:
        return []
    stmt = (
        select(ev)
        .where(*_chat_range(workspace_id, scope_key, start, end))
        .order_by(ev.c.occurred_at.desc(), ev.c.id.desc())
        .limit(limit)
    )
    rows = [_to_row(r) for r in conn.execute(stmt)]
    rows.reverse()
    return rows


def fill_display_names(conn: Connection, workspace_id: str, names: dict[str, str]) -> int:
    """Fill missing display names for actors resolved by the batched contact lookup.

    Actors are written in id order, whatever order the lookup answered in, so that two fills
    of one workspace lock its rows in the same order (see `_latest_per_key`)."""
    total = 0
    for actor_id, name in sorted(names.items()):
        result = conn.execute(
            ev.update()
            .where(
                ev.c.workspace_id == workspace_id,
                ev.c.actor_id == actor_id,
                ev.c.actor_display_name.is_(None),
            )
            .values(actor_display_name=name)
        )
        total += result.rowcount
    return total


# --- window discovery (docs/design.md §6): reads bounded by new ids or by one index seek ---


def eligible_since(
    conn: Connection, after_id: int, upto_id: int
) -> list[tuple[str, str, datetime]]:
    """(workspace_id, scope_key, occurred_at) of eligible rows with id in (after_id, upto_id].

    A primary-key range: what discovery reads to learn which windows got new evidence, at a
    cost that follows the new rows, never the stored history.
    """
    if upto_id <= after_id:
        return []
    rows = conn.execute(
        select(ev.c.workspace_id, ev.c.scope_key, ev.c.occurred_at).where(
            ev.c.id > after_id,
            ev.c.id <= upto_id,
            ev.c.scope_key.is_not(None),
            ev.c.ai_eligible == true(),
            ev.c.deleted == false(),
        )
    )
    return [(r.workspace_id, r.scope_key, r.occurred_at) for r in rows]


def first_eligible_at_or_after(
    conn: Connection, workspace_id: str, scope_key: str, at: datetime
) -> datetime | None:
    """The time of the chat's first eligible row at or after `at`: one seek of the
    (workspace_id, scope_key, occurred_at, id) index, so discovery can step from one non-empty
    window to the next without reading the messages in between."""
    row = conn.execute(
        _first_eligible_statement(),
        {"workspace_id": workspace_id, "scope_key": scope_key, "at": at},
    ).first()
    return row.occurred_at if row else None


@cache
def _first_eligible_statement() -> Select[Any]:
    # Built once: discovery runs this once per uncovered window, and building the expression
    # costs more than the index seek itself.
    return (
        select(ev.c.occurred_at)
        .where(
            ev.c.workspace_id == bindparam("workspace_id"),
            ev.c.scope_key == bindparam("scope_key"),
            ev.c.occurred_at >= bindparam("at", type_=ev.c.occurred_at.type),
            ev.c.ai_eligible == true(),
            ev.c.deleted == false(),
        )
        .order_by(ev.c.occurred_at, ev.c.id)
        .limit(1)
    )


def existing_evidence_ids(conn: Connection, workspace_id: str, ids: Sequence[int]) -> set[int]:
    if not ids:
        return set()
    rows = conn.execute(
        select(ev.c.id).where(ev.c.workspace_id == workspace_id, ev.c.id.in_(sorted(set(ids))))
    )
    return {row.id for row in rows}


def thread_first_seen(
    conn: Connection, workspace_id: str, chat_id: str, since: datetime
) -> dict[str, datetime]:
    """Every thread with evidence at or after `since`, with its earliest such message.

    A thread whose root is older than the range never shows up in the range's chat listing
    (Lark lists thread roots only), so the threads to list come from our own evidence. One
    index range of the chat over the ingestion lookback.
    """
    thread_id = ev.c.metadata_json["thread_id"].as_string()
    rows = conn.execute(
        select(thread_id.label("thread_id"), func.min(ev.c.occurred_at).label("first"))
        .where(
            ev.c.workspace_id == workspace_id,
            ev.c.scope_key == chat_id,
            ev.c.source == SOURCE_LARK,
            ev.c.source_type == SOURCE_TYPE_LARK_MESSAGE,
            ev.c.occurred_at >= since,
            thread_id.is_not(None),
        )
        .group_by(thread_id)
    )
    return {row.thread_id: row.first for row in rows if row.thread_id}


def unnamed_actors(conn: Connection, workspace_id: str, *, limit: int) -> list[str]:
    """Distinct actors of the workspace whose rows still lack a display name."""
    rows = conn.execute(
        select(ev.c.actor_id)
        .where(
            ev.c.workspace_id == workspace_id,
            ev.c.actor_id.is_not(None),
            ev.c.actor_display_name.is_(None),
        )
        .group_by(ev.c.actor_id)
        .order_by(ev.c.actor_id)
        .limit(limit)
    )
    return [row.actor_id for row in rows]


# --- correlated fragments for the statements of other stores ---------------------------------


def latest_eligible_at(
    workspace_id: ColumnElement[Any], scope_key: ColumnElement[Any]
) -> ScalarSelect[Any]:
    """The newest eligible, not redacted evidence time of the chat (`workspace_id`,
    `scope_key`) of the enclosing statement: one backward seek of the (workspace_id,
    scope_key, occurred_at, id) index."""
    return (
        select(ev.c.occurred_at)
        .where(
            ev.c.workspace_id == workspace_id,
            ev.c.scope_key == scope_key,
            ev.c.ai_eligible == true(),
            ev.c.deleted == false(),
        )
        .order_by(ev.c.occurred_at.desc())
        .limit(1)
        .scalar_subquery()
    )


LANGUAGE_SAMPLE_CHARS = 200
"""A message's script shows in its first characters: the sample reads no more of each, so that
a page or card answer that resolves an `auto` locale reads a bounded few kilobytes."""


def language_sample(conn: Connection, workspace_id: str, *, limit: int) -> list[str]:
    """The texts of the workspace's first `limit` eligible, not redacted messages: what an
    `auto` locale reads the chat's majority script from (docs/i18n.md). The first ones, not the
    newest, so that a workspace's language settles once its chat has that many messages.
    Read in memory only, never logged."""
    rows = conn.execute(
        select(func.substr(ev.c.content, 1, LANGUAGE_SAMPLE_CHARS))
        .where(
            ev.c.workspace_id == workspace_id, ev.c.ai_eligible == true(), ev.c.deleted == false()
        )
        .order_by(ev.c.occurred_at, ev.c.id)
        .limit(limit)
    )
    return [str(content) for (content,) in rows]


def opening_messages(
    conn: Connection, workspace_id: str, *, limit: int
) -> list[tuple[datetime, bool, str]]:
    """(time, sent by an app, the first `LANGUAGE_SAMPLE_CHARS` characters) of the workspace's
    first `limit` not redacted messages: where the report finds the incident's first message
    and its first alert (docs/report.md, "Milestones"). Read in memory only, never logged."""
    rows = conn.execute(
        select(
            ev.c.occurred_at,
            ev.c.metadata_json,
            func.substr(ev.c.content, 1, LANGUAGE_SAMPLE_CHARS),
        )
        .where(ev.c.workspace_id == workspace_id, ev.c.deleted == false())
        .order_by(ev.c.occurred_at, ev.c.id)
        .limit(limit)
    )
    return [
        (at, (meta or {}).get("sender_type") == "app", str(text or "")) for at, meta, text in rows
    ]


def first_eligible_at(
    workspace_id: ColumnElement[Any],
    scope_key: ColumnElement[Any],
    *,
    at_or_after: ColumnElement[Any],
    before: ColumnElement[Any] | None = None,
) -> ScalarSelect[Any]:
    """The first eligible, not redacted evidence time of the chat of the enclosing statement
    from `at_or_after` (and before `before`): one forward seek of the same index."""
    conditions = [
        ev.c.workspace_id == workspace_id,
        ev.c.scope_key == scope_key,
        ev.c.occurred_at >= at_or_after,
    ]
    if before is not None:
        conditions.append(ev.c.occurred_at < before)
    return (
        select(ev.c.occurred_at)
        .where(*conditions, ev.c.ai_eligible == true(), ev.c.deleted == false())
        .order_by(ev.c.occurred_at, ev.c.id)
        .limit(1)
        .scalar_subquery()
    )


def occurred_at_param(name: str, value: datetime) -> ColumnElement[Any]:
    """A bound parameter typed like `occurred_at` (a timezone-aware time on every dialect)."""
    return bindparam(name, value, type_=ev.c.occurred_at.type)


# --- maintenance processors (docs/maintenance.md): id keyset pages and batch rewrites ---


def id_page(
    conn: Connection,
    workspace_id: str,
    *,
    after_id: int,
    limit: int,
    source_type: str | None = None,
    deleted: bool | None = None,
) -> list[EvidenceRow]:
    """A workspace's rows with id > `after_id`, in id order: one range of the (workspace_id, id)
    index, never an OFFSET, so each page costs the same however far the scan has come."""
    stmt = select(ev).where(ev.c.workspace_id == workspace_id, ev.c.id > after_id)
    if source_type is not None:
        stmt = stmt.where(ev.c.source_type == source_type)
    if deleted is not None:
        stmt = stmt.where(ev.c.deleted == (true() if deleted else false()))
    return records(conn, stmt.order_by(ev.c.id).limit(limit), _to_row)


def hash_input_page(
    conn: Connection, workspace_id: str, *, after_id: int, limit: int, source_type: str
) -> list[HashInput]:
    """`id_page` narrowed to the columns a content hash depends on: a backfill reads every row
    of the workspace, and the other columns would only be decoded to be dropped."""
    rows = conn.execute(
        select(ev.c.id, ev.c.content, ev.c.content_hash, ev.c.metadata_json, ev.c.deleted)
        .where(
            ev.c.workspace_id == workspace_id,
            ev.c.id > after_id,
            ev.c.source_type == source_type,
        )
        .order_by(ev.c.id)
        .limit(limit)
    ).all()
    return [
        HashInput(r.id, r.content, r.content_hash, dict(r.metadata_json or {}), bool(r.deleted))
        for r in rows
    ]


@cache
def _rehash_statement() -> Any:
    return (
        ev.update()
        .where(ev.c.id == bindparam("row_id"), ev.c.content_hash == bindparam("old_hash"))
        .values(content_hash=bindparam("new_hash"), updated_at=bindparam("now"))
    )


_PG_REHASH = text(
    "UPDATE workspace_timeline_evidence AS ev SET content_hash = v.new_hash, updated_at = :now "
    "FROM unnest(CAST(:ids AS bigint[]), CAST(:old AS text[]), CAST(:new AS text[])) "
    "AS v(id, old_hash, new_hash) WHERE ev.id = v.id AND ev.content_hash = v.old_hash"
).bindparams(bindparam("now", type_=ev.c.updated_at.type))


def replace_content_hashes(
    conn: Connection, changes: Sequence[tuple[int, str, str]], *, now: datetime
) -> int:
    """Set each row's hash from `old` to `new`, only where it still holds `old` (a concurrent
    write already moved it otherwise); the number of rows changed. One statement on PostgreSQL
    (arrays unnested into a join), a prepared executemany on SQLite."""
    if not changes:
        return 0
    if conn.dialect.name == "postgresql":
        ids, old, new = (list(column) for column in zip(*changes, strict=True))
        result = conn.execute(_PG_REHASH, {"ids": ids, "old": old, "new": new, "now": now})
        return int(result.rowcount)
    result = conn.execute(
        _rehash_statement(),
        [{"row_id": i, "old_hash": old, "new_hash": new, "now": now} for i, old, new in changes],
    )
    return int(result.rowcount)


@cache
def _redact_statement() -> Any:
    return (
        ev.update()
        .where(ev.c.id == bindparam("row_id"), ev.c.revision == bindparam("expected_revision"))
        .values(
            content=bindparam("new_content"),
            content_hash=bindparam("new_hash"),
            metadata_json=bindparam("new_metadata", type_=ev.c.metadata_json.type),
            source_updated_at=bindparam("new_updated", type_=ev.c.source_updated_at.type),
            deleted=true(),
            ai_eligible=false(),
            held_content_json=None,
            revision=ev.c.revision + 1,
            updated_at=bindparam("now", type_=ev.c.updated_at.type),
        )
    )


def redact_rows(
    conn: Connection,
    rows: Sequence[EvidenceRecord],
    ids: Sequence[tuple[int, int]],
    *,
    now: datetime,
) -> int:
    """Overwrite rows with their redacted records, each only if still at the revision it was
    read at (`ids` holds (id, revision) pairs, parallel to `rows`); the number changed."""
    if not rows:
        return 0
    result = conn.execute(
        _redact_statement(),
        [
            {
                "row_id": row_id,
                "expected_revision": revision,
                "new_content": record.content,
                "new_hash": record.content_hash,
                "new_metadata": record.metadata,
                "new_updated": record.source_updated_at,
                "now": now,
            }
            for record, (row_id, revision) in zip(rows, ids, strict=True)
        ],
    )
    return int(result.rowcount)


def count_eligible_in(
    conn: Connection, workspace_id: str, scope_key: str, start: datetime, end: datetime
) -> int:
    """Eligible rows of one chat in [start, end): one range of the scope index."""
    return int(
        conn.execute(
            select(func.count())
            .select_from(ev)
            .where(*_chat_range(workspace_id, scope_key, start, end))
        ).scalar_one()
    )


# --- lifecycle -------------------------------------------------------------------------------

REDACTED_CONTENT_HASH = hashlib.sha256(b"").hexdigest()
_IDENTITY_KEYS = ("chat_id", "thread_id", "root_id", "parent_id", "message_type")


def redact_recalled(
    conn: Connection, *, workspace_id: str | None, skip_workspaces: Sequence[str], limit: int
) -> list[str]:
    """Redact in place up to `limit` rows that still carry something of what was said: recalled
    rows with content in their columns (recalled before the policy applied at ingest), and any
    row with versions a legal hold set aside (`held_content_json`, dropped once no hold reaches
    the workspace: a recalled row's content, or the versions an edit under the hold replaced).
    They keep their identity. Rows of `skip_workspaces` (under legal hold) are left as they
    are. Returns the workspace of each row redacted."""
    # A live row a hold kept earlier versions of (an edit under the hold) only drops them.
    stmt = select(ev.c.id, ev.c.workspace_id, ev.c.metadata_json, ev.c.content, ev.c.deleted).where(
        or_(
            and_(ev.c.deleted == true(), ev.c.content != ""),
            ev.c.held_content_json.is_not(None),
        )
    )
    if workspace_id is not None:
        stmt = stmt.where(ev.c.workspace_id == workspace_id)
    if skip_workspaces:
        stmt = stmt.where(ev.c.workspace_id.not_in(list(skip_workspaces)))
    rows = conn.execute(stmt.order_by(ev.c.id).limit(limit)).all()
    now = datetime.now(UTC)
    for row in rows:
        values: dict[str, Any] = {"held_content_json": None, "updated_at": now}
        if row.deleted and row.content:
            metadata = dict(row.metadata_json or {})
            kept = {key: metadata.get(key) for key in _IDENTITY_KEYS}
            kept.update(deleted=True, recalled_at=metadata.get("recalled_at"))
            values.update(
                content="",
                content_hash=REDACTED_CONTENT_HASH,
                metadata_json=kept,
                ai_eligible=False,
                revision=ev.c.revision + 1,
            )
        conn.execute(ev.update().where(ev.c.id == row.id).values(**values))
    return [row.workspace_id for row in rows]


def set_aside_for_hold(
    conn: Connection, workspace_id: str, source_keys: Iterable[tuple[str, str, str]]
) -> int:
    """Before a recall redacts rows of a held workspace: set each live row's content, hash and
    metadata aside in `held_content_json` (docs/lifecycle.md), on top of any version an edit
    under the hold kept before, where no read of this module returns it; `source_keys` are
    (source, source_type, source_key). The number of rows set aside."""
    total = 0
    for source, source_type, source_key in source_keys:
        key = (workspace_id, source, source_type, source_key)
        while True:
            stored = _stored_version(conn, key)
            if stored is None or stored[1].deleted:
                break
            if _keep_version(conn, *stored):
                total += 1
                break
    return total


def upsert_keeping_versions(
    conn: Connection, records: Sequence[EvidenceRecord], *, now: datetime | None = None
) -> UpsertSummary:
    """`upsert_many` for a workspace under a legal hold: each row a record would replace (an
    edit, or a recall) has its stored version set aside first, on top of the versions kept
    before (`domain.held_versions`), in the caller's transaction, so no version the hold
    reaches is ever lost (docs/lifecycle.md, "What a hold does to an edit"). Row by row, in
    the batch's key order (`_latest_per_key`): the set-aside and the upsert of one row lock it
    before the next, in the order every writer locks rows."""
    stamp = now or datetime.now(UTC)
    inserted = updated = 0
    for record in _latest_per_key(records):
        key = (record.workspace_id, record.source, record.source_type, record.source_key)
        while True:
            stored = _stored_version(conn, key)
            if stored is None or not held_versions.replaces(
                stored[1],
                content_hash=record.content_hash,
                source_updated_at=record.source_updated_at,
                deleted=record.deleted,
            ):
                break
            if _keep_version(conn, *stored):
                break
        outcome = upsert(conn, record, now=stamp)
        inserted += int(outcome is UpsertOutcome.INSERTED)
        updated += int(outcome is UpsertOutcome.UPDATED)
    return UpsertSummary(inserted, updated, len(records) - inserted - updated)


def _stored_version(
    conn: Connection, key: tuple[str, str, str, str]
) -> tuple[Any, held_versions.StoredVersion] | None:
    workspace_id, source, source_type, source_key = key
    row = conn.execute(
        select(
            ev.c.id,
            ev.c.revision,
            ev.c.content,
            ev.c.content_hash,
            ev.c.metadata_json,
            ev.c.source_updated_at,
            ev.c.deleted,
            ev.c.held_content_json,
        ).where(
            ev.c.workspace_id == workspace_id,
            ev.c.source == source,
            ev.c.source_type == source_type,
            ev.c.source_key == source_key,
        )
    ).first()
    if row is None:
        return None
    stored = held_versions.StoredVersion(
        revision=int(row.revision),
        content=row.content,
        content_hash=row.content_hash,
        metadata=dict(row.metadata_json or {}),
        source_updated_at=row.source_updated_at,
        deleted=bool(row.deleted),
    )
    return row, stored


def _keep_version(conn: Connection, row: Any, stored: held_versions.StoredVersion) -> bool:
    """Set `stored` aside, only if the row is still at the revision it was read at (a
    compare-and-set: on PostgreSQL the update also locks the row until the caller commits, so
    the write that follows replaces exactly this version). False: another writer moved the row
    first; read it again."""
    held = None if row.held_content_json is None else dict(row.held_content_json)
    if held_versions.already_kept(held, stored):
        return True
    kept = held_versions.keep(held, stored)
    changed = conn.execute(
        ev.update()
        .where(ev.c.id == row.id, ev.c.revision == stored.revision)
        .values(held_content_json=kept)
    ).rowcount
    return bool(changed)


def held_versions_of(conn: Connection, workspace_id: str, evidence_id: int) -> list[dict[str, Any]]:
    """Every version a hold set aside for one row, oldest first (for the hold's own review and
    tests; no view reads it)."""
    return held_versions.versions(held_content(conn, workspace_id, evidence_id))


def held_content(conn: Connection, workspace_id: str, evidence_id: int) -> dict[str, Any] | None:
    """What a hold set aside for one row (for the hold's own review and tests; no view reads
    it)."""
    row = conn.execute(
        select(ev.c.held_content_json).where(
            ev.c.workspace_id == workspace_id, ev.c.id == evidence_id
        )
    ).first()
    return None if row is None or row.held_content_json is None else dict(row.held_content_json)


DESCRIPTOR = declare(
    __name__,
    "workspace_timeline_evidence",
    RetentionClass.COMMUNICATION_LOG,
    cursor_column="occurred_at",
    default_days=30,
    max_days=365,
    archive=archive_on_request("Chat evidence"),
    chain="timeline",
    children=(ChildLink("entries.workspace_timeline_entry_evidence", "evidence_id"),),
    redacts_recalled=True,
    notes=(
        "Raw chat messages: short retention by default (docs/lifecycle.md, Retention). Evidence "
        "that supports an entry stays while the entry does (the chain ages as a whole)."
    ),
)

CONTENT = declare_content(
    __name__,
    "workspace_timeline_evidence",
    text_columns=("content", "metadata_json", "held_content_json"),
    tie=Tie.EVIDENCE,
    on_recall=OnRecall.REDACT,
    notes="The message itself: the recall redacts it (`ingest/recall.py`); under a hold its "
    "content is set aside in `held_content_json` until the release.",
)
