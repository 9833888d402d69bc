"""Legal holds on both databases: create and release apart, idempotent, audited, never
released by a date."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import Engine, select

from timeline_pipeline.db.schema import audit_events
from timeline_pipeline.domain.errors import IdempotencyConflict, InvalidInput
from timeline_pipeline.lifecycle.dry_run import dry_run
from timeline_pipeline.lifecycle.errors import HoldNotActive, HoldNotFound, UnknownDescriptorKey
from timeline_pipeline.lifecycle.holds import create_hold, release_hold
from timeline_pipeline.lifecycle.registry import load_registry
from timeline_pipeline.store import legal_holds
from timeline_pipeline.store.workspaces import WorkspaceNotFound
from timeline_pipeline_tests.lifecycle.support import AS_OF, EVIDENCE, OLD, evidence, workspace

REASON = "litigation matter 2026-17"


def hold(engine: Engine, key: str = "k1", **kw: object) -> legal_holds.HoldRow:
    args: dict[str, object] = {
        "workspace_id": "inc-1",
        "descriptor_key": None,
        "reason": REASON,
        "idempotency_key": key,
        "actor": "counsel",
        **kw,
    }
    with engine.begin() as conn:
        return create_hold(conn, load_registry(), **args).hold  # type: ignore[arg-type]


def audit(engine: Engine) -> list[tuple[str, str]]:
    with engine.connect() as conn:
        rows = conn.execute(
            select(audit_events.c.action, audit_events.c.subject_id).order_by(audit_events.c.id)
        )
        return [(r.action, r.subject_id) for r in rows]


@pytest.fixture
def ws(engine: Engine) -> Engine:
    workspace(engine, "inc-1")
    return engine


def test_creating_a_hold_twice_with_one_key_makes_one_hold_and_one_audit_event(
    ws: Engine,
) -> None:
    first = hold(ws)
    again = hold(ws)
    assert again.id == first.id
    assert first.status == "active"
    assert audit(ws) == [("lifecycle.hold.create", first.id)]


def test_the_same_create_key_with_other_input_is_refused_and_changes_nothing(ws: Engine) -> None:
    hold(ws)
    with pytest.raises(IdempotencyConflict, match="other input"):
        hold(ws, reason="another matter entirely")
    with ws.connect() as conn:
        assert len(legal_holds.list_all(conn)) == 1


def test_a_hold_on_an_unknown_workspace_or_descriptor_is_refused(ws: Engine) -> None:
    with pytest.raises(WorkspaceNotFound):
        hold(ws, workspace_id="inc-404")
    with pytest.raises(UnknownDescriptorKey):
        hold(ws, descriptor_key="evidence.nope")
    with pytest.raises(InvalidInput, match="at least 10"):
        hold(ws, key="k2", reason="short")


def test_release_needs_a_long_enough_reason_and_an_idempotency_key(ws: Engine) -> None:
    made = hold(ws)
    with ws.begin() as conn:
        with pytest.raises(InvalidInput, match="at least 10 characters"):
            release_hold(conn, hold_id=made.id, reason="done", idempotency_key="r1", actor="c")
        with pytest.raises(InvalidInput, match="idempotency key is required"):
            release_hold(conn, hold_id=made.id, reason=REASON, idempotency_key=None, actor="c")
        with pytest.raises(InvalidInput, match="idempotency key is required"):
            release_hold(conn, hold_id=made.id, reason=REASON, idempotency_key="  ", actor="c")
    with ws.connect() as conn:
        assert legal_holds.get(conn, made.id).status == "active"  # type: ignore[union-attr]


def test_release_is_idempotent_audited_and_final(ws: Engine) -> None:
    made = hold(ws)
    why = "matter settled, counsel approved release"
    with ws.begin() as conn:
        released = release_hold(conn, hold_id=made.id, reason=why, idempotency_key="r1", actor="c")
    with ws.begin() as conn:
        again = release_hold(conn, hold_id=made.id, reason=why, idempotency_key="r1", actor="c")
    assert released.changed and not again.changed
    assert again.hold.status == "released"
    assert again.hold.release_reason == why
    with ws.begin() as conn, pytest.raises(IdempotencyConflict):
        release_hold(conn, hold_id=made.id, reason=why + "!", idempotency_key="r1", actor="c")
    with ws.begin() as conn, pytest.raises(HoldNotActive):
        release_hold(conn, hold_id=made.id, reason=why, idempotency_key="r2", actor="c")
    with ws.begin() as conn, pytest.raises(HoldNotFound):
        release_hold(conn, hold_id="hold_nope", reason=why, idempotency_key="r3", actor="c")
    assert audit(ws) == [
        ("lifecycle.hold.create", made.id),
        ("lifecycle.hold.release", made.id),
    ]


def test_a_review_date_in_the_past_never_releases_a_hold(ws: Engine) -> None:
    evidence(ws, "inc-1", [OLD])
    made = hold(ws, review_at=OLD)
    with ws.connect() as conn:
        report = dry_run(
            conn, load_registry(), descriptor_key=EVIDENCE, as_of=AS_OF + timedelta(days=900)
        )
        assert legal_holds.get(conn, made.id).status == "active"  # type: ignore[union-attr]
    (d,) = report.descriptors
    assert (d.eligible, d.held, d.purgeable) == (1, 1, 0)
