"""A hold keeps every version (docs/lifecycle.md, "What a hold does to an edit"): an edit of a
held message sets the version it replaces aside before the new one is visible, on every path
that writes evidence (the shared write path, Lark's events, reconciliation and its refresh).
Real databases (SQLite and PostgreSQL), the real receiver and the local Lark simulator."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, select

from timeline_pipeline.db.schema import workspace_timeline_evidence as ev
from timeline_pipeline.domain.errors import LegalHoldActive
from timeline_pipeline.domain.evidence import UpsertSummary
from timeline_pipeline.ingest.writer import ingest
from timeline_pipeline.lark.normalize import redact
from timeline_pipeline.lifecycle import hold_gate
from timeline_pipeline.lifecycle.engine import PurgeEngine
from timeline_pipeline.lifecycle.holds import create_hold, release_hold
from timeline_pipeline.lifecycle.registry import load_registry
from timeline_pipeline.reconcile.planning import Mode
from timeline_pipeline.store import evidence
from timeline_pipeline_tests.ingest.test_writer import SETTINGS, bound, normalized
from timeline_pipeline_tests.receiver.conftest import (  # noqa: F401  (fixtures)
    ReceiverFactory,
    add_workspace,
    make_receiver,
)
from timeline_pipeline_tests.receiver.lark_events import NOW, receive
from timeline_pipeline_tests.reconcile.conftest import MakeHarness, make_harness  # noqa: F401
from timeline_pipeline_tests.reconcile.harness import NOW as RECONCILE_NOW
from timeline_pipeline_tests.reconcile.harness import messages

WS = "inc-1"
AT = NOW - timedelta(minutes=10)
SOON = NOW + timedelta(hours=1)
"""A purge at this instant redacts and drops what a released hold kept, and ages nothing out."""


def _hold(engine: Engine, workspace_id: str = WS, key: str = "notice-34") -> str:
    with engine.begin() as conn:
        return create_hold(
            conn,
            load_registry(),
            workspace_id=workspace_id,
            descriptor_key=None,
            reason="preservation notice 34",
            idempotency_key=key,
            actor="cli:counsel",
        ).hold.id


def _row(engine: Engine, message_id: str, workspace_id: str = WS) -> Any:
    with engine.connect() as conn:
        row = conn.execute(
            select(ev).where(
                ev.c.workspace_id == workspace_id, ev.c.source_key.like(f"%/message/{message_id}")
            )
        ).one()
        versions = evidence.held_versions_of(conn, workspace_id, row.id)
    return row, versions


def _texts(versions: list[dict[str, Any]]) -> list[str]:
    return [str(v["content"]) for v in versions]


def _write(engine: Engine, message_id: str, text: str, updated: datetime) -> UpsertSummary:
    targets = bound(engine)
    with engine.begin() as conn:
        return ingest(
            conn,
            [normalized(message_id, text, at=AT, updated=updated)],
            targets,
            SETTINGS,
            NOW,
        ).upserts


def test_every_edit_of_a_held_message_keeps_the_version_it_replaces(engine: Engine) -> None:
    add_workspace(engine, WS)
    add_workspace(engine, "inc-free")
    _hold(engine)
    _write(engine, "om_1", "card 4111 was charged twice", AT)
    _write(engine, "om_1", "card was charged twice", AT + timedelta(minutes=1))
    # a redelivery and an older version change nothing and keep nothing more
    assert _write(engine, "om_1", "card was charged twice", AT + timedelta(minutes=1)) == (
        UpsertSummary(duplicate=2)
    )
    _write(engine, "om_1", "an old draft", AT + timedelta(seconds=30))
    _write(engine, "om_1", "a payment was duplicated", AT + timedelta(minutes=2))

    row, versions = _row(engine, "om_1")
    assert row.content == "a payment was duplicated"
    assert _texts(versions) == ["card 4111 was charged twice", "card was charged twice"]
    assert [v["revision"] for v in versions] == [1, 2]
    assert versions[0]["content_hash"] != versions[1]["content_hash"]
    # the read of the row shows only the current version
    with engine.connect() as conn:
        assert evidence.get_many(conn, WS, [row.id])[0].content == "a payment was duplicated"
    # a workspace no hold reaches keeps nothing
    free, kept = _row(engine, "om_1", "inc-free")
    assert (free.content, free.held_content_json, kept) == ("a payment was duplicated", None, [])


def test_a_recall_after_edits_under_a_hold_keeps_every_version_and_the_release_drops_them(
    engine: Engine,
) -> None:
    add_workspace(engine, WS)
    hold_id = _hold(engine)
    _write(engine, "om_1", "v1 customer ACME", AT)
    _write(engine, "om_1", "v2 customer ACME-42", AT + timedelta(minutes=1))
    edited = normalized("om_1", "v2 customer ACME-42", at=AT, updated=AT)
    recalled = redact(edited, recalled_at=AT + timedelta(minutes=2))
    targets = bound(engine)
    with engine.begin() as conn:  # a recall read from history: the message, deleted
        ingest(conn, [recalled], targets, SETTINGS, NOW)
    row, versions = _row(engine, "om_1")
    assert (row.content, row.deleted) == ("", True)
    assert _texts(versions) == ["v1 customer ACME", "v2 customer ACME-42"]
    assert row.held_content_json["content"] == "v2 customer ACME-42"  # what the recall redacted

    with engine.begin() as conn:
        release_hold(
            conn,
            hold_id=hold_id,
            reason="matter closed, counsel approved",
            idempotency_key="release-34",
            actor="cli:counsel",
        )
    PurgeEngine(engine, load_registry()).run(workspace_id=WS, as_of=SOON)
    row, versions = _row(engine, "om_1")
    assert (row.held_content_json, versions) == (None, [])


def test_an_edited_live_message_drops_its_kept_versions_once_the_hold_is_released(
    engine: Engine,
) -> None:
    add_workspace(engine, WS)
    hold_id = _hold(engine)
    _write(engine, "om_1", "v1", AT)
    _write(engine, "om_1", "v2", AT + timedelta(minutes=1))
    PurgeEngine(engine, load_registry()).run(as_of=SOON)  # held: left alone
    assert _texts(_row(engine, "om_1")[1]) == ["v1"]
    with engine.begin() as conn:
        release_hold(
            conn,
            hold_id=hold_id,
            reason="matter closed, counsel approved",
            idempotency_key="release-34",
            actor="cli:counsel",
        )
    PurgeEngine(engine, load_registry()).run(as_of=SOON)
    row, versions = _row(engine, "om_1")
    assert (row.content, row.deleted, versions) == ("v2", False, [])


def test_a_hold_that_appears_during_an_edit_rolls_the_write_back(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gate asks again after the write: an edit of a workspace found free, written while a
    hold was being created, is rolled back, to be written (set aside) on its next delivery."""
    add_workspace(engine, WS)
    _write(engine, "om_1", "v1", AT)
    targets = bound(engine)
    message = normalized("om_1", "v2", at=AT, updated=AT + timedelta(minutes=1))
    real = hold_gate.held_workspaces

    with engine.begin() as conn:

        def then_hold(*args: Any) -> dict[str, list[str]]:
            found = real(*args)
            create_hold(
                conn,
                load_registry(),
                workspace_id=WS,
                descriptor_key=None,
                reason="preservation notice 34",
                idempotency_key="notice-34",
                actor="cli:counsel",
            )
            return found

        monkeypatch.setattr(hold_gate, "held_workspaces", then_hold)
        with pytest.raises(LegalHoldActive):
            ingest(conn, [message], targets, SETTINGS, NOW)
        conn.rollback()
    monkeypatch.undo()
    row, versions = _row(engine, "om_1")
    assert (row.content, versions) == ("v1", [])
    _hold(engine)
    _write(engine, "om_1", "v2", AT + timedelta(minutes=1))  # the redelivery
    row, versions = _row(engine, "om_1")
    assert (row.content, _texts(versions)) == ("v2", ["v1"])


