"""Curators over the API: who may decide drafts from the chat's review cards. Adding is
idempotent, removing a non-curator is 404, every change is audited, a read token cannot change
the list, and another workspace's token sees nothing of it."""

from __future__ import annotations

from sqlalchemy import Engine, select

from timeline_pipeline.db.schema import audit_events
from timeline_pipeline.store import api_tokens, workspaces
from timeline_pipeline_tests.api.conftest import Served, bearer

CURATORS = "/api/workspaces/inc-1/curators"


def _scoped(engine: Engine, *scopes: str) -> dict[str, str]:
    with engine.begin() as conn:
        return bearer(api_tokens.create(conn, "inc-1", scopes).token)


def _curator_audits(engine: Engine) -> list[tuple[str, str]]:
    with engine.connect() as conn:
        rows = conn.execute(
            select(audit_events.c.action, audit_events.c.subject_id)
            .where(audit_events.c.subject_type == "curator")
            .order_by(audit_events.c.id)
        )
        return [(r.action, r.subject_id) for r in rows]


def test_a_curator_is_added_once_listed_and_removed_with_an_audit_event_each(
    served: Served,
) -> None:
    first = served.client.put(f"{CURATORS}/ou_commander", headers=served.auth)
    again = served.client.put(f"{CURATORS}/ou_commander", headers=served.auth)
    assert (first.status_code, first.json()) == (201, {"open_id": "ou_commander", "created": True})
    assert (again.status_code, again.json()["created"]) == (200, False)
    listed = served.client.get(CURATORS, headers=served.auth)
    assert listed.json() == {"items": [{"open_id": "ou_commander", "created": None}]}
    with served.engine.connect() as conn:
        assert workspaces.curators_of(conn, "inc-1") == ["ou_commander"]

    gone = served.client.delete(f"{CURATORS}/ou_commander", headers=served.auth)
    assert gone.status_code == 204
    missing = served.client.delete(f"{CURATORS}/ou_commander", headers=served.auth)
    assert missing.status_code == 404
    assert missing.json()["detail"]["code"] == "curator_not_found"
    assert served.client.get(CURATORS, headers=served.auth).json() == {"items": []}
    assert _curator_audits(served.engine) == [
        ("curator.add", "ou_commander"),
        ("curator.remove", "ou_commander"),
    ]


def test_a_read_token_lists_curators_but_cannot_change_them(served: Served) -> None:
    reader = _scoped(served.engine, api_tokens.SCOPE_TIMELINE_READ)
    assert served.client.get(CURATORS, headers=reader).status_code == 200
    denied = served.client.put(f"{CURATORS}/ou_someone", headers=reader)
    assert denied.status_code == 403
    assert denied.json()["detail"]["code"] == "insufficient_scope"
    with served.engine.connect() as conn:
        assert workspaces.curators_of(conn, "inc-1") == []
    assert _curator_audits(served.engine) == []


def test_another_workspaces_token_and_a_malformed_open_id_change_nothing(served: Served) -> None:
    other = bearer(served.other_token)
    assert served.client.put(f"{CURATORS}/ou_intruder", headers=other).status_code == 403
    assert served.client.get(CURATORS, headers=other).status_code == 403
    for bad in ("ou%20space", "x" * 129, "ou_quote%27"):
        answer = served.client.put(f"{CURATORS}/{bad}", headers=served.auth)
        assert answer.status_code == 422, bad
    with served.engine.connect() as conn:
        assert workspaces.curators_of(conn, "inc-1") == []
    assert _curator_audits(served.engine) == []
