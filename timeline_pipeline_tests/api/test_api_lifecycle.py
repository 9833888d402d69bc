"""Legal holds over the API: create and release are separate scopes, idempotent, refused with
a reason, and the timeline scopes give neither."""

from __future__ import annotations

from sqlalchemy import Engine

from timeline_pipeline.store import api_tokens, legal_holds
from timeline_pipeline_tests.api.conftest import Served, bearer

HOLDS = "/api/workspaces/inc-1/lifecycle/holds"
REASON = {"reason": "preservation notice 2026-17"}
RELEASE = {"reason": "matter closed, counsel approved"}


def scoped(engine: Engine, *scopes: str, workspace_id: str = "inc-1") -> dict[str, str]:
    with engine.begin() as conn:
        return bearer(api_tokens.create(conn, workspace_id, scopes).token)


def key(value: str) -> dict[str, str]:
    return {"Idempotency-Key": value}


def test_a_creator_token_creates_a_hold_once_per_idempotency_key(served: Served) -> None:
    creator = scoped(served.engine, api_tokens.SCOPE_HOLD_CREATE)
    first = served.client.post(HOLDS, json=REASON, headers={**creator, **key("k1")})
    again = served.client.post(HOLDS, json=REASON, headers={**creator, **key("k1")})
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["id"] == again.json()["id"]
    assert first.json()["status"] == "active"
    other = served.client.post(
        HOLDS, json={"reason": "another matter entirely"}, headers={**creator, **key("k1")}
    )
    assert other.status_code == 409
    assert other.json()["detail"]["code"] == "idempotency_conflict"


def test_create_and_release_are_separate_scopes(served: Served) -> None:
    creator = scoped(served.engine, api_tokens.SCOPE_HOLD_CREATE)
    releaser = scoped(served.engine, api_tokens.SCOPE_HOLD_RELEASE)
    denied = served.client.post(HOLDS, json=REASON, headers={**releaser, **key("k1")})
    assert denied.status_code == 403
    assert denied.json()["detail"]["code"] == "insufficient_scope"
    for timeline_token in (served.auth,):
        assert (
            served.client.post(
                HOLDS, json=REASON, headers={**timeline_token, **key("k2")}
            ).status_code
            == 403
        )
    hold_id = served.client.post(HOLDS, json=REASON, headers={**creator, **key("k3")}).json()["id"]
    release = f"{HOLDS}/{hold_id}/release"
    assert (
        served.client.post(release, json=RELEASE, headers={**creator, **key("r1")}).status_code
        == 403
    )
    with served.engine.connect() as conn:
        assert legal_holds.get(conn, hold_id).status == "active"  # type: ignore[union-attr]
    done = served.client.post(release, json=RELEASE, headers={**releaser, **key("r1")})
    assert done.status_code == 200
    assert done.json()["status"] == "released"
    # A hold token reads no timeline.
    assert served.client.get("/api/workspaces/inc-1/timeline", headers=creator).status_code == 403


def test_a_release_without_a_reason_or_a_key_is_refused_and_changes_nothing(
    served: Served,
) -> None:
    creator = scoped(served.engine, api_tokens.SCOPE_HOLD_CREATE)
    releaser = scoped(served.engine, api_tokens.SCOPE_HOLD_RELEASE)
    hold_id = served.client.post(HOLDS, json=REASON, headers={**creator, **key("k1")}).json()["id"]
    release = f"{HOLDS}/{hold_id}/release"
    no_key = served.client.post(release, json=RELEASE, headers=releaser)
    assert no_key.status_code == 422
    assert no_key.json()["detail"][0]["loc"] == ["header", "Idempotency-Key"]
    short = served.client.post(release, json={"reason": "done"}, headers={**releaser, **key("r")})
    assert short.status_code == 422
    foreign = scoped(served.engine, api_tokens.SCOPE_HOLD_RELEASE, workspace_id="inc-2")
    elsewhere = served.client.post(
        f"/api/workspaces/inc-2/lifecycle/holds/{hold_id}/release",
        json=RELEASE,
        headers={**foreign, **key("r2")},
    )
    assert elsewhere.status_code == 404
    with served.engine.connect() as conn:
        assert legal_holds.get(conn, hold_id).status == "active"  # type: ignore[union-attr]


def test_who_placed_and_released_a_hold_is_the_token_and_the_audit_is_critical(
    served: Served,
) -> None:
    from sqlalchemy import select

    from timeline_pipeline.db.schema import api_tokens as tokens_table
    from timeline_pipeline.store.audit import events_for

    creator = scoped(served.engine, api_tokens.SCOPE_HOLD_CREATE)
    releaser = scoped(served.engine, api_tokens.SCOPE_HOLD_RELEASE)
    made = served.client.post(HOLDS, json=REASON, headers={**creator, **key("who-1")})
    hold_id = made.json()["id"]
    done = served.client.post(
        f"{HOLDS}/{hold_id}/release", json=RELEASE, headers={**releaser, **key("who-r1")}
    )
    with served.engine.connect() as conn:
        ids = [r.id for r in conn.execute(select(tokens_table.c.id).order_by(tokens_table.c.id))]
        events = events_for(conn, "legal_hold", hold_id)
    assert made.json()["created_by"].startswith("token:")
    assert made.json()["created_by"][len("token:") :] in ids
    assert done.json()["released_by"].startswith("token:")
    assert done.json()["released_by"] != made.json()["created_by"]
    assert [(e["action"], e["actor"], e["severity"]) for e in events] == [
        ("lifecycle.hold.create", made.json()["created_by"], "critical"),
        ("lifecycle.hold.release", done.json()["released_by"], "critical"),
    ]


def test_a_hold_that_would_hold_nothing_is_refused_with_a_reason(served: Served) -> None:
    creator = scoped(served.engine, api_tokens.SCOPE_HOLD_CREATE)
    body = {**REASON, "descriptor_key": "retired_partitions.lifecycle_retired_partitions"}
    refused = served.client.post(HOLDS, json=body, headers={**creator, **key("nothing-1")})
    assert refused.status_code == 422
    assert refused.json()["detail"]["code"] == "hold_holds_nothing"
    with served.engine.connect() as conn:
        assert legal_holds.list_all(conn) == []
