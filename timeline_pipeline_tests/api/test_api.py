"""The timeline API of `serve`: authorization, the timeline, keyset-paged evidence, curation
with optimistic concurrency, and refusals that change nothing (SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from fastapi.testclient import TestClient

from timeline_pipeline.curation.links import message_applink
from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.http.app import create_app
from timeline_pipeline.settings import LarkTimelineSettings, RuntimeEnvironment, Settings
from timeline_pipeline.store import api_tokens
from timeline_pipeline.store import evidence as evidence_store
from timeline_pipeline_tests.api.conftest import Served, bearer
from timeline_pipeline_tests.curation.support import (
    IMPACT,
    ROLLBACK,
    ROOT_CAUSE,
    W1,
    entry_titled,
    say,
    snapshot,
    synthesize,
)
from timeline_pipeline_tests.windows.support import post

WS = "/api/workspaces/inc-1"


def requests(entry_id: int) -> list[tuple[str, str, dict[str, Any] | None]]:
    """Every route of the API, with a body that would succeed for the right token."""
    return [
        ("GET", f"{WS}/timeline", None),
        ("GET", f"{WS}/evidence", None),
        ("GET", f"{WS}/entries/{entry_id}", None),
        ("GET", f"{WS}/summary", None),
        ("POST", f"{WS}/entries/{entry_id}/confirm", {"revision": 1}),
        ("POST", f"{WS}/entries/{entry_id}/hide", {"revision": 1}),
        ("POST", f"{WS}/entries/{entry_id}/restore", {"revision": 1}),
        ("PATCH", f"{WS}/entries/{entry_id}", {"revision": 1, "title": "stolen"}),
        (
            "POST",
            f"{WS}/entries",
            {"occurred_at": "2026-11-29T10:00:00Z", "title": "x", "category": "impact"},
        ),
        ("PUT", f"{WS}/summary", {"content": "stolen", "revision": None}),
    ]


def test_without_a_token_of_the_workspace_nothing_is_read_or_changed(served: Served) -> None:
    say(served.engine, W1, [ROLLBACK])
    synthesize(served.engine, W1)
    entry = entry_titled(served.engine, "rolled back")
    revoked = served.token
    with served.engine.begin() as conn:
        (info,) = api_tokens.list_for(conn, "inc-1")
        api_tokens.revoke(conn, info.id)
    before = snapshot(served.engine)
    credentials: list[tuple[dict[str, str], int, str]] = [
        ({}, 401, "unauthenticated"),
        ({"Authorization": "Basic aW5jLTE6eA=="}, 401, "unauthenticated"),
        (bearer("tlp_not-a-token"), 401, "invalid_token"),
        (bearer(revoked), 401, "invalid_token"),
        (bearer(served.other_token), 403, "forbidden"),
    ]
    for method, path, body in requests(entry.id):
        for headers, status, code in credentials:
            response = served.client.request(method, path, json=body, headers=headers)
            assert response.status_code == status, (method, path, headers)
            assert response.json() == {
                "detail": {"code": code, "message": response.json()["detail"]["message"]}
            }
            if status == 401:
                assert response.headers["www-authenticate"] == "Bearer"
    # Another workspace's token cannot learn whether a workspace exists.
    missing = served.client.get("/api/workspaces/nope/timeline", headers=bearer(served.other_token))
    assert missing.status_code == 403
    assert snapshot(served.engine) == before


def test_the_timeline_shows_entries_with_their_evidence_links_and_the_summary(
    served: Served,
) -> None:
    evidence = say(served.engine, W1, [IMPACT, ROLLBACK, ROOT_CAUSE])
    synthesize(served.engine, W1)
    client, auth = served.client, served.auth
    root_cause = entry_titled(served.engine, "root cause")
    hidden = client.post(f"{WS}/entries/{root_cause.id}/hide", json={"revision": 1}, headers=auth)
    assert hidden.status_code == 200
    put = client.put(
        f"{WS}/summary", json={"content": "EU checkout slow; rolled back."}, headers=auth
    )
    assert put.status_code == 200

    body = client.get(f"{WS}/timeline", headers=auth).json()
    assert body["statuses"] == ["draft", "confirmed"]
    assert [e["title"] for e in body["entries"]] == [
        "Checkout latency is above 2s for all EU customers",
        "We rolled back the deploy of payments-api to v41",
    ]
    first = body["entries"][0]
    assert first["evidence_ids"] == [evidence[0]]
    (link,) = first["links"]
    with served.engine.connect() as conn:
        (row,) = evidence_store.get_many(conn, "inc-1", [evidence[0]])
    message_id = row.source_key.rpartition("/message/")[2]
    assert link == {
        "evidence_id": evidence[0],
        "occurred_at": row.occurred_at.isoformat().replace("+00:00", "Z"),
        "url": message_applink("oc_chat", message_id),
    }
    assert first["etag"] == f'"e{first["id"]}.r1"' and first["status"] == "draft"
    assert body["summary"]["content"] == "EU checkout slow; rolled back."
    assert body["summary"]["source"] == "human"
    assert body["next_cursor"] is None

    only_hidden = client.get(f"{WS}/timeline", params={"status": "hidden"}, headers=auth).json()
    assert [e["id"] for e in only_hidden["entries"]] == [root_cause.id]
    everything = client.get(
        f"{WS}/timeline",
        params={"status": ["hidden", "draft", "confirmed"], "limit": 2},
        headers=auth,
    ).json()
    assert len(everything["entries"]) == 2 and everything["next_cursor"]
    rest = client.get(
        f"{WS}/timeline",
        params={"status": ["hidden", "draft", "confirmed"], "after": everything["next_cursor"]},
        headers=auth,
    ).json()
    assert [e["id"] for e in rest["entries"]] == [root_cause.id] and rest["next_cursor"] is None
    # A cursor belongs to the listing it came from.
    other_listing = client.get(
        f"{WS}/timeline", params={"after": everything["next_cursor"]}, headers=auth
    )
    assert other_listing.status_code == 400
    assert client.get(f"{WS}/timeline", params={"status": "gone"}, headers=auth).status_code == 422


def test_evidence_pages_by_keyset_across_equal_timestamps(served: Served) -> None:
    engine, client, auth = served.engine, served.client, served.auth
    same = W1 + timedelta(minutes=3)
    (early,) = post(engine, [W1 + timedelta(minutes=1)], prefix="a")
    tied = [post(engine, [same], prefix=f"s{i}")[0] for i in range(7)]  # seven equal times
    (late,) = post(engine, [W1 + timedelta(minutes=5)], prefix="z")
    for i in range(2):
        post(engine, [same], workspace_id="inc-2", chat_id="oc_other", prefix=f"o{i}")

    seen: list[int] = []
    cursor: str | None = None
    pages = 0
    written_meanwhile: list[int] = []
    while True:
        params: dict[str, Any] = {"limit": 3, **({"after": cursor} if cursor else {})}
        response = client.get(f"{WS}/evidence", params=params, headers=auth)
        assert response.status_code == 200
        body = response.json()
        assert set(body) == {"items", "next_cursor"}
        seen += [item["id"] for item in body["items"]]
        pages += 1
        if pages == 2:
            # Stored while paging, at the tied time: after the cursor, so on a later page.
            written_meanwhile = post(engine, [same], prefix="meanwhile")
        cursor = body["next_cursor"]
        if cursor is None:
            break
    # (occurred_at, id) order: ties by id, each row exactly once, none skipped.
    assert seen == [early, *tied, *written_meanwhile, late]
    assert pages == 4

    first = client.get(f"{WS}/evidence", params={"limit": 2}, headers=auth).json()
    item = first["items"][0]
    assert item["id"] == early and item["link"].startswith("https://applink.larksuite.com/")
    assert item["content"] == "checkout latency is above 2s for all EU customers"
    # A cursor cannot be forged, nor used for another workspace.
    token = first["next_cursor"]
    payload, mac = token.split(".")
    forged = ("A" if payload[0] != "A" else "B") + payload[1:] + "." + mac
    for bad in (forged, token[:-2], "garbage", token + ".", "é.é"):
        answer = client.get(f"{WS}/evidence", params={"after": bad}, headers=auth)
        assert answer.status_code == 400, bad
        assert answer.json()["detail"]["code"] == "invalid_cursor"
    assert (
        client.get(f"{WS}/evidence", params={"after": "x" * 300}, headers=auth).status_code == 422
    )
    other = client.get(
        "/api/workspaces/inc-2/evidence", params={"limit": 1}, headers=bearer(served.other_token)
    ).json()
    foreign = client.get(f"{WS}/evidence", params={"after": other["next_cursor"]}, headers=auth)
    assert foreign.status_code == 400 and foreign.json()["detail"]["code"] == "invalid_cursor"
    # The page size is capped, not refused; below one is refused.
    capped = client.get(f"{WS}/evidence", params={"limit": 10**6}, headers=auth)
    assert capped.status_code == 200 and len(capped.json()["items"]) == 10
    assert client.get(f"{WS}/evidence", params={"limit": 0}, headers=auth).status_code == 422


def test_a_database_that_does_not_answer_is_a_503_not_a_500() -> None:
    engine = make_engine("postgresql+psycopg://nobody@127.0.0.1:1/none", null_pool=True)
    settings = Settings(LarkTimelineSettings(), RuntimeEnvironment(LARK_VERIFICATION_TOKEN="vt"))
    with TestClient(create_app(settings, engine), raise_server_exceptions=False) as client:
        response = client.get(f"{WS}/timeline", headers=bearer("tlp_x"))
    assert response.status_code == 503
    assert response.json()["detail"]["code"] == "database_unavailable"
