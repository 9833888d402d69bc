"""A recall reaches every copy of the message's text (issue 34 item 3; docs/lifecycle.md, "What a
recall and a hold do to each copy"), on SQLite and PostgreSQL: the machine draft written only
from it loses its text and is hidden, a pin's entry is redacted on the timeline, in the API, on
the page and in its reply card (patched in the local Lark), the stale automatic summary loses
its text, a confirmed entry keeps its text and carries the flag; under a legal hold the text is
hidden from readers all the same and kept aside in the row."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from timeline_pipeline.curation.rules import Action
from timeline_pipeline.curation.service import CurationService
from timeline_pipeline.db.schema import window_rerun_previews, workspace_timeline_evidence
from timeline_pipeline.domain.content_lineage import RECALLED_TEXT
from timeline_pipeline.http.app import create_app
from timeline_pipeline.ingest import recall
from timeline_pipeline.ingest.writer import ingest
from timeline_pipeline.lark.normalize import NormalizedLarkMessage
from timeline_pipeline.lifecycle.hold_gate import default_registry
from timeline_pipeline.lifecycle.holds import create_hold
from timeline_pipeline.settings import LarkTimelineSettings, RuntimeEnvironment, Settings
from timeline_pipeline.store import api_tokens, entries, evidence, summaries, workspaces
from timeline_pipeline.ui.pages import SESSION_COOKIE
from timeline_pipeline_tests.curation.support import (
    ROLLBACK,
    W1,
    all_entries,
    incident,
    say,
    synthesize,
)
from timeline_pipeline_tests.pins.harness import CHAT as PIN_CHAT
from timeline_pipeline_tests.pins.harness import pin_harness
from timeline_pipeline_tests.ui.support import session
from timeline_pipeline_tests.windows.support import settings

SECRET = "zebra-quartz-7731 is the leaked hostname"


def _recall(engine: Engine, workspace_id: str, evidence_id: int) -> None:
    """The receiver's recall of the message stored as `evidence_id` (im.message.recalled_v1)."""
    with engine.begin() as conn:
        [row] = evidence.get_many(conn, workspace_id, [evidence_id])
        chat_id = str(row.metadata["chat_id"])
        message_id = row.source_key.rsplit("/", 1)[-1]
        recall.redact_everywhere(
            conn,
            [workspace_id],
            chat_id=chat_id,
            message_id=message_id,
            recalled_at=datetime.now(UTC),
            now=datetime.now(UTC),
        )


def _draft_from(engine: Engine, ws: str, text: str) -> tuple[int, int]:
    """(evidence id, the machine draft synthesized from it alone)."""
    [evidence_id] = say(engine, W1, [text], workspace_id=ws, chat=f"oc_{ws}")
    synthesize(engine, W1, workspace_id=ws, chat=f"oc_{ws}")
    [draft] = [e for e in all_entries(engine, ws) if evidence_id in e.evidence_ids]
    assert draft.source in ("rule", "ai") and draft.status == "draft"
    return evidence_id, draft.id


def _app(engine: Engine) -> TestClient:
    settings = Settings(LarkTimelineSettings(), RuntimeEnvironment(LARK_VERIFICATION_TOKEN="vt"))
    return TestClient(create_app(settings, engine), raise_server_exceptions=False)


def _workspace(engine: Engine) -> str:
    ws = f"inc-{uuid.uuid4().hex[:8]}"
    incident(engine, ws, f"oc_{ws}")
    return ws


def test_a_machine_draft_written_only_from_the_recalled_message_loses_its_text(
    engine: Engine,
) -> None:
    ws = _workspace(engine)
    evidence_id, draft_id = _draft_from(engine, ws, ROLLBACK)
    with engine.begin() as conn:
        summaries.write_ai_summary(conn, ws, f"Summary: {ROLLBACK}", {}, now=datetime.now(UTC))
    _recall(engine, ws, evidence_id)
    with engine.connect() as conn:
        draft = entries.get(conn, draft_id)
        summary = summaries.get_summary(conn, ws)
    assert draft is not None and summary is not None
    assert (draft.title, draft.detail, draft.status) == (RECALLED_TEXT, None, "hidden")
    assert draft.recalled_evidence and draft.evidence_ids == (evidence_id,)
    # The automatic summary was written from it: its stale text goes, the sensor writes it anew.
    assert summary.content == RECALLED_TEXT and summary.metadata["stale"] == "recall"
    # A second delivery of the recall changes nothing.
    _recall(engine, ws, evidence_id)
    with engine.connect() as conn:
        again = entries.get(conn, draft_id)
    assert again is not None and again.revision == draft.revision


