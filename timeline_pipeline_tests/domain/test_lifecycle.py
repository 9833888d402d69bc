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
    RetentionClass,
    Scope,
    UnsafeIdentifier,
    safe_identifier,
    validate_descriptor,
)
from timeline_pipeline.domain.lifecycle_declare import (
    BACKUP_NOTES,
    HARD_DELETE,
    NOT_ARCHIVED,
    NOT_PARTITIONED,
    declare,
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


@pytest.mark.parametrize("frame", list(RetentionClass))
def test_every_retention_class_carries_bounds_that_contain_its_default(
    frame: RetentionClass,
) -> None:
    assert 1 <= frame.min_days <= frame.default_days <= frame.max_days
    assert frame.bounds.default_days == frame.default_days


def test_bounds_wider_than_the_class_are_refused_naming_the_class_bound() -> None:
    frame = RetentionClass.COMMUNICATION_LOG
    wide = replace(
        EVIDENCE, retention_min_days=frame.min_days - 1, retention_max_days=frame.max_days + 1
    )
    found = problems(wide)
    assert found["retention_min_days"] == (
        f"{frame.min_days - 1} is below the communication_log class's minimum {frame.min_days}"
    )
    assert found["retention_max_days"] == (
        f"{frame.max_days + 1} is above the communication_log class's maximum {frame.max_days}"
    )
    # Narrower than the class is the descriptor's own choice.
    assert problems(replace(EVIDENCE, retention_min_days=frame.min_days + 1)) == {}


def test_a_default_outside_the_class_is_refused_even_within_the_descriptors_own_bounds() -> None:
    beyond = RetentionClass.OPERATIONAL_QUEUE.max_days + 1
    queue = replace(
        EVIDENCE,
        retention_class=RetentionClass.OPERATIONAL_QUEUE,
        retention_max_days=beyond,
        default_retention_days=beyond,
    )
    assert "retention_max_days" in problems(queue)


def test_declare_takes_owner_key_and_days_from_the_module_and_the_class() -> None:
    d = declare(
        "timeline_pipeline.store.things",
        "things",
        RetentionClass.SYSTEM_EVENT,
        cursor_column="updated_at",
    )
    assert (d.owner, d.key, d.table_name) == ("things", "things.things", "things")
    frame = RetentionClass.SYSTEM_EVENT
    assert (d.retention_min_days, d.default_retention_days, d.retention_max_days) == (
        frame.min_days,
        frame.default_days,
        frame.max_days,
    )
    assert (d.scope, d.partition, d.archive, d.deletion) == (
        Scope.WORKSPACE,
        NOT_PARTITIONED,
        NOT_ARCHIVED,
        HARD_DELETE,
    )
    assert d.backup_restore_notes == BACKUP_NOTES
    assert d.is_generic
    assert d.required_indexes == (
        RequiredIndex(("workspace_id", "updated_at", "id"), "the purge's keyset"),
    )
    assert problems(d, "things") == {}


def test_declare_narrows_days_and_leads_a_global_keyset_with_its_cursor() -> None:
    d = declare(
        "timeline_pipeline.store.things",
        "things",
        RetentionClass.SYSTEM_EVENT,
        cursor_column="created_at",
        min_days=30,
        default_days=60,
        scope=Scope.GLOBAL,
        workspace_column=None,
        indexes=(RequiredIndex(("status",), "a probe"),),
    )
    assert (d.retention_min_days, d.default_retention_days) == (30, 60)
    assert d.retention_max_days == RetentionClass.SYSTEM_EVENT.max_days
    assert [i.columns for i in d.required_indexes] == [("created_at", "id"), ("status",)]
    assert problems(d, "things") == {}


def test_a_delegated_declaration_lists_only_its_own_indexes() -> None:
    purge = DelegatedPurge("f", "job", "why")
    d = declare(
        "timeline_pipeline.store.things",
        "things",
        RetentionClass.OPERATIONAL_QUEUE,
        cursor_column="created_at",
        indexes=(RequiredIndex(("parent_id",), "deleted with its parent"),),
        delegated=purge,
    )
    assert not d.is_generic
    assert d.delegated == purge
    assert [i.columns for i in d.required_indexes] == [("parent_id",)]
    assert problems(d, "things") == {}


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