def test_an_edit_event_of_a_held_message_keeps_the_version_it_replaces(
    make_receiver: ReceiverFactory,  # noqa: F811
    engine: Engine,
) -> None:
    add_workspace(engine, WS)
    receiver = make_receiver()
    _hold(engine)
    assert receiver.post(receive("om_1", "db password is hunter2", at=AT)).status_code == 200
    edit = receive("om_1", "db password rotated", at=AT, updated=AT + timedelta(minutes=1))
    assert receiver.post(edit).status_code == 200
    row, versions = _row(engine, "om_1")
    assert row.content == "db password rotated"
    assert _texts(versions) == ["db password is hunter2"]


@pytest.mark.parametrize("mode", [Mode.INCREMENTAL, Mode.REFRESH])
def test_reconciliation_and_its_refresh_keep_the_version_an_edit_replaces(
    make_harness: MakeHarness,  # noqa: F811
    mode: Mode,
) -> None:
    items = messages(3, start=RECONCILE_NOW - timedelta(minutes=30))
    edited = items[1]
    h = make_harness(items)
    h.workspace()
    h.run(now=RECONCILE_NOW)
    _hold(h.engine)
    original = next(r.content for r in h.evidence() if r.source_key.endswith(edited["message_id"]))
    h.sim.store.edit_message(
        edited["message_id"], {"text": "root cause: expired cert"}, at=RECONCILE_NOW
    )
    later = RECONCILE_NOW + timedelta(minutes=5)
    assert h.run(mode=mode, now=later).chats[0].upserts.updated == 1
    row, versions = _row(h.engine, edited["message_id"])
    assert row.content == "root cause: expired cert"
    assert _texts(versions) == [original]


def test_a_pins_read_of_an_edited_message_keeps_the_version_it_replaces(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pin reads a message no workspace of its curator had stored, from Lark, where it was
    edited since; meanwhile the receiver stored the first version in the held workspace. The
    pin's write goes through the shared path and keeps that version."""
    from datetime import UTC
    from datetime import datetime as clock

    from timeline_pipeline.lark.normalize import normalize_list_item
    from timeline_pipeline.pins.service import PinService
    from timeline_pipeline.store import workspaces
    from timeline_pipeline_tests.pins.harness import pin_harness

    with pin_harness(engine) as h:
        message_id = h.say("rollback of build 7781 failed", stored=False)
        item = h.lark.store.get(message_id)
        assert item is not None
        first = normalize_list_item(item, max_text_chars=4000, app_id=h.app_id)
        _hold(engine, h.workspace_id)
        h.lark.store.edit_message(message_id, {"text": "rollback of build 7781 succeeded"})
        read = PinService._collect

        def read_while_the_receiver_stores(self: PinService, wanted: str) -> Any:
            with engine.begin() as conn:
                held = workspaces.require(conn, h.workspace_id)
                ingest(conn, [first], [held], h.settings, clock.now(UTC), app_id=h.app_id)
            return read(self, wanted)

        monkeypatch.setattr(PinService, "_collect", read_while_the_receiver_stores)
        assert h.react(message_id).pinned == (h.workspace_id,)
        row, versions = _row(engine, message_id, h.workspace_id)
        assert row.content == "rollback of build 7781 succeeded"
        assert _texts(versions) == ["rollback of build 7781 failed"]
