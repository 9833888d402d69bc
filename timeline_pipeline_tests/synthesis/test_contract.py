"""The synthesis contract: evidence is aware UTC, drafts cite only chunk evidence, fingerprints
identify a fact across reruns."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from timeline_pipeline.synthesis.contract import (
    FINGERPRINT_SCOPE,
    Category,
    DraftEntry,
    EvidenceItem,
    InvalidSynthesisOutput,
    SynthesisChunk,
    draft_fingerprint,
    nearby_fingerprints,
    normalize_title,
    validate_entries,
)
from timeline_pipeline.synthesis.grouping import group_evidence
from timeline_pipeline_tests.synthesis.builders import WINDOW_END, WINDOW_START, evidence


def _chunk(items: list[EvidenceItem], context: list[EvidenceItem] | None = None) -> SynthesisChunk:
    return SynthesisChunk(
        window_start=WINDOW_START,
        window_end=WINDOW_END,
        index=0,
        evidence=items,
        groups=group_evidence(items),
        context=context or [],
    )


def _entry(ids: list[int], *, at: datetime | None = None, title: str = "A fact") -> DraftEntry:
    return DraftEntry(
        title=title,
        category=Category.FINDING,
        occurred_at=at or WINDOW_START,
        evidence_ids=ids,
    )


def test_evidence_time_must_be_timezone_aware_and_is_stored_as_utc() -> None:
    with pytest.raises(ValidationError):
        EvidenceItem.model_validate(
            {**evidence(1).model_dump(), "occurred_at": datetime(2025, 1, 1, 12, 0)}
        )
    eastern = datetime(2025, 1, 1, 12, 0, tzinfo=timezone(timedelta(hours=8)))
    item = EvidenceItem.model_validate({**evidence(1).model_dump(), "occurred_at": eastern})
    assert item.occurred_at.utcoffset() == timedelta(0)
    assert item.occurred_at.hour == 4


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("title", ""),
        ("title", "   "),
        ("title", "x" * 201),
        ("evidence_ids", []),
        ("evidence_ids", [1, 1]),
        ("detail", "x" * 1001),
    ],
)
def test_draft_entry_rejects_malformed_fields(field: str, value: object) -> None:
    valid = {
        "title": "t",
        "category": "finding",
        "occurred_at": WINDOW_START,
        "evidence_ids": [1],
        "detail": None,
    }
    with pytest.raises(ValidationError):
        DraftEntry.model_validate({**valid, field: value})


def test_models_are_frozen() -> None:
    with pytest.raises(ValidationError):
        evidence(1).text = "changed"


def test_validate_entries_accepts_chunk_evidence_and_orders_ids_by_chat_order() -> None:
    chunk = _chunk([evidence(1), evidence(2), evidence(3)])
    [entry] = validate_entries(chunk, [_entry([3, 1])])
    assert entry.evidence_ids == [1, 3]


def test_validate_entries_refuses_ids_outside_the_chunk() -> None:
    chunk = _chunk([evidence(1), evidence(2)])
    with pytest.raises(InvalidSynthesisOutput) as caught:
        validate_entries(chunk, [_entry([1]), _entry([2, 99])])
    assert caught.value.reason == "unknown_evidence_id"
    assert "99" in str(caught.value)


def test_validate_entries_refuses_read_only_context() -> None:
    chunk = _chunk([evidence(5)], context=[evidence(1, at=-60)])
    with pytest.raises(InvalidSynthesisOutput) as caught:
        validate_entries(chunk, [_entry([5, 1])])
    assert caught.value.reason == "context_evidence_cited"


def test_validate_entries_error_never_quotes_chat_text() -> None:
    secret = "customer card 4111 1111 1111 1111"
    chunk = _chunk([evidence(1, secret)])
    with pytest.raises(InvalidSynthesisOutput) as caught:
        validate_entries(chunk, [_entry([7], title=secret)])
    assert secret not in str(caught.value)


@pytest.mark.parametrize(
    ("claimed_offset", "expected_offset"),
    [
        (-3600, 10),  # before the evidence: clamped up to the earliest cited message
        (25, 25),  # inside the cited span: kept
        (3600, 30),  # after the evidence: clamped down to the latest cited message
    ],
)
def test_validate_entries_pins_time_to_the_cited_evidence(
    claimed_offset: int, expected_offset: int
) -> None:
    chunk = _chunk([evidence(1), evidence(2), evidence(3)])  # at +10s, +20s, +30s
    entry = _entry([1, 3], at=WINDOW_START + timedelta(seconds=claimed_offset))
    [checked] = validate_entries(chunk, [entry])
    assert checked.occurred_at == WINDOW_START + timedelta(seconds=expected_offset)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Rolled back checkout to v4.17.2", "rolled back checkout to v4.17.2."),
        ("Rolled back  checkout\tto v4.17.2", "ROLLED BACK CHECKOUT TO V4.17.2!"),
        ("Failover: orders-db → replica", "failover orders db replica"),
    ],
)
def test_fingerprint_ignores_case_spacing_and_punctuation(first: str, second: str) -> None:
    a = _entry([1], title=first)
    b = _entry([2], title=second, at=WINDOW_START + timedelta(minutes=3))
    assert draft_fingerprint("ws-1", a) == draft_fingerprint("ws-1", b)


def test_fingerprint_separates_workspaces_categories_and_facts() -> None:
    entry = _entry([1], title="Rolled back checkout")
    other_category = entry.model_copy(update={"category": Category.DECISION})
    other_fact = entry.model_copy(update={"title": "Restarted checkout"})
    fingerprints = {
        draft_fingerprint("ws-1", entry),
        draft_fingerprint("ws-2", entry),
        draft_fingerprint("ws-1", other_category),
        draft_fingerprint("ws-1", other_fact),
    }
    assert len(fingerprints) == 4


def test_fingerprint_is_a_stable_sha256() -> None:
    fingerprint = draft_fingerprint("ws-1", _entry([1], title="Rolled back checkout"))
    assert fingerprint == draft_fingerprint("ws-1", _entry([1], title="Rolled back checkout"))
    assert len(fingerprint) == 64
    assert int(fingerprint, 16) >= 0


def test_normalize_title_keeps_letters_of_any_script() -> None:
    assert normalize_title("  Écoute: la base  est TOMBÉE!! ") == "écoute la base est tombée"
    assert normalize_title("数据库 主从切换。") == "数据库 主从切换"


def test_the_fingerprint_is_scoped_to_a_half_hour_bucket_of_the_draft_time() -> None:
    title = "Rolled back checkout"
    ten = WINDOW_START.replace(hour=10, minute=0)
    at_1002 = _entry([1], title=title, at=ten + timedelta(minutes=2))
    at_1029 = _entry([1], title=title, at=ten + timedelta(minutes=29))
    at_1031 = _entry([1], title=title, at=ten + timedelta(minutes=31))
    at_1102 = _entry([1], title=title, at=ten + timedelta(minutes=62))
    assert timedelta(minutes=30) == FINGERPRINT_SCOPE
    assert draft_fingerprint("ws-1", at_1002) == draft_fingerprint("ws-1", at_1029)
    assert draft_fingerprint("ws-1", at_1031) != draft_fingerprint("ws-1", at_1029)
    assert draft_fingerprint("ws-1", at_1102) != draft_fingerprint("ws-1", at_1002)
    # A restatement at 10:31 can find the 10:29 entry under its neighbour's key; 11:02 cannot.
    assert draft_fingerprint("ws-1", at_1029) in nearby_fingerprints("ws-1", at_1031)
    assert draft_fingerprint("ws-1", at_1002) not in nearby_fingerprints("ws-1", at_1102)
