"""Timeline entries and evidence bindings (docs/design.md §7, §11), on both databases."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, delete
from sqlalchemy.exc import IntegrityError

from timeline_pipeline.db.schema import workspace_timeline_entry_evidence as bindings
from timeline_pipeline.db.schema import workspace_timeline_evidence as ev
from timeline_pipeline.domain import entries as domain_entries
from timeline_pipeline.domain.entries import DraftWrite, EntryRow, EvidenceRef
from timeline_pipeline.store import entries, evidence
from timeline_pipeline.store.entries import ForeignEvidence
from timeline_pipeline.synthesis_run import draft_matching, draft_writes
from timeline_pipeline.synthesis_run.draft_matching import DraftOutcome, plan_draft_write
from timeline_pipeline_tests.store.factories import T0, make_workspace, message


def _evidence(engine: Engine, count: int, workspace_id: str = "inc-1") -> list[EvidenceRef]:
    refs: list[EvidenceRef] = []
    with engine.begin() as conn:
        for i in range(count):
            record = message(
                f"fact {i}", workspace_id=workspace_id, message_id=f"om_{workspace_id}_{i}"
            )
            evidence.upsert(conn, record)
            row = evidence.get_by_key(
                conn, workspace_id, record.source, record.source_type, record.source_key
            )
            assert row is not None
            refs.append(EvidenceRef(row.id, row.content_hash))
    return refs


def _draft(refs: list[EvidenceRef], **changes: Any) -> DraftWrite:
    values: dict[str, Any] = {
        "workspace_id": "inc-1",
        "fingerprint": "fp-1",
        "occurred_at": T0 + timedelta(minutes=3),
        "title": "Checkout errors for EU customers",
        "category": "impact",
        "evidence": refs,
        "provenance": {
            "processor": "rules",
            "prompt_version": "rules-v1",
            "model": "rules",
            "chat_id": "oc_chat",
            "thread_ids": ["omt_1"],
            "root_ids": [],
            "batch_id": "w1.a1.c1",
            "window": "chat/oc_chat/window/2026-11-29T10:00:00Z",
        },
    }
    values.update(changes)
    return DraftWrite(**values)


def _store(engine: Engine, draft: DraftWrite) -> draft_writes.UpsertResult:
    with engine.begin() as conn:
        return draft_writes.upsert_draft(conn, draft, now=T0)


def _entry(engine: Engine, entry_id: int | None) -> EntryRow:
    assert entry_id is not None
    with engine.connect() as conn:
        found = entries.get(conn, entry_id)
    assert found is not None
    return found


@pytest.fixture
def refs(engine: Engine) -> list[EvidenceRef]:
    make_workspace(engine)
    return _evidence(engine, 4)


def test_a_new_draft_is_an_ai_draft_bound_to_every_cited_evidence_row(
    engine: Engine, refs: list[EvidenceRef]
) -> None:
    result = _store(engine, _draft(refs[:2]))
    assert (result.outcome, result.bound) == (DraftOutcome.CREATED, 2)
    entry = _entry(engine, result.entry_id)
    assert (entry.source, entry.status, entry.human_edited) == ("ai", "draft", False)
    assert entry.evidence_ids == (refs[0].id, refs[1].id)
    assert entry.metadata["evidence"] == [
        {"id": r.id, "content_hash": r.content_hash} for r in refs[:2]
    ]
    assert entry.metadata["prompt_version"] == "rules-v1"
    assert entry.metadata["batch_id"] == "w1.a1.c1"
    assert entry.metadata["thread_ids"] == ["omt_1"]


def test_the_same_fingerprint_again_is_unchanged_not_a_duplicate(
    engine: Engine, refs: list[EvidenceRef]
) -> None:
    first = _store(engine, _draft(refs[:2]))
    again = _store(engine, _draft(refs[:2]))
    assert again.outcome is DraftOutcome.UNCHANGED and again.entry_id == first.entry_id
    assert _entry(engine, first.entry_id).revision == 1
    with engine.connect() as conn:
        assert len(entries.list_for_workspace(conn, "inc-1")) == 1


def test_a_machine_draft_is_updated_and_gains_evidence(
    engine: Engine, refs: list[EvidenceRef]
) -> None:
    first = _store(engine, _draft(refs[:1]))
    later = _store(
        engine,
        _draft(
            refs[1:3],
            occurred_at=T0 + timedelta(minutes=30),
            detail="now 40% of requests",
            provenance={"batch_id": "w2.a1.c1", "thread_ids": ["omt_2"]},
        ),
    )
    assert (later.outcome, later.bound) == (DraftOutcome.UPDATED, 2)
    entry = _entry(engine, first.entry_id)
    assert entry.occurred_at == T0 + timedelta(minutes=3)  # the first sighting stays the time
    assert entry.detail == "now 40% of requests"
    assert entry.evidence_ids == tuple(r.id for r in refs[:3])
    assert [e["id"] for e in entry.metadata["evidence"]] == [r.id for r in refs[:3]]
    assert entry.metadata["batch_id"] == "w2.a1.c1"
    assert entry.metadata["first_batch_id"] == "w1.a1.c1"
    assert entry.metadata["thread_ids"] == ["omt_1", "omt_2"]
    assert entry.revision == 2


def test_a_confirmed_entry_keeps_its_text_but_gains_supporting_evidence(
    engine: Engine, refs: list[EvidenceRef]
) -> None:
    first = _store(engine, _draft(refs[:1]))
    draft = _entry(engine, first.entry_id)
    with engine.begin() as conn:
        confirmed = entries.set_status(conn, draft, "confirmed")
    assert confirmed is not None
    result = _store(engine, _draft(refs[:3], title="checkout errors for EU customers!"))
    assert (result.outcome, result.bound) == (DraftOutcome.SUPPORTED, 2)
    entry = _entry(engine, first.entry_id)
    assert entry.title == "Checkout errors for EU customers"
    assert entry.status == "confirmed"
    assert entry.evidence_ids == tuple(r.id for r in refs[:3])


def test_a_human_edited_draft_is_never_rewritten(engine: Engine, refs: list[EvidenceRef]) -> None:
    first = _store(engine, _draft(refs[:1]))
    draft = _entry(engine, first.entry_id)
    with engine.begin() as conn:
        entries.edit_entry(
            conn, draft, {"title": "EU checkout outage", "detail": "by hand"}, now=datetime.now(UTC)
        )
    result = _store(engine, _draft(refs[:2], detail="machine detail"))
    assert result.outcome is DraftOutcome.SUPPORTED
    entry = _entry(engine, first.entry_id)
    assert (entry.title, entry.detail, entry.human_edited) == (
        "EU checkout outage",
        "by hand",
        True,
    )


def test_hidden_and_human_entries_are_left_exactly_as_they_are(
    engine: Engine, refs: list[EvidenceRef]
) -> None:
    hidden = _store(engine, _draft(refs[:1], fingerprint="fp-hidden"))
    to_hide = _entry(engine, hidden.entry_id)
    with engine.begin() as conn:
        entries.set_status(conn, to_hide, "hidden")
        human = entries.create_human_entry(
            conn,
            "inc-1",
            occurred_at=T0,
            title="Customer impact declared",
            category="impact",
            fingerprint="fp-human",
            evidence_ids=[refs[0].id],
        )
    for fingerprint, entry_id in (("fp-hidden", hidden.entry_id), ("fp-human", human.id)):
        before = _entry(engine, entry_id)
        result = _store(engine, _draft(refs, fingerprint=fingerprint, title="rewritten"))
        assert (result.outcome, result.bound) == (DraftOutcome.UNTOUCHED, 0)
        assert _entry(engine, entry_id) == before


def test_evidence_of_another_workspace_is_refused_and_nothing_is_written(
    engine: Engine, refs: list[EvidenceRef]
) -> None:
    make_workspace(engine, "inc-2")
    foreign = _evidence(engine, 1, workspace_id="inc-2")
    with pytest.raises(ForeignEvidence, match="inc-1"):
        _store(engine, _draft([refs[0], foreign[0]]))
    with engine.connect() as conn:
        assert entries.list_for_workspace(conn, "inc-1") == []


def test_listing_pages_by_time_and_leaves_hidden_entries_out(
    engine: Engine, refs: list[EvidenceRef]
) -> None:
    for i in range(5):
        _store(
            engine,
            _draft(
                refs[i % 4 : i % 4 + 1],
                fingerprint=f"fp-{i}",
                title=f"fact {i}",
                occurred_at=T0 + timedelta(minutes=10 - i),
                # The fifth cites the first's evidence: another kind, or it would restate it.
                category="finding" if i == 4 else "impact",
            ),
        )
    with engine.begin() as conn:
        third = entries.get_by_fingerprint(conn, "inc-1", "fp-2")
        assert third is not None
        entries.set_status(conn, third, "hidden")
        page = entries.list_for_workspace(conn, "inc-1", limit=2)
        rest = entries.list_for_workspace(
            conn, "inc-1", after=(page[-1].occurred_at, page[-1].id), limit=10
        )
        everything = entries.list_for_workspace(
            conn, "inc-1", statuses=("draft", "confirmed", "hidden")
        )
    assert [e.title for e in page + rest] == ["fact 4", "fact 3", "fact 1", "fact 0"]
    assert len(everything) == 5
    assert all(e.evidence_ids for e in everything)


@pytest.mark.parametrize(
    ("existing", "outcome"),
    [
        ({"source": "ai", "status": "draft"}, DraftOutcome.UNCHANGED),
        ({"source": "rule", "status": "draft"}, DraftOutcome.UNCHANGED),
        ({"source": "ai", "status": "confirmed"}, DraftOutcome.SUPPORTED),
        ({"source": "ai", "status": "draft", "human_edited": True}, DraftOutcome.SUPPORTED),
        ({"source": "ai", "status": "hidden"}, DraftOutcome.UNTOUCHED),
        ({"source": "human", "status": "confirmed"}, DraftOutcome.UNTOUCHED),
        ({"source": "human", "status": "draft"}, DraftOutcome.UNTOUCHED),
    ],
)
def test_what_a_repeated_draft_may_do_to_an_existing_entry(
    existing: dict[str, Any], outcome: DraftOutcome
) -> None:
    draft = _draft([EvidenceRef(1, "h1")])
    row = EntryRow(
        id=1,
        workspace_id="inc-1",
        occurred_at=draft.occurred_at,
        title=draft.title,
        detail=None,
        category="impact",
        source=existing["source"],
        status=existing["status"],
        fingerprint="fp-1",
        human_edited=existing.get("human_edited", False),
        revision=1,
        window_state_id=None,
        metadata={},
        created_at=T0,
        updated_at=T0,
        evidence_ids=(1,),
    )
    assert plan_draft_write(row, draft).outcome is outcome
    assert plan_draft_write(None, draft).outcome is DraftOutcome.CREATED


SCOPE = timedelta(minutes=30)
MINUTE = timedelta(minutes=1)


def test_a_restatement_under_a_nearby_key_merges_into_the_entry_first_proposed_nearby(
    engine: Engine, refs: list[EvidenceRef]
) -> None:
    # 10:28 is stored under its scope's key; 10:33 falls in the next scope, but the entry was
    # first proposed five minutes earlier: the same fact, so it merges.
    first = _store(engine, _draft(refs[:1], fingerprint="fp-a", occurred_at=T0 + 28 * MINUTE))
    near = _draft(
        refs[1:2],
        fingerprint="fp-b",
        occurred_at=T0 + 33 * MINUTE,
        nearby_fingerprints=("fp-a", "fp-c"),
        merge_within=SCOPE,
    )
    merged = _store(engine, near)
    assert merged.entry_id == first.entry_id and merged.outcome is DraftOutcome.UPDATED
    entry = _entry(engine, first.entry_id)
    assert entry.evidence_ids == (refs[0].id, refs[1].id)
    assert entry.fingerprint == "fp-a"
    assert entry.metadata["fingerprint_at"] == (T0 + 28 * MINUTE).isoformat()


def test_a_repeat_far_from_the_first_statement_is_an_entry_of_its_own(
    engine: Engine, refs: list[EvidenceRef]
) -> None:
    first = _store(engine, _draft(refs[:1], fingerprint="fp-a", occurred_at=T0 + 3 * MINUTE))
    later = _draft(
        refs[1:2],
        fingerprint="fp-c",
        occurred_at=T0 + 63 * MINUTE,
        nearby_fingerprints=("fp-a", "fp-b"),
        merge_within=SCOPE,
    )
    repeat = _store(engine, later)
    assert repeat.outcome is DraftOutcome.CREATED and repeat.entry_id != first.entry_id
    assert _entry(engine, repeat.entry_id).evidence_ids == (refs[1].id,)
    assert _entry(engine, first.entry_id).evidence_ids == (refs[0].id,)
    # Stored again (a replay of its window), the repeat finds itself, not the first entry.
    again = _store(engine, later)
    assert (again.entry_id, again.outcome) == (repeat.entry_id, DraftOutcome.UNCHANGED)


def test_the_nearness_is_measured_from_when_the_entry_was_first_proposed(
    engine: Engine, refs: list[EvidenceRef]
) -> None:
    # An entry first proposed at 10:03 whose time a later merge moved back is still anchored at
    # 10:03; an entry stored before the anchor existed is anchored at its own time.
    stored = _store(engine, _draft(refs[:1], fingerprint="fp-a", occurred_at=T0 + 3 * MINUTE))
    held = _entry(engine, stored.entry_id)
    moved = domain_entries.EntryRow(
        **{**vars_of(held), "occurred_at": T0 - 40 * MINUTE, "evidence_ids": ()}
    )
    legacy = domain_entries.EntryRow(
        **{**vars_of(held), "id": held.id + 1, "fingerprint": "fp-old", "metadata": {}}
    )
    probe = _draft(
        refs, fingerprint="fp-b", nearby_fingerprints=("fp-a", "fp-old"), merge_within=SCOPE
    )
    at_20 = replace(probe, occurred_at=T0 + 20 * MINUTE)
    assert draft_matching.nearest_entry([moved], at_20) == moved
    assert (
        draft_matching.nearest_entry([legacy], replace(probe, occurred_at=T0 + 30 * MINUTE))
        == legacy
    )
    assert (
        draft_matching.nearest_entry([moved, legacy], replace(probe, occurred_at=T0 + 34 * MINUTE))
        is None
    )
    # Without `merge_within` only the draft's own key matches (the unscoped behaviour).
    assert draft_matching.nearest_entry([moved], replace(at_20, merge_within=None)) is None


def vars_of(entry: EntryRow) -> dict[str, Any]:
    return {name: getattr(entry, name) for name in entry.__slots__}


def test_evidence_bound_to_an_entry_cannot_be_deleted_from_under_it(
    engine: Engine, refs: list[EvidenceRef]
) -> None:
    """Bindings RESTRICT their evidence: a purge must remove the binding (the leaf) first."""
    result = _store(engine, _draft(refs[:2]))
    bound, unbound = refs[0].id, refs[2].id
    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(delete(ev).where(ev.c.id == bound))
    with engine.begin() as conn:
        conn.execute(delete(ev).where(ev.c.id == unbound))  # nothing cites it
        conn.execute(
            delete(bindings).where(
                bindings.c.entry_id == result.entry_id, bindings.c.evidence_id == bound
            )
        )
        conn.execute(delete(ev).where(ev.c.id == bound))  # leaves first, then it goes
    assert _entry(engine, result.entry_id).evidence_ids == (refs[1].id,)


# --- re-found by evidence ------------------------------------------------------------------


def _count(engine: Engine) -> int:
    with engine.connect() as conn:
        return len(entries.list_for_workspace(conn, "inc-1", statuses=("draft", "confirmed")))


def test_a_reworded_draft_bound_to_the_same_evidence_updates_the_entry(
    engine: Engine, refs: list[EvidenceRef]
) -> None:
    """A restart or replay asks the model again; a rewording gets another fingerprint, but the
    same fact bound to the same evidence is re-found by its evidence."""
    first = _store(engine, _draft(refs[:2]))
    reworded = _draft(refs[:2], fingerprint="fp-reworded", title="EU shoppers cannot check out")
    again = _store(engine, reworded)
    assert (again.outcome, again.entry_id) == (DraftOutcome.UPDATED, first.entry_id)
    assert _entry(engine, first.entry_id).title == "EU shoppers cannot check out"
    assert _count(engine) == 1


def test_after_the_entry_gained_evidence_its_first_cited_set_still_refinds_it(
    engine: Engine, refs: list[EvidenceRef]
) -> None:
    first = _store(engine, _draft(refs[:2]))
    _store(engine, _draft(refs[:3]))  # the same fingerprint binds one more row
    assert _entry(engine, first.entry_id).evidence_ids == tuple(r.id for r in refs[:3])
    again = _store(engine, _draft(refs[:2], fingerprint="fp-reworded", title="Reworded"))
    assert again.entry_id == first.entry_id
    assert _count(engine) == 1


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"category": "finding"}, "another category is another fact"),
        ({"evidence_slice": (0, 1)}, "a subset of the evidence"),
        ({"evidence_slice": (1, 3)}, "other evidence"),
    ],
)
def test_other_evidence_or_another_category_is_an_entry_of_its_own(
    engine: Engine, refs: list[EvidenceRef], changes: dict[str, Any], why: str
) -> None:
    _store(engine, _draft(refs[:2]))
    fields = dict(changes)
    start, end = fields.pop("evidence_slice", (0, 2))
    other = _draft(refs[start:end], fingerprint="fp-other", title="Something else", **fields)
    assert _store(engine, other).outcome is DraftOutcome.CREATED, why
    assert _count(engine) == 2


def test_two_drafts_of_one_answer_citing_the_same_message_stay_two_entries(
    engine: Engine, refs: list[EvidenceRef]
) -> None:
    kind = "mitigation"
    drafts = [
        _draft(refs[:1], fingerprint="fp-a", title="Rolled back payments-api", category=kind),
        _draft(refs[:1], fingerprint="fp-b", title="Paused the batch jobs", category=kind),
    ]
    with engine.begin() as conn:
        first = draft_writes.upsert_drafts(conn, drafts, now=T0)
    assert [r.outcome for r in first] == [DraftOutcome.CREATED, DraftOutcome.CREATED]
    # Replayed with new wording: each re-finds one entry, none is added.
    reworded = [
        replace(drafts[0], fingerprint="fp-a2", title="payments-api rolled back"),
        replace(drafts[1], fingerprint="fp-b2", title="Batch jobs paused"),
    ]
    with engine.begin() as conn:
        again = draft_writes.upsert_drafts(conn, reworded, now=T0)
    assert sorted(r.entry_id or 0 for r in again) == sorted(r.entry_id or 0 for r in first)
    assert _count(engine) == 2


def test_a_hidden_entry_refound_by_evidence_stays_hidden_and_alone(
    engine: Engine, refs: list[EvidenceRef]
) -> None:
    first = _store(engine, _draft(refs[:2]))
    stored = _entry(engine, first.entry_id)
    with engine.begin() as conn:
        hidden = entries.set_status(conn, stored, "hidden", now=T0)
    assert hidden is not None
    again = _store(engine, _draft(refs[:2], fingerprint="fp-reworded", title="Reworded"))
    assert (again.outcome, again.entry_id) == (DraftOutcome.UNTOUCHED, first.entry_id)
    assert _count(engine) == 0