def test_a_confirmed_entry_keeps_its_text_and_is_flagged_in_the_api_and_on_the_page(
    engine: Engine,
) -> None:
    ws = _workspace(engine)
    evidence_id, draft_id = _draft_from(engine, ws, ROLLBACK)
    CurationService(engine).transition(
        ws, draft_id, Action.CONFIRM, expected_revision=None, actor="cli:tester"
    )
    _recall(engine, ws, evidence_id)
    with engine.connect() as conn:
        kept = entries.get(conn, draft_id)
    assert kept is not None and kept.status == "confirmed"
    assert "rolled back" in kept.title.lower() and kept.recalled_evidence
    with engine.begin() as conn:
        token = api_tokens.create(conn, ws).token
    with _app(engine) as client:
        body = client.get(
            f"/api/workspaces/{ws}/timeline", headers={"Authorization": f"Bearer {token}"}
        ).json()
        [shown] = [e for e in body["entries"] if e["id"] == draft_id]
        assert shown["recalled_evidence"] is True and shown["title"] == kept.title
        secret, _csrf = session(engine, ws)
        client.cookies.set(SESSION_COOKIE, secret, path="/ui")
        page = client.get(f"/ui/workspaces/{ws}")
    assert page.status_code == 200
    assert 'data-recalled="1"' in page.text and "Message recalled" in page.text


def test_a_pins_entry_and_its_reply_card_lose_the_recalled_text(engine: Engine) -> None:
    with pin_harness(engine) as h:
        message_id = h.say(SECRET)
        assert h.react(message_id).pinned == (h.workspace_id,)
        h.drain()
        [sent] = h.sent()
        assert SECRET in str(sent["card"])
        entry = h.pin_entry(message_id)
        assert entry is not None and entry.title == SECRET
        with engine.begin() as conn:
            recall.redact_everywhere(
                conn,
                [h.workspace_id],
                chat_id=PIN_CHAT,
                message_id=message_id,
                recalled_at=datetime.now(UTC),
                now=datetime.now(UTC),
            )
        redacted = h.pin_entry(message_id)
        assert redacted is not None
        assert (redacted.title, redacted.status) == (RECALLED_TEXT, "confirmed")
        assert redacted.recalled_evidence
        [reply] = h.replies()
        assert SECRET not in str(reply.request.as_json())
        # The card worker patches the reply in Lark through the card update call.
        h.drain()
        log = h.lark.store.card_log(sent["message_id"])
        assert [item["kind"] for item in log] == ["sent", "patched"]
        assert SECRET not in str(log[-1]["card"]) and RECALLED_TEXT in str(log[-1]["card"])
        with engine.begin() as conn:
            token = api_tokens.create(conn, h.workspace_id).token
        with _app(engine) as client:
            body = client.get(
                f"/api/workspaces/{h.workspace_id}/timeline",
                headers={"Authorization": f"Bearer {token}"},
            )
            secret, _csrf = session(engine, h.workspace_id)
            client.cookies.set(SESSION_COOKIE, secret, path="/ui")
            page = client.get(f"/ui/workspaces/{h.workspace_id}")
        assert body.status_code == 200 and SECRET not in body.text
        assert page.status_code == 200 and SECRET not in page.text


def test_a_recall_read_from_history_reaches_the_copies_too(engine: Engine) -> None:
    ws = _workspace(engine)
    evidence_id, draft_id = _draft_from(engine, ws, ROLLBACK)
    with engine.begin() as conn:
        [row] = evidence.get_many(conn, ws, [evidence_id])
        workspace = workspaces.get(conn, ws)
        assert workspace is not None
        message = _deleted(row.source_key.rsplit("/", 1)[-1], f"oc_{ws}", row.occurred_at)
        result = ingest(conn, [message], [workspace], settings(), datetime.now(UTC))
    assert result.upserts.updated == 1
    with engine.connect() as conn:
        draft = entries.get(conn, draft_id)
    assert draft is not None and draft.title == RECALLED_TEXT and draft.recalled_evidence


def _deleted(message_id: str, chat_id: str, at: datetime) -> NormalizedLarkMessage:
    return NormalizedLarkMessage(
        message_id=message_id,
        chat_id=chat_id,
        chat_type="group",
        thread_id=None,
        root_id=None,
        parent_id=None,
        sender_id="ou_responder",
        sender_type="user",
        message_type="text",
        text="",
        created_at=at,
        updated_at=datetime.now(UTC),
        deleted=True,
        ai_eligible=False,
        metadata={"chat_id": chat_id, "message_type": "text"},
    )


def test_under_a_hold_the_text_is_hidden_and_kept_aside(engine: Engine) -> None:
    ws = _workspace(engine)
    evidence_id, draft_id = _draft_from(engine, ws, ROLLBACK)
    with engine.begin() as conn:
        create_hold(
            conn,
            default_registry(),
            workspace_id=ws,
            descriptor_key=None,
            reason="preservation notice 34",
            idempotency_key=f"hold-{ws}",
            actor="cli:tester",
        )
    [before] = [e for e in all_entries(engine, ws) if e.id == draft_id]
    _recall(engine, ws, evidence_id)
    with engine.connect() as conn:
        draft = entries.get(conn, draft_id)
        held = evidence.held_content(conn, ws, evidence_id)
        previews = conn.execute(select(window_rerun_previews.c.title)).scalars().all()
        stored = conn.execute(
            select(workspace_timeline_evidence.c.content).where(
                workspace_timeline_evidence.c.id == evidence_id
            )
        ).scalar_one()
    assert draft is not None and draft.title == RECALLED_TEXT  # hidden from readers
    assert draft.metadata[entries.HELD_TEXT_KEY]["title"] == before.title  # kept aside
    assert held is not None and stored == ""
    assert ROLLBACK not in str(previews)
