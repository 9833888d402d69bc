"""The duplicate-draft policy as tables, without a database (docs/design.md §7)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from timeline_pipeline.domain.entries import DraftWrite, EntryRow, EvidenceRef
from timeline_pipeline.synthesis_run.draft_matching import (
    CITED_EVIDENCE,
    FIRST_PROPOSED_AT,
    MAX_METADATA_EVIDENCE,
    DraftOutcome,
    first_proposed_at,
    first_same_evidence,
    nearest_entry,
    plan_draft_write,
    same_evidence,
)

T0 = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)


def _draft(evidence: tuple[int, ...] = (1, 2), **changes: Any) -> DraftWrite:
    values: dict[str, Any] = {
        "workspace_id": "inc-1",
        "fingerprint": "fp-1",
        "occurred_at": T0 + 3 * MINUTE,
        "title": "Checkout errors",
        "category": "impact",
        "evidence": [EvidenceRef(i, f"h{i}") for i in evidence],
        "provenance": {"batch_id": "w1.a1.c1", "thread_ids": ["omt_2"]},
    }
    values.update(changes)
    return DraftWrite(**values)


def _entry(**changes: Any) -> EntryRow:
    values: dict[str, Any] = {
        "id": 7,
        "workspace_id": "inc-1",
        "occurred_at": T0 + 3 * MINUTE,
        "title": "Checkout errors",
        "detail": None,
        "category": "impact",
        "source": "ai",
        "status": "draft",
        "fingerprint": "fp-1",
        "human_edited": False,
        "revision": 1,
        "window_state_id": None,
        "metadata": {},
        "created_at": T0,
        "updated_at": T0,
        "evidence_ids": (1, 2),
    }
    values.update(changes)
    return EntryRow(**values)


@pytest.mark.parametrize(
    ("entry", "draft", "same", "why"),
    [
        (_entry(), _draft((1, 2)), True, "exactly the bound evidence"),
        (_entry(), _draft((2, 1)), True, "order does not matter"),
        (_entry(), _draft((1,)), False, "a subset is another fact"),
        (_entry(), _draft((1, 2, 3)), False, "a superset is another fact"),
        (_entry(), _draft((1, 2), category="finding"), False, "another category"),
        (_entry(), _draft(()), False, "a draft citing nothing matches nothing"),
        (
            _entry(evidence_ids=(1, 2, 3), metadata={CITED_EVIDENCE: [1, 2]}),
            _draft((1, 2)),
            True,
            "what the entry's first draft cited, after later drafts bound more",
        ),
        (
            _entry(evidence_ids=(1, 2, 3), metadata={CITED_EVIDENCE: [True, 2]}),
            _draft((1, 2)),
            False,
            "a boolean in the recorded citation is not an id",
        ),
        (
            _entry(evidence_ids=(1, 2, 3), metadata={CITED_EVIDENCE: "1,2"}),
            _draft((1, 2)),
            False,
            "a malformed recorded citation is ignored",
        ),
    ],
)
def test_same_evidence(entry: EntryRow, draft: DraftWrite, same: bool, why: str) -> None:
    assert same_evidence(entry, draft) is same, why


def test_the_first_candidate_restated_by_evidence_wins_and_excluded_ones_never_do() -> None:
    other = _entry(id=3, evidence_ids=(9,))
    older = _entry(id=4)
    newer = _entry(id=5)
    draft = _draft((1, 2))
    assert first_same_evidence([other, older, newer], draft) == older
    assert first_same_evidence([other, older, newer], draft, exclude={4}) == newer
    assert first_same_evidence([other, older, newer], draft, exclude={4, 5}) is None
    assert first_same_evidence([], draft) is None


def test_candidates_are_read_only_until_one_matches() -> None:
    read: list[int] = []

    def lazily() -> Any:
        for entry in (_entry(id=1), _entry(id=2)):
            read.append(entry.id)
            yield entry

    assert first_same_evidence(lazily(), _draft()) == _entry(id=1)
    assert read == [1]


@pytest.mark.parametrize(
    ("metadata", "anchor"),
    [
        ({FIRST_PROPOSED_AT: (T0 - 40 * MINUTE).isoformat()}, T0 - 40 * MINUTE),
        ({FIRST_PROPOSED_AT: "2026-11-29T10:00:00"}, T0 + 3 * MINUTE),  # no zone: ignored
        ({FIRST_PROPOSED_AT: "not a time"}, T0 + 3 * MINUTE),
        ({FIRST_PROPOSED_AT: 17}, T0 + 3 * MINUTE),
        ({}, T0 + 3 * MINUTE),
    ],
)
def test_the_scope_anchor(metadata: dict[str, Any], anchor: datetime) -> None:
    assert first_proposed_at(_entry(metadata=metadata)) == anchor


@pytest.mark.parametrize(
    ("candidate", "draft_at", "merge_within", "matches"),
    [
        (_entry(fingerprint="fp-1"), T0 + 500 * MINUTE, None, True),  # own key: always
        (_entry(fingerprint="fp-n"), T0 + 20 * MINUTE, timedelta(minutes=30), True),
        (_entry(fingerprint="fp-n"), T0 + 33 * MINUTE, timedelta(minutes=30), False),
        (_entry(fingerprint="fp-n"), T0 + 20 * MINUTE, None, False),  # unscoped: own key only
        (_entry(fingerprint="fp-x"), T0 + 3 * MINUTE, timedelta(minutes=30), False),
    ],
)
def test_nearest_entry_by_fingerprint(
    candidate: EntryRow, draft_at: datetime, merge_within: timedelta | None, matches: bool
) -> None:
    draft = _draft(occurred_at=draft_at, nearby_fingerprints=("fp-n",), merge_within=merge_within)
    assert (nearest_entry([candidate], draft) == candidate) is matches


def test_the_nearest_in_time_wins_and_the_own_key_breaks_a_tie() -> None:
    draft = _draft(nearby_fingerprints=("fp-n",), merge_within=timedelta(minutes=30))
    far = _entry(id=1, fingerprint="fp-n", occurred_at=T0 - 10 * MINUTE)
    near = _entry(id=2, fingerprint="fp-n", occurred_at=T0 + 2 * MINUTE)
    own = _entry(id=3, fingerprint="fp-1", occurred_at=T0 + 2 * MINUTE)
    assert nearest_entry([far, near], draft) == near
    assert nearest_entry([far, near, own], draft) == own


@pytest.mark.parametrize(
    ("existing", "draft", "outcome", "values", "bind"),
    [
        (None, _draft((2, 1)), DraftOutcome.CREATED, None, (1, 2)),
        (_entry(), _draft(), DraftOutcome.UNCHANGED, set(), ()),
        (_entry(), _draft((1, 2, 3)), DraftOutcome.UPDATED, {"metadata_json", "source"}, (3,)),
        (
            _entry(),
            _draft(title="Reworded", detail="more", category="finding"),
            DraftOutcome.UPDATED,
            {"title", "detail", "category", "metadata_json", "source"},
            (),
        ),
        (
            _entry(detail="kept"),
            _draft(occurred_at=T0 + 1 * MINUTE),
            DraftOutcome.UPDATED,
            {"occurred_at", "metadata_json", "source"},
            (),
        ),
        (
            _entry(detail="kept"),
            _draft(occurred_at=T0 + 9 * MINUTE),
            DraftOutcome.UNCHANGED,
            set(),
            (),
        ),
        (_entry(status="confirmed"), _draft((1, 2, 3)), DraftOutcome.SUPPORTED, set(), (3,)),
        (_entry(human_edited=True), _draft((1, 3), title="x"), DraftOutcome.SUPPORTED, set(), (3,)),
        (_entry(status="hidden"), _draft((1, 3), title="x"), DraftOutcome.UNTOUCHED, set(), ()),
        (
            _entry(source="human", status="confirmed"),
            _draft((3,)),
            DraftOutcome.UNTOUCHED,
            set(),
            (),
        ),
    ],
)
def test_what_storing_a_draft_does(
    existing: EntryRow | None,
    draft: DraftWrite,
    outcome: DraftOutcome,
    values: set[str] | None,
    bind: tuple[int, ...],
) -> None:
    plan = plan_draft_write(existing, draft)
    assert (plan.outcome, plan.bind) == (outcome, bind)
    if values is not None:
        assert set(plan.values) == values


def test_a_new_entry_records_its_scope_anchor_and_what_it_cited() -> None:
    draft = _draft((2, 1))
    metadata = plan_draft_write(None, draft).values["metadata_json"]
    assert metadata[FIRST_PROPOSED_AT] == draft.occurred_at.isoformat()
    assert metadata[CITED_EVIDENCE] == [1, 2]
    assert metadata["evidence"] == [
        {"id": 1, "content_hash": "h1"},
        {"id": 2, "content_hash": "h2"},
    ]
    assert metadata["first_batch_id"] == "w1.a1.c1"


def test_an_update_merges_the_audit_copy_and_keeps_the_first_batch() -> None:
    held = {
        "evidence": [{"id": 1, "content_hash": "old"}, {"id": 2, "content_hash": "h2"}],
        "evidence_omitted": 4,
        "thread_ids": ["omt_1"],
        "batch_id": "w0.a1.c1",
        FIRST_PROPOSED_AT: T0.isoformat(),
    }
    plan = plan_draft_write(_entry(metadata=held), _draft((1, 3), title="Reworded"))
    merged = plan.values["metadata_json"]
    assert merged["evidence"] == [
        {"id": 1, "content_hash": "h1"},
        {"id": 2, "content_hash": "h2"},
        {"id": 3, "content_hash": "h3"},
    ]
    assert merged["evidence_omitted"] == 4
    assert merged["thread_ids"] == ["omt_1", "omt_2"]
    assert (merged["batch_id"], merged["first_batch_id"]) == ("w1.a1.c1", "w0.a1.c1")
    assert merged[FIRST_PROPOSED_AT] == T0.isoformat()


def test_the_audit_copy_is_bounded_and_counts_what_it_left_out() -> None:
    many = tuple(range(1, MAX_METADATA_EVIDENCE + 6))
    metadata = plan_draft_write(None, _draft(many)).values["metadata_json"]
    assert len(metadata["evidence"]) == MAX_METADATA_EVIDENCE
    assert metadata["evidence_omitted"] == 5
    assert len(metadata[CITED_EVIDENCE]) == MAX_METADATA_EVIDENCE
