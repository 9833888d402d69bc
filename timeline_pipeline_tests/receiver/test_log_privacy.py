"""Logs carry ids and reasons, never message content (docs/design.md §10, §12).

Real requests through the real app with one distinctive phrase in every message, on every path
that logs: stored, edited, recalled, refused, malformed, and a database error whose exception
text quotes the statement's parameters. The phrase must appear in no log line; the event ids,
which prove that the logs were captured, must.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from datetime import timedelta

import pytest
import structlog
from sqlalchemy import Engine, text

from timeline_pipeline.observability.logs import configure_logging
from timeline_pipeline_tests.receiver.conftest import ReceiverFactory, add_workspace
from timeline_pipeline_tests.receiver.lark_events import NOW, recall, receive

SECRET = "ACME-7731 zebra-quartz payroll"
"""Words that cannot occur by chance in ids or timestamps (digits alone can)."""


@pytest.fixture
def json_logs() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    handler = configure_logging(json=True, level=logging.DEBUG, stream=stream)
    try:
        yield stream
    finally:
        logging.getLogger().removeHandler(handler)
        logging.getLogger().setLevel(logging.WARNING)
        structlog.reset_defaults()


def refuse_inserts_for(engine: Engine, workspace_id: str) -> None:
    """A constraint-like failure raised inside the database for one workspace's rows."""
    with engine.begin() as conn:
        if engine.dialect.name == "sqlite":
            conn.execute(
                text(
                    f"""CREATE TRIGGER refuse BEFORE INSERT ON workspace_timeline_evidence
                    WHEN NEW.workspace_id = '{workspace_id}'
                    BEGIN SELECT RAISE(ABORT, 'refused'); END"""
                )
            )
        else:
            conn.execute(
                text(
                    f"""CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN
                    IF NEW.workspace_id = '{workspace_id}' THEN
                        RAISE EXCEPTION 'refused' USING ERRCODE = '23514';
                    END IF; RETURN NEW; END $$ LANGUAGE plpgsql;
                    CREATE TRIGGER refuse BEFORE INSERT ON workspace_timeline_evidence
                    FOR EACH ROW EXECUTE FUNCTION refuse();"""
                )
            )


def test_message_text_never_reaches_the_logs(
    make_receiver: ReceiverFactory,
    engine: Engine,
    json_logs: io.StringIO,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    add_workspace(engine, "inc-1")
    add_workspace(engine, "inc-poison", chats=("oc_poison",))
    refuse_inserts_for(engine, "inc-poison")
    receiver = make_receiver()
    at = NOW - timedelta(minutes=5)
    sent = {
        "stored": receive("om_1", SECRET, at=at),
        "edited": receive("om_1", SECRET + " (edited)", at=at, updated=at + timedelta(minutes=1)),
        "duplicate": receive(
            "om_1", SECRET + " (edited)", at=at, updated=at + timedelta(minutes=1)
        ),
        "recalled": recall("om_1"),
        "p2p": receive("om_2", SECRET, chat_type="p2p"),
        "unbound": receive("om_3", SECRET, chat_id="oc_nobody"),
        "malformed": receive("om_4", content='{"text": "' + SECRET + '"'),
        "database error": receive("om_5", SECRET, chat_id="oc_poison"),
    }
    forged = receive("om_6", SECRET)
    forged["header"]["token"] = "wrong"

    statuses = {name: receiver.post(payload).status_code for name, payload in sent.items()}
    statuses["forged"] = receiver.post(forged).status_code

    assert statuses == {
        "stored": 200,
        "edited": 200,
        "duplicate": 200,
        "recalled": 200,
        "p2p": 200,
        "unbound": 200,
        "malformed": 400,
        "database error": 503,
        "forged": 401,
    }
    logged = json_logs.getvalue()
    records = [json.loads(line) for line in logged.splitlines()]
    logged_ids = {record.get("event_id") for record in records}
    assert {payload["header"]["event_id"] for payload in sent.values()} <= logged_ids
    failed = next(r for r in records if r["event"] == "lark_event_failed")
    assert (failed["reason"], failed["message_id"], failed["chat_id"]) == (
        "binding_changed",
        "om_5",
        "oc_poison",
    )
    assert {"lark_event_accepted", "lark_event_ignored", "lark_event_rejected"} <= {
        record["event"] for record in records
    }
    captured = capsys.readouterr()
    for place in (logged, caplog.text, captured.out, captured.err):
        assert "ACME-7731" not in place
        assert "zebra-quartz" not in place
