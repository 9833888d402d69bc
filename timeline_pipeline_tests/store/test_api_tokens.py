from __future__ import annotations

import pytest
from sqlalchemy import Engine, select

from timeline_pipeline.db.schema import api_tokens as api_tokens_table
from timeline_pipeline.security.credentials import hash_secret
from timeline_pipeline.store import api_tokens
from timeline_pipeline.store.api_tokens import TokenNotFound
from timeline_pipeline.store.workspaces import WorkspaceNotFound
from timeline_pipeline_tests.store.factories import make_workspace


def test_a_token_authorizes_its_workspace_only_and_is_stored_hashed(engine: Engine) -> None:
    make_workspace(engine, "inc-1")
    make_workspace(engine, "inc-2")
    with engine.begin() as conn:
        issued = api_tokens.create(conn, "inc-1")
    with engine.connect() as conn:
        assert api_tokens.authorize(conn, issued.token, "inc-1") is True
        assert api_tokens.authorize(conn, issued.token, "inc-2") is False
        assert api_tokens.authorize(conn, issued.token + "x", "inc-1") is None
        assert api_tokens.authorize(conn, "not-a-token", "inc-1") is None
        stored = conn.execute(select(api_tokens_table)).one()
    assert issued.token not in stored
    assert stored.token_hash == hash_secret(issued.token)


def test_a_revoked_token_no_longer_authorizes(engine: Engine) -> None:
    make_workspace(engine, "inc-1")
    with engine.begin() as conn:
        issued = api_tokens.create(conn, "inc-1")
        info = api_tokens.revoke(conn, issued.id)
        assert info.revoked_at is not None
        assert api_tokens.authorize(conn, issued.token, "inc-1") is None
        assert api_tokens.revoke(conn, issued.id).revoked_at == info.revoked_at  # idempotent


def test_unknown_workspace_or_token_is_refused(engine: Engine) -> None:
    with pytest.raises(WorkspaceNotFound), engine.begin() as conn:
        api_tokens.create(conn, "ghost")
    with pytest.raises(TokenNotFound), engine.begin() as conn:
        api_tokens.revoke(conn, "tok_missing")
