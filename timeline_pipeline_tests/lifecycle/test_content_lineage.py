"""The content lineage (issue 34; docs/lifecycle.md, "What a recall and a hold do to each copy"):
every table with free-text columns declares what a recall does to them or says why it holds no
message text, and `lifecycle registry-check` fails on one that does neither; the rule a recall
applies to an entry is decided by who wrote it."""

from __future__ import annotations

import pytest
from sqlalchemy import JSON, Column, Engine, Integer, MetaData, String, Table, Text

from timeline_pipeline.domain.content_lineage import (
    EntryRecall,
    OnRecall,
    RecallEffect,
    Tie,
    check_copies,
    declare_content,
    entry_recall,
)
from timeline_pipeline.domain.entries import EntrySource, EntryStatus
from timeline_pipeline.lifecycle.live_check import registry_check, text_columns, unlineaged
from timeline_pipeline.lifecycle.registry import content_copies


def _schema() -> MetaData:
    """A test schema: a table copying message text, one with ids only."""
    schema = MetaData()
    Table(
        "scratch_quotes",
        schema,
        Column("id", Integer, primary_key=True),
        Column("quoted", Text()),
        Column("evidence_id", Integer),
    )
    Table(
        "scratch_ids",
        schema,
        Column("id", Integer, primary_key=True),
        Column("message_id", String(256)),
    )
    return schema


def _noop(*_args: object) -> RecallEffect:
    return RecallEffect()


def test_a_table_with_message_text_and_no_declaration_fails_the_check() -> None:
    [error] = unlineaged([], _schema(), {})
    assert (error.key, error.field) == ("scratch_quotes", "content")
    assert "quoted" in error.reason and "declare_content" in error.reason


def test_a_declared_table_or_one_said_to_hold_no_message_text_passes() -> None:
    declared = declare_content(
        "tests.scratch",
        "scratch_quotes",
        text_columns=("quoted",),
        tie=Tie.EVIDENCE_ID,
        tie_column="evidence_id",
        on_recall=OnRecall.REDACT,
        apply=_noop,
    )
    assert unlineaged([declared], _schema(), {}) == []
    assert unlineaged([], _schema(), {"scratch_quotes": "a test's reason"}) == []


def test_a_declaration_naming_a_column_or_table_the_schema_lacks_fails() -> None:
    wrong = declare_content(
        "tests.scratch",
        "scratch_quotes",
        text_columns=("body",),
        tie=Tie.EVIDENCE_ID,
        tie_column="evidence_id",
        on_recall=OnRecall.REDACT,
        apply=_noop,
    )
    gone = declare_content(
        "tests.scratch",
        "scratch_gone",
        text_columns=("x",),
        tie=Tie.WORKSPACE,
        on_recall=OnRecall.IDS_ONLY,
    )
    errors = unlineaged([wrong, gone], _schema(), {})
    assert {(e.key, e.field) for e in errors} == {
        ("scratch.scratch_quotes", "text_columns"),
        ("scratch.scratch_gone", "table_name"),
    }


def test_a_declaration_that_acts_needs_the_stores_apply_and_its_tie_column() -> None:
    lacking = declare_content(
        "tests.scratch", "scratch_quotes", text_columns=(), tie=Tie.ENTRY, on_recall=OnRecall.DROP
    )
    errors = check_copies([lacking, lacking])
    assert any("declared twice" in e for e in errors)
    assert any("names no text column" in e for e in errors)
    assert any("needs tie_column" in e for e in errors)
    assert any("needs the store's apply" in e for e in errors)


def test_free_text_columns_are_text_json_and_long_strings() -> None:
    table = Table(
        "t",
        MetaData(),
        Column("id", Integer, primary_key=True),
        Column("short", String(64)),
        Column("title", String(512)),
        Column("body", Text()),
        Column("doc", JSON()),
    )
    assert text_columns(table) == ["title", "body", "doc"]


def test_the_products_schema_is_fully_declared_and_the_check_passes_live(engine: Engine) -> None:
    copies = content_copies()
    tables = {c.table_name for c in copies}
    assert {
        "workspace_timeline_evidence",
        "workspace_timeline_entries",
        "workspace_timeline_summaries",
        "window_rerun_previews",
        "interaction_requests",
    } <= tables
    # Entries first: what quotes an entry follows what the recall did to it.
    assert copies[0].stage == 0 and copies[-1].stage == 1
    with engine.connect() as conn:
        _count, errors = registry_check(conn)
    assert [e for e in errors if e.field in ("content", "text_columns", "declaration")] == []


@pytest.mark.parametrize(
    ("source", "status", "edited", "fingerprint", "all_recalled", "expected"),
    [
        ("rule", "draft", False, "f", True, EntryRecall.REDACT_AND_HIDE),
        ("ai", "draft", False, "f", True, EntryRecall.REDACT_AND_HIDE),
        ("rule", "draft", False, "f", False, EntryRecall.FLAG),  # other messages still stand
        ("rule", "draft", True, "f", True, EntryRecall.FLAG),  # a curator rewrote it
        ("rule", "confirmed", False, "f", True, EntryRecall.FLAG),  # a curator vouched for it
        ("human", "confirmed", False, "pin-abc", True, EntryRecall.REDACT),  # a pin quotes it
        ("human", "hidden", False, "pin-abc", True, EntryRecall.REDACT),
        ("human", "confirmed", True, "pin-abc", True, EntryRecall.FLAG),  # rewritten pin
        ("human", "confirmed", False, None, True, EntryRecall.FLAG),  # a curator's own entry
    ],
)
def test_who_wrote_an_entry_decides_what_a_recall_does_to_it(
    source: str,
    status: str,
    edited: bool,
    fingerprint: str | None,
    all_recalled: bool,
    expected: EntryRecall,
) -> None:
    decided = entry_recall(
        source=EntrySource(source),
        status=EntryStatus(status),
        human_edited=edited,
        fingerprint=fingerprint,
        all_evidence_recalled=all_recalled,
    )
    assert decided is expected
