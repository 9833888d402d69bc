"""Evidence store, docs/design.md §3, §4, §1 (repository tests), on SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import asdict, replace
from datetime import timedelta

from sqlalchemy import Engine, func, select

from timeline_pipeline.db.schema import workspace_timeline_evidence
from timeline_pipeline.domain.evidence import EvidenceCursor, UpsertOutcome, UpsertSummary
from timeline_pipeline.domain.keys import SOURCE_LARK, SOURCE_TYPE_LARK_MESSAGE
from timeline_pipeline.store import evidence
from timeline_pipeline_tests.store.factories import T0, edited, make_workspace, message
from timeline_pipeline_tests.support.windows import WINDOW


def _count(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(
            conn.execute(select(func.count()).select_from(workspace_timeline_evidence)).scalar_one()
        )


def _stored(engine: Engine, key: str = "chat/oc_chat/message/om_1") -> evidence.EvidenceRow:
    with engine.connect() as conn:
        row = evidence.get_by_key(conn, "inc-1", SOURCE_LARK, SOURCE_TYPE_LARK_MESSAGE, key)
    assert row is not None
    return row


def test_first_delivery_inserts_and_a_duplicate_changes_nothing(engine: Engine) -> None:
    make_workspace(engine)
    with engine.begin() as conn:
        assert evidence.upsert(conn, message()) is UpsertOutcome.INSERTED
    before = _stored(engine)
    with engine.begin() as conn:
        assert evidence.upsert(conn, message()) is UpsertOutcome.DUPLICATE
    after = _stored(engine)
    assert _count(engine) == 1
    assert after == before


def test_an_edit_replaces_content_hash_and_update_time_keeping_identity(engine: Engine) -> None:
    make_workspace(engine)
    original = message("db primary is down")
    with engine.begin() as conn:
        evidence.upsert(conn, original)
    first = _stored(engine)
    with engine.begin() as conn:
        assert (
            evidence.upsert(conn, edited(original, "db primary and replica are down"))
            is UpsertOutcome.UPDATED
        )
    second = _stored(engine)
    assert second.id == first.id
    assert second.content == "db primary and replica are down"
    assert second.content_hash != first.content_hash
    assert second.source_updated_at == first.source_updated_at + timedelta(minutes=1)
    assert second.occurred_at == first.occurred_at
    assert second.observed_at == first.observed_at


def test_an_older_version_arriving_late_does_not_roll_an_edit_back(engine: Engine) -> None:
    make_workspace(engine)
    original = message("v1")
    with engine.begin() as conn:
        evidence.upsert(conn, edited(original, "v2"))
        assert evidence.upsert(conn, original) is UpsertOutcome.DUPLICATE
    assert _stored(engine).content == "v2"


def test_a_recall_redacts_in_place_and_is_final(engine: Engine) -> None:
    make_workspace(engine)
    original = message("customer card numbers pasted here")
    with engine.begin() as conn:
        evidence.upsert(conn, original)
    first = _stored(engine)
    redaction = message(deleted=True, updated=T0 + timedelta(minutes=2))
    with engine.begin() as conn:
        assert evidence.upsert(conn, redaction) is UpsertOutcome.UPDATED
        # a stale copy of the original (e.g. a redelivered event) cannot resurrect the text
        assert (
            evidence.upsert(conn, edited(original, "resurrected", timedelta(hours=1)))
            is UpsertOutcome.DUPLICATE
        )
    row = _stored(engine)
    assert row.id == first.id
    assert row.content == ""
    assert row.deleted is True
    assert row.ai_eligible is False
    assert row.metadata["deleted"] is True
    assert row.content_hash != first.content_hash


def test_same_message_in_two_workspaces_is_two_rows(engine: Engine) -> None:
    make_workspace(engine, "inc-1")
    make_workspace(engine, "inc-2")
    with engine.begin() as conn:
        assert evidence.upsert(conn, message(workspace_id="inc-1")) is UpsertOutcome.INSERTED
        assert evidence.upsert(conn, message(workspace_id="inc-2")) is UpsertOutcome.INSERTED
    assert _count(engine) == 2


def test_batch_upsert_counts_inserts_updates_and_duplicates(engine: Engine) -> None:
    make_workspace(engine)
    with engine.begin() as conn:
        evidence.upsert(conn, message("a", message_id="om_1"))
        evidence.upsert(conn, message("b", message_id="om_2"))
    page = [
        message("a", message_id="om_1"),  # duplicate
        edited(message("b", message_id="om_2"), "b edited"),  # update
        message("c", message_id="om_3"),  # insert
        message("c", message_id="om_3"),  # duplicate inside the page itself
        message("d", message_id="om_4"),  # insert
    ]
    with engine.begin() as conn:
        summary = evidence.upsert_many(conn, page, batch_size=2)
    assert summary == UpsertSummary(inserted=2, updated=1, duplicate=2)
    assert _count(engine) == 4
    assert _stored(engine, "chat/oc_chat/message/om_2").content == "b edited"


def test_batch_keeps_the_newest_version_of_a_message_repeated_in_one_page(engine: Engine) -> None:
    make_workspace(engine)
    v1 = message("v1")
    v2 = edited(v1, "v2")
    with engine.begin() as conn:
        evidence.upsert_many(conn, [v2, v1])
    assert _stored(engine).content == "v2"


def test_a_failed_batch_writes_nothing(engine: Engine) -> None:
    make_workspace(engine)
    good = message("ok", message_id="om_1")
    orphan = replace(message("no workspace", message_id="om_2"), workspace_id="missing")
    try:
        with engine.begin() as conn:
            evidence.upsert_many(conn, [good, orphan])
    except Exception as exc:  # the foreign key refuses the orphan
        assert "foreign" in str(exc).lower() or "constraint" in str(exc).lower()
    else:
        raise AssertionError("an orphan row was accepted")
    assert _count(engine) == 0


def test_keyset_pages_are_complete_and_stable_with_equal_timestamps(engine: Engine) -> None:
    make_workspace(engine)
    with engine.begin() as conn:
        for i in range(25):
            # five distinct timestamps, five rows each: ties broken by id
            evidence.upsert(
                conn, message(f"m{i}", message_id=f"om_{i:02d}", at=T0 + timedelta(seconds=i // 5))
            )
    seen: list[int] = []
    cursor = None
    pages = 0
    while True:
        with engine.connect() as conn:
            rows = evidence.page(conn, "inc-1", after=cursor, limit=4)
        if not rows:
            break
        pages += 1
        seen.extend(r.id for r in rows)
        cursor = EvidenceCursor(rows[-1].occurred_at, rows[-1].id)
    assert pages == 7
    assert len(seen) == 25 == len(set(seen))
    with engine.connect() as conn:
        ordered = [(r.occurred_at, r.id) for r in evidence.page(conn, "inc-1", limit=100)]
    assert ordered == sorted(ordered)
    assert [i for _, i in ordered] == seen


def test_scope_range_returns_only_eligible_evidence_of_the_chat_in_the_window(
    engine: Engine,
) -> None:
    make_workspace(engine)
    with engine.begin() as conn:
        evidence.upsert(conn, message("in", message_id="om_1", at=T0 + timedelta(minutes=1)))
        evidence.upsert(
            conn, message("bot", message_id="om_2", at=T0 + timedelta(minutes=2), ai_eligible=False)
        )
        evidence.upsert(conn, message("other chat", chat_id="oc_other", message_id="om_3", at=T0))
        evidence.upsert(conn, message("next window", message_id="om_4", at=T0 + WINDOW))
        evidence.upsert(
            conn, message("x", message_id="om_5", at=T0 + timedelta(minutes=3), deleted=True)
        )
    with engine.connect() as conn:
        rows = evidence.scope_range(conn, "inc-1", "oc_chat", T0, T0 + WINDOW)
    assert [r.content for r in rows] == ["in"]


def test_the_nearest_rows_before_a_window_are_read_latest_first_and_returned_in_time_order(
    engine: Engine,
) -> None:
    # A busy lookback: more rows than the limit. Context is the talk just before the window,
    # so the rows kept are the latest ones; the bot message, the redacted one and the other
    # chat's never count against the limit.
    make_workspace(engine)
    start, end = T0, T0 + timedelta(minutes=5)
    with engine.begin() as conn:
        for n in range(12):
            at = start + timedelta(seconds=20 * n)
            evidence.upsert(conn, message(f"m{n}", message_id=f"om_{n:02d}", at=at))
        late = end - timedelta(seconds=1)
        evidence.upsert(conn, message("bot", message_id="om_bot", at=late, ai_eligible=False))
        evidence.upsert(conn, message("x", message_id="om_gone", at=late, deleted=True))
        evidence.upsert(conn, message("o", chat_id="oc_other", message_id="om_o", at=late))
        evidence.upsert(conn, message("in the window", message_id="om_in", at=end))
    with engine.connect() as conn:
        rows = evidence.scope_nearest_before(conn, "inc-1", "oc_chat", start, end, limit=4)
        none = evidence.scope_nearest_before(conn, "inc-1", "oc_chat", start, end, limit=0)
    assert [r.content for r in rows] == ["m8", "m9", "m10", "m11"]
    assert none == []


def test_microseconds_survive_the_round_trip(engine: Engine) -> None:
    make_workspace(engine)
    at = T0 + timedelta(microseconds=123456)
    with engine.begin() as conn:
        evidence.upsert(conn, message(at=at))
    row = _stored(engine)
    assert row.occurred_at == at
    assert row.occurred_at.utcoffset() == timedelta(0)


def test_display_names_fill_in_later_without_touching_content(engine: Engine) -> None:
    make_workspace(engine)
    with engine.begin() as conn:
        evidence.upsert(conn, message())
        assert evidence.fill_display_names(conn, "inc-1", {"ou_alice": "Alice"}) == 1
        assert evidence.fill_display_names(conn, "inc-1", {"ou_alice": "Someone else"}) == 0
    row = _stored(engine)
    assert row.actor_display_name == "Alice"
    assert row.revision == 1


def test_a_batch_stores_every_column_exactly_as_single_upserts_do(engine: Engine) -> None:
    """NULLs, JSON metadata with nesting and non-ASCII text, a tombstone, a later edit and a
    repeated redaction: the batch path and the one-row path leave identical rows."""
    make_workspace(engine, "inc-1")
    make_workspace(engine, "inc-2")
    unicode_text = '回滚 rollback ✅ "quoted" \\ back'
    records = [
        replace(message(unicode_text, message_id="om_1"), actor_id=None),
        replace(
            message("named", message_id="om_2"),
            actor_display_name="Alice Ng",
            metadata={"mention_open_ids": ["ou_b"], "nested": {"k": [1, None, "ü"]}},
        ),
        message(message_id="om_3", deleted=True),
        message("plain", message_id="om_4", ai_eligible=False),
    ]
    later = [
        edited(records[1], "named, edited"),
        message(message_id="om_4", deleted=True),  # a redaction wins
        records[2],  # the tombstone again: a duplicate
    ]
    now = T0 + timedelta(hours=1)
    for step, stamp in ((records, now), (later, now + timedelta(minutes=5))):
        with engine.begin() as conn:
            evidence.upsert_many(conn, step, now=stamp)
        with engine.begin() as conn:
            for record in step:
                evidence.upsert(conn, replace(record, workspace_id="inc-2"), now=stamp)

    def rows(workspace_id: str) -> list[dict[str, object]]:
        with engine.connect() as conn:
            page = evidence.page(conn, workspace_id, limit=100)
        drop = ("id", "workspace_id")
        return [{k: v for k, v in asdict(row).items() if k not in drop} for row in page]

    batched, single = rows("inc-1"), rows("inc-2")
    assert len(batched) == 4
    assert batched == single
    by_key = {row["source_key"]: row for row in batched}
    assert by_key["chat/oc_chat/message/om_1"]["content"] == unicode_text
    assert by_key["chat/oc_chat/message/om_1"]["actor_id"] is None
    assert by_key["chat/oc_chat/message/om_2"]["metadata"] == {
        "mention_open_ids": ["ou_b"],
        "nested": {"k": [1, None, "ü"]},
    }
    assert by_key["chat/oc_chat/message/om_2"]["revision"] == 2
    assert by_key["chat/oc_chat/message/om_4"]["deleted"] is True
