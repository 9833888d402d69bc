"""Sign-in links work once within their TTL; sessions end when they expire or are revoked."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine, select

from timeline_pipeline.db.schema import ui_sessions as sessions_table
from timeline_pipeline.db.schema import ui_signin_links
from timeline_pipeline.store import ui_sessions, workspaces
from timeline_pipeline.store.workspaces import WorkspaceNotFound

NOW = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
TTL = timedelta(minutes=10)


@pytest.fixture
def workspace(engine: Engine) -> str:
    with engine.begin() as conn:
        workspaces.create(conn, "inc-1")
        workspaces.create(conn, "inc-2")
    return "inc-1"


def test_a_link_works_once_and_only_its_hash_is_stored(engine: Engine, workspace: str) -> None:
    with engine.begin() as conn:
        link = ui_sessions.create_link(conn, workspace, now=NOW, ttl=TTL)
        stored = conn.execute(select(ui_signin_links)).one()
    assert link.token not in tuple(str(value) for value in stored)
    with engine.begin() as conn:
        assert ui_sessions.redeem_link(conn, link.token, now=NOW + TTL / 2) == (link.id, workspace)
    with engine.begin() as conn:
        assert ui_sessions.redeem_link(conn, link.token, now=NOW + TTL / 2) is None


def test_an_expired_or_unknown_link_is_refused(engine: Engine, workspace: str) -> None:
    with engine.begin() as conn:
        link = ui_sessions.create_link(conn, workspace, now=NOW, ttl=TTL)
        assert ui_sessions.redeem_link(conn, link.token, now=NOW + TTL) is None
        assert ui_sessions.redeem_link(conn, "x" * 43, now=NOW) is None
        assert ui_sessions.redeem_link(conn, "", now=NOW) is None
        assert ui_sessions.redeem_link(conn, "x" * 500, now=NOW) is None


def test_a_link_for_a_missing_workspace_is_not_created(engine: Engine, workspace: str) -> None:
    with engine.begin() as conn, pytest.raises(WorkspaceNotFound):
        ui_sessions.create_link(conn, "nope", now=NOW, ttl=TTL)


def test_a_session_lasts_its_ttl_and_ends_when_the_workspace_revokes_it(
    engine: Engine, workspace: str
) -> None:
    with engine.begin() as conn:
        mine = ui_sessions.open_session(conn, workspace, link_id=None, now=NOW, ttl=TTL)
        other = ui_sessions.open_session(conn, "inc-2", link_id=None, now=NOW, ttl=TTL)
        unused = ui_sessions.create_link(conn, workspace, now=NOW, ttl=TTL)
        hashes = conn.execute(select(sessions_table.c.session_hash)).scalars().all()
    assert mine.secret not in hashes
    with engine.begin() as conn:
        found = ui_sessions.session_for(conn, mine.secret, now=NOW + TTL / 2)
        assert found is not None and found.workspace_id == workspace
        assert ui_sessions.session_for(conn, mine.secret, now=NOW + TTL) is None
        assert ui_sessions.revoke_for_workspace(conn, workspace, now=NOW) == 1
        assert ui_sessions.session_for(conn, mine.secret, now=NOW) is None
        assert ui_sessions.redeem_link(conn, unused.token, now=NOW) is None
        assert ui_sessions.session_for(conn, other.secret, now=NOW) is not None
        [listed] = ui_sessions.sessions_of(conn, workspace)
    assert listed.id == mine.id and listed.revoked_at is not None


def test_signing_out_ends_that_session_only(engine: Engine, workspace: str) -> None:
    with engine.begin() as conn:
        first = ui_sessions.open_session(conn, workspace, link_id=None, now=NOW, ttl=TTL)
        second = ui_sessions.open_session(conn, workspace, link_id=None, now=NOW, ttl=TTL)
        assert ui_sessions.end_session(conn, first.secret, now=NOW)
        assert not ui_sessions.end_session(conn, first.secret, now=NOW)
        assert ui_sessions.session_for(conn, first.secret, now=NOW) is None
        assert ui_sessions.session_for(conn, second.secret, now=NOW) is not None
