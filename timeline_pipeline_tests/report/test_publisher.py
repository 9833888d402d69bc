"""The report's Lark document against the local Lark, with the real client: one document per
workspace whatever fails where, rewritten per revision, its link posted into the chat once
(docs/report.md, "The Lark document")."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine

from timeline_pipeline.curation.rules import Action
from timeline_pipeline.curation.service import CurationService
from timeline_pipeline.lark.client import (
    LarkApiError,
    LarkClient,
    LarkClientConfig,
    LarkPermissionError,
)
from timeline_pipeline.lark.simulator import SimulatorServer
from timeline_pipeline.lark.simulator.documents import (
    DEFAULT_FOLDER_TOKEN,
    ROUTE_CREATE_DOCUMENT,
    ROUTE_INSERT_DESCENDANTS,
)
from timeline_pipeline.lifecycle.engine import PurgeEngine
from timeline_pipeline.lifecycle.holds import create_hold
from timeline_pipeline.lifecycle.registry import load_registry
from timeline_pipeline.report.publisher import DocumentPublisher
from timeline_pipeline.report.service import ReportService, Trigger
from timeline_pipeline.retry import RetryPolicy
from timeline_pipeline.store import report_documents
from timeline_pipeline_tests.report.support import (
    ACTOR,
    IMPACT,
    closed_incident,
    entry_of,
    report_settings,
)

SECRET = "report-secret"
CHAT = "oc_chat"


@dataclass
class Harness:
    engine: Engine
    lark: SimulatorServer
    client: LarkClient

    def publisher(self, folder: str = DEFAULT_FOLDER_TOKEN) -> DocumentPublisher:
        settings = report_settings(report_lark_doc_enabled=True, report_folder_token=folder)
        return DocumentPublisher(self.engine, settings, self.client)

    def build(self) -> int:
        reports = ReportService(self.engine, report_settings())
        return reports.build("inc-1", actor=ACTOR, trigger=Trigger.MANUAL).report.revision

    def replies(self) -> list[dict[str, object]]:
        return [
            m
            for m in self.lark.state.store.messages(CHAT)
            if (m.get("sender") or {}).get("sender_type") == "app"
        ]


@pytest.fixture
def harness(engine: Engine) -> Iterator[Harness]:
    closed_incident(engine)
    app_id = f"cli_report_{uuid.uuid4().hex[:12]}"
    with SimulatorServer(app_id=app_id, app_secret=SECRET) as lark:
        lark.state.store.add_message(
            {"message_id": "om_seed", "chat_id": CHAT, "create_time": "1700000000000"}
        )
        client = LarkClient(
            LarkClientConfig(
                app_id=app_id,
                app_secret=SECRET,
                base_url=lark.base_url,
                retry=RetryPolicy(
                    attempts=1, backoff_base=0.001, backoff_cap=0.01, max_retry_after=1.0
                ),
            )
        )
        yield Harness(engine, lark, client)


def test_a_report_becomes_one_document_with_its_link_posted_once(harness: Harness) -> None:
    publisher = harness.publisher()
    publisher.plan("inc-1", harness.build())
    outcome = publisher.publish("inc-1")
    again = publisher.publish("inc-1")
    docs = harness.lark.state.documents

    assert outcome.created
    assert outcome.wrote
    assert outcome.replied
    (document_id,) = docs.document_ids()
    text = docs.raw_text(document_id)
    assert IMPACT in text
    assert "Root cause" in text
    (reply,) = harness.replies()
    assert document_id in str(reply["body"])
    assert not again.wrote
    assert not again.replied
    assert len(harness.replies()) == 1


def test_a_rebuild_rewrites_the_same_document_without_a_duplicate(harness: Harness) -> None:
    publisher = harness.publisher()
    publisher.plan("inc-1", harness.build())
    publisher.publish("inc-1")
    docs = harness.lark.state.documents
    (document_id,) = docs.document_ids()
    before = docs.raw_text(document_id)

    mitigation = entry_of(harness.engine, "mitigation")
    CurationService(harness.engine).transition(
        "inc-1", mitigation.id, Action.CONFIRM, expected_revision=None, actor=ACTOR
    )
    revision = harness.build()
    publisher.plan("inc-1", revision)
    outcome = publisher.publish("inc-1")
    after = docs.raw_text(document_id)

    assert revision == 2
    assert outcome.written_revision == 2
    assert docs.document_ids() == [document_id]
    assert before != after
    assert after.count(IMPACT) == before.count(IMPACT)  # emptied, then written: no doubling
    assert len(harness.replies()) == 1


def test_a_create_whose_answer_was_lost_is_found_again_instead_of_made_twice(
    harness: Harness,
) -> None:
    docs = harness.lark.state.documents
    docs.fail_next(ROUTE_CREATE_DOCUMENT, after_apply=True)
    publisher = harness.publisher()
    publisher.plan("inc-1", harness.build())

    with pytest.raises(LarkApiError):
        publisher.publish("inc-1")
    outcome = publisher.publish("inc-1")

    assert outcome.adopted
    assert not outcome.created
    assert len(docs.document_ids()) == 1
    assert outcome.written_revision == 1


def test_a_write_whose_answer_was_lost_is_not_written_twice(harness: Harness) -> None:
    docs = harness.lark.state.documents
    publisher = harness.publisher()
    publisher.plan("inc-1", harness.build())
    docs.fail_next(ROUTE_INSERT_DESCENDANTS, after_apply=True)

    with pytest.raises(LarkApiError):
        publisher.publish("inc-1")
    publisher.publish("inc-1")
    (document_id,) = docs.document_ids()
    text = docs.raw_text(document_id)

    markdown = ReportService(harness.engine, report_settings()).latest("inc-1").markdown
    assert text.count(IMPACT) == markdown.count(IMPACT)  # as one write shows it, not twice
    with harness.engine.connect() as conn:
        row = report_documents.get(conn, "inc-1")
    assert row is not None
    assert row.up_to_date


def test_a_folder_lark_refuses_is_a_clear_error_and_no_document(harness: Harness) -> None:
    publisher = harness.publisher(folder="fldunknown00000000000000000")
    publisher.plan("inc-1", harness.build())

    with pytest.raises(LarkPermissionError, match="create_document"):
        publisher.publish("inc-1")
    assert harness.lark.state.documents.document_ids() == []
    with harness.engine.connect() as conn:
        row = report_documents.get(conn, "inc-1")
    assert row is not None
    assert row.document_id is None


def test_writes_stay_within_larks_per_document_rate_limit(harness: Harness) -> None:
    publisher = harness.publisher()
    publisher.plan("inc-1", harness.build())
    publisher.publish("inc-1")
    for action in (Action.CONFIRM, Action.HIDE, Action.RESTORE):
        CurationService(harness.engine).transition(
            "inc-1",
            entry_of(harness.engine, "next_step").id,
            action,
            expected_revision=None,
            actor=ACTOR,
        )
        publisher.plan("inc-1", harness.build())
        publisher.publish("inc-1")
    docs = harness.lark.state.documents
    (document_id,) = docs.document_ids()

    assert docs.write_count(document_id) >= 6
    assert docs.rate_limited_count(document_id) == 0


def purge_reports(engine: Engine) -> None:
    """The lifecycle purge as an operator runs it, a year and a half on."""
    later = datetime.now(UTC) + timedelta(days=540)
    PurgeEngine(engine, load_registry()).run(
        descriptor_key="incident_reports.incident_reports", as_of=later
    )


def test_when_the_reports_age_out_the_document_is_deleted_in_lark_then_its_row(
    harness: Harness,
) -> None:
    publisher = harness.publisher()
    publisher.plan("inc-1", harness.build())
    publisher.publish("inc-1")
    docs = harness.lark.state.documents
    (document_id,) = docs.document_ids()

    purge_reports(harness.engine)
    retired = publisher.retire_orphans()
    PurgeEngine(harness.engine, load_registry()).run(
        descriptor_key="report_documents.incident_report_documents",
        as_of=datetime.now(UTC) + timedelta(days=540),
    )

    assert retired == 1
    assert document_id not in [f["token"] for f in docs.folder_files(DEFAULT_FOLDER_TOKEN)]
    with harness.engine.connect() as conn:
        assert report_documents.get(conn, "inc-1") is None


def test_a_held_workspace_keeps_its_reports_and_its_document(harness: Harness) -> None:
    publisher = harness.publisher()
    publisher.plan("inc-1", harness.build())
    publisher.publish("inc-1")
    with harness.engine.begin() as conn:
        create_hold(
            conn,
            load_registry(),
            workspace_id="inc-1",
            descriptor_key=None,
            reason="preservation notice for case 9",
            idempotency_key="hold-9",
            actor=ACTOR,
        )

    purge_reports(harness.engine)

    assert publisher.retire_orphans() == 0
    assert len(harness.lark.state.documents.document_ids()) == 1
    with harness.engine.connect() as conn:
        row = report_documents.get(conn, "inc-1")
    assert row is not None
    assert row.state == "active"


def test_a_hold_on_the_documents_alone_keeps_the_document_in_lark(harness: Harness) -> None:
    publisher = harness.publisher()
    publisher.plan("inc-1", harness.build())
    publisher.publish("inc-1")
    with harness.engine.begin() as conn:
        create_hold(
            conn,
            load_registry(),
            workspace_id="inc-1",
            descriptor_key="report_documents.incident_report_documents",
            reason="preservation notice for the document only",
            idempotency_key="hold-doc",
            actor=ACTOR,
        )

    purge_reports(harness.engine)

    assert publisher.retire_orphans() == 0
    assert len(harness.lark.state.documents.document_ids()) == 1


def test_a_report_built_after_its_document_was_retired_gets_a_new_document(
    harness: Harness,
) -> None:
    publisher = harness.publisher()
    publisher.plan("inc-1", harness.build())
    publisher.publish("inc-1")
    docs = harness.lark.state.documents
    (first,) = docs.document_ids()
    purge_reports(harness.engine)
    publisher.retire_orphans()

    publisher.plan("inc-1", harness.build())
    outcome = publisher.publish("inc-1")

    assert outcome.created
    assert outcome.document_id != first
    assert outcome.document_id in docs.document_ids()
