"""Descriptor validation (pure): every problem names its field and reason."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from timeline_pipeline.domain.lifecycle import (
    MAX_BATCH_LIMIT,
    ArchiveDecision,
    DelegatedPurge,
    LegalHoldNote,
    LifecycleDescriptor,
    RequiredIndex,
    UnsafeIdentifier,
    safe_identifier,
    validate_descriptor,
)
from timeline_pipeline.lifecycle.errors import RetentionOverrideOutOfRange
from timeline_pipeline.lifecycle.plan import (
    CURSOR_SAFETY_MARGIN,
    pad_lower_bound,
    pad_upper_bound,
    retention_days,
)
from timeline_pipeline.store.evidence import DESCRIPTOR as EVIDENCE


def problems(d: LifecycleDescriptor, module: str = "evidence") -> dict[str, str]:
    return {e.field: e.reason for e in validate_descriptor(d, module)}


def test_the_evidence_descriptor_as_declared_is_valid() -> None:
    assert problems(EVIDENCE) == {}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"table_name": "evidence; DROP TABLE x"}, "table_name"),
        ({"cursor_column": "Occurred-At"}, "cursor_column"),
        ({"workspace_column": "ws id"}, "workspace_column"),
    ],
)
def test_an_unsafe_identifier_is_refused_naming_its_field(
    change: dict[str, str], field: str
) -> None:
    assert "unsafe SQL identifier" in problems(replace(EVIDENCE, **change))[field]  # type: ignore[arg-type]


def test_an_unknown_retention_class_is_refused() -> None:
    found = problems(replace(EVIDENCE, retention_class="forever"))
    assert "unknown retention class 'forever'" in found["retention_class"]


def test_a_batch_limit_over_fifty_thousand_is_refused() -> None:
    found = problems(replace(EVIDENCE, batch_limit=MAX_BATCH_LIMIT + 1))
    assert found["batch_limit"] == f"must be 1..{MAX_BATCH_LIMIT}, is {MAX_BATCH_LIMIT + 1}"
    assert problems(replace(EVIDENCE, batch_limit=MAX_BATCH_LIMIT)) == {}


def test_an_archivable_table_needs_a_format_and_a_port() -> None:
    found = problems(replace(EVIDENCE, archive=ArchiveDecision(True, "case exports")))
    assert set(found) >= {"archive.format", "archive.port"}


def test_a_generic_descriptor_needs_the_workspace_and_cursor_index() -> None:
    found = problems(replace(EVIDENCE, required_indexes=(RequiredIndex(("occurred_at",), "time"),)))
    assert "composite index ('workspace_id', 'occurred_at')" in found["required_indexes"]


def test_generic_and_delegated_are_exclusive() -> None:
    adopter = DelegatedPurge("timeline_pipeline.x:purge", "x_job", "its own")
    assert "delegated" in problems(replace(EVIDENCE, delegated=adopter))
    delegated = replace(EVIDENCE, execution_mode="delegated")
    assert "names its purge function" in problems(delegated)["delegated"]
    assert problems(replace(delegated, delegated=adopter)) == {}


def test_the_owner_must_be_the_declaring_module_and_the_key_follow_it() -> None:
    found = problems(EVIDENCE, module="entries")
    assert found["owner"] == "is 'evidence' but the descriptor is declared by 'entries'"
    assert "key" in problems(replace(EVIDENCE, key="evidence.other"))


def test_an_applicable_hold_cannot_be_declared_without_precedence() -> None:
    found = problems(replace(EVIDENCE, legal_hold=LegalHoldNote(True, "not_applicable")))
    assert "legal_hold.precedence" in found


def test_retention_bounds_must_contain_the_default() -> None:
    found = problems(replace(EVIDENCE, default_retention_days=400))
    assert "default_retention_days" in found


def test_safe_identifier_raises_on_anything_but_a_plain_name() -> None:
    assert safe_identifier("workspace_timeline_evidence") == "workspace_timeline_evidence"
    with pytest.raises(UnsafeIdentifier):
        safe_identifier('evidence" --')


def test_an_override_outside_the_bounds_is_refused_naming_the_bound() -> None:
    with pytest.raises(RetentionOverrideOutOfRange, match="retention_min_days=7"):
        retention_days(EVIDENCE, 6)
    with pytest.raises(RetentionOverrideOutOfRange, match="retention_max_days=365"):
        retention_days(EVIDENCE, 366)
    assert retention_days(EVIDENCE, 7) == 7
    assert retention_days(EVIDENCE, None) == 30


@pytest.mark.parametrize("micros", [0, 1, 499, 500, 999_999])
def test_a_padded_bound_keeps_the_boundary_row_whatever_a_client_rounds(micros: int) -> None:
    """The database keeps microseconds; a millisecond client truncates or rounds a value read
    back. Padded in the right direction, the bound still includes the row that defined it."""
    stored = datetime(2026, 1, 1, 12, 0, 0, micros, tzinfo=UTC)
    truncated = stored.replace(microsecond=micros // 1000 * 1000)
    rounded = truncated + timedelta(milliseconds=1) if micros % 1000 >= 500 else truncated
    for seen in (truncated, rounded):
        assert pad_lower_bound(seen) <= stored  # `cursor >= bound` keeps it
        assert pad_upper_bound(seen) >= stored  # `cursor <= bound` keeps it
    # Unpadded, a rounded-up value used as a lower bound would skip the row.
    if rounded != truncated:
        assert not stored >= rounded
    assert timedelta(milliseconds=1) == CURSOR_SAFETY_MARGIN


def test_sql_is_only_built_for_tables_of_the_schema_and_safe_names() -> None:
    from timeline_pipeline.domain.errors import InvalidInput
    from timeline_pipeline.lifecycle.queries import table_of

    assert table_of(EVIDENCE).name == "workspace_timeline_evidence"
    with pytest.raises(UnsafeIdentifier):
        table_of(replace(EVIDENCE, table_name="evidence; DROP TABLE workspaces"))
    with pytest.raises(InvalidInput, match="not a table of the schema"):
        table_of(replace(EVIDENCE, table_name="pg_authid"))
