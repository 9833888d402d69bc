"""Curation over HTTP: every change names the revision it was based on (body `revision` or the
ETag as If-Match); a stale one is 409, and every refusal leaves the timeline as it was."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from timeline_pipeline_tests.api.conftest import Served, bearer
from timeline_pipeline_tests.curation.support import (
    IMPACT,
    ROLLBACK,
    W1,
    entry_titled,
    say,
    snapshot,
    synthesize,
)

WS = "/api/workspaces/inc-1"


def test_a_curator_confirms_hides_restores_edits_adds_and_summarizes(served: Served) -> None:
    evidence = say(served.engine, W1, [IMPACT, ROLLBACK])
    synthesize(served.engine, W1)
    client, auth = served.client, served.auth
    entry = entry_titled(served.engine, "rolled back")
    path = f"{WS}/entries/{entry.id}"

    read = client.get(path, headers=auth)
    assert read.status_code == 200 and read.headers["etag"] == f'"e{entry.id}.r1"'
    confirmed = client.post(f"{path}/confirm", json={"revision": 1}, headers=auth)
    assert confirmed.status_code == 200
    assert (confirmed.json()["status"], confirmed.json()["revision"]) == ("confirmed", 2)
    # The ETag of one answer is the precondition of the next change.
    hidden = client.post(f"{path}/hide", headers={**auth, "If-Match": confirmed.headers["etag"]})
    assert hidden.status_code == 200 and hidden.json()["status"] == "hidden"
    restored = client.post(f"{path}/restore", json={"revision": 3}, headers=auth)
    assert restored.json()["status"] == "draft"  # a machine entry comes back as a draft
    edited = client.patch(
        path,
        json={"title": "Rolled back payments-api to v41", "detail": "v42 leaked connections"},
        headers={**auth, "If-Match": restored.headers["etag"]},
    )
    assert edited.status_code == 200
    body = edited.json()
    assert body["human_edited"] and body["revision"] == 5
    assert (body["title"], body["detail"]) == (
        "Rolled back payments-api to v41",
        "v42 leaked connections",
    )
    assert body["evidence_ids"] == [evidence[1]]
    cleared = client.patch(path, json={"revision": 5, "detail": None}, headers=auth)
    assert cleared.json()["detail"] is None

    added = client.post(
        f"{WS}/entries",
        json={
            "occurred_at": "2026-11-29T10:05:00+01:00",
            "title": "  Paged the database on-call  ",
            "category": "decision",
            "evidence_ids": [evidence[0]],
        },
        headers=auth,
    )
    assert added.status_code == 201
    new = added.json()
    assert added.headers["location"] == f"{WS}/entries/{new['id']}"
    assert (new["source"], new["status"], new["title"]) == (
        "human",
        "confirmed",
        "Paged the database on-call",
    )
    assert new["occurred_at"] == "2026-11-29T09:05:00Z" and new["evidence_ids"] == [evidence[0]]

    assert client.get(f"{WS}/summary", headers=auth).status_code == 404
    first = client.put(f"{WS}/summary", json={"content": "EU checkout slow."}, headers=auth)
    assert first.status_code == 200 and first.json()["source"] == "human"
    second = client.put(
        f"{WS}/summary",
        json={"content": "EU checkout slow; rolled back."},
        headers={**auth, "If-Match": first.headers["etag"]},
    )
    assert second.json()["revision"] == 2
    current = client.get(f"{WS}/summary", headers=auth)
    assert current.json()["content"] == "EU checkout slow; rolled back."
    assert current.headers["etag"] == second.headers["etag"]


@dataclass(frozen=True)
class Refused:
    """A request, the status it must get and the `detail.code` (None: a validation list)."""

    what: str
    method: str
    url: str
    status: int
    code: str | None
    json: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None


def test_every_refusal_is_a_clear_4xx_and_changes_nothing(served: Served) -> None:
    evidence = say(served.engine, W1, [ROLLBACK])
    synthesize(served.engine, W1)
    other = say(served.engine, W1, [IMPACT], workspace_id="inc-2", chat="oc_other")
    synthesize(served.engine, W1, workspace_id="inc-2", chat="oc_other")
    client, auth = served.client, served.auth
    entry = entry_titled(served.engine, "rolled back")
    foreign = entry_titled(served.engine, "checkout", workspace_id="inc-2")
    assert client.put(f"{WS}/summary", json={"content": "first"}, headers=auth).status_code == 200
    one = f"{WS}/entries/{entry.id}"
    new = {"occurred_at": "2026-11-29T10:00:00Z", "title": "x", "category": "impact"}
    etag = f'"e{entry.id}.r1"'
    refusals = [
        Refused("stale revision", "POST", f"{one}/confirm", 409, "stale_revision", {"revision": 7}),
        Refused("stale ETag", "PATCH", one, 409, "stale_revision", {"title": "x"},
                {"If-Match": f'"e{entry.id}.r0"'}),
        Refused("another entry's ETag", "POST", f"{one}/hide", 409, "stale_revision",
                headers={"If-Match": '"e999.r1"'}),
        Refused("no revision at all", "POST", f"{one}/hide", 428, "revision_required"),
        Refused("no revision, edit", "PATCH", one, 428, "revision_required", {"title": "x"}),
        Refused("malformed If-Match", "POST", f"{one}/hide", 400, "invalid_if_match",
                headers={"If-Match": "r1"}),
        Refused("weak If-Match", "POST", f"{one}/hide", 400, "invalid_if_match",
                headers={"If-Match": f"W/{etag}"}),
        Refused("revision and If-Match disagree", "POST", f"{one}/hide", 400, "invalid_if_match",
                {"revision": 2}, {"If-Match": etag}),
        Refused("invalid transition", "POST", f"{one}/restore", 409, "invalid_transition",
                {"revision": 1}),
        Refused("unknown entry", "POST", f"{WS}/entries/99999/confirm", 404, "entry_not_found",
                {"revision": 1}),
        Refused("another workspace's entry", "GET", f"{WS}/entries/{foreign.id}", 404,
                "entry_not_found"),
        Refused("another workspace's entry, changed", "POST",
                f"{WS}/entries/{foreign.id}/hide", 404, "entry_not_found", {"revision": 1}),
        Refused("oversized title", "PATCH", one, 422, None, {"revision": 1, "title": "x" * 513}),
        # The schema states these (a pattern), so they are its validation errors.
        Refused("blank title", "PATCH", one, 422, None, {"revision": 1, "title": " "}),
        Refused("NUL in a title", "PATCH", one, 422, None, {"revision": 1, "title": "a\x00b"}),
        Refused("a status is not edited", "PATCH", one, 422, None,
                {"revision": 1, "status": "confirmed"}),
        Refused("nothing to edit", "PATCH", one, 422, "invalid_input", {"revision": 1}),
        Refused("unknown category", "POST", f"{WS}/entries", 422, None,
                {**new, "category": "gossip"}),
        Refused("naive time", "POST", f"{WS}/entries", 422, None,
                {**new, "occurred_at": "2026-11-29T10:00:00"}),
        Refused("year 1", "POST", f"{WS}/entries", 422, "invalid_input",
                {**new, "occurred_at": "0001-01-01T00:00:00+05:00"}),
        Refused("another workspace's evidence", "POST", f"{WS}/entries", 422, "invalid_input",
                {**new, "evidence_ids": other}),
        Refused("oversized summary", "PUT", f"{WS}/summary", 422, None,
                {"content": "x" * 20_001, "revision": 1}),
        Refused("summary over an unseen revision", "PUT", f"{WS}/summary", 409,
                "stale_revision", {"content": "mine"}),
        Refused("a lone surrogate", "PUT", f"{WS}/summary", 422, None,
                raw=b'{"content": "\\ud800", "revision": 1}'),
    ]  # fmt: skip
    before = snapshot(served.engine)
    for case in refusals:
        headers = {**auth, **case.headers}
        if case.raw is not None:
            headers["Content-Type"] = "application/json"
        response = client.request(
            case.method, case.url, json=case.json, content=case.raw, headers=headers
        )
        assert response.status_code == case.status, (case.what, response.text)
        detail = response.json()["detail"]
        if case.code is None:
            assert isinstance(detail, list) and detail[0]["loc"], case.what
        else:
            assert (detail["code"], bool(detail["message"])) == (case.code, True), case.what
        assert snapshot(served.engine) == before, case.what
    stale = client.post(f"{one}/confirm", json={"revision": 7}, headers=auth).json()
    assert stale["detail"]["current_revision"] == 1
    current = stale["detail"]["current"]  # the entry as it is now, to show before retrying
    assert (current["revision"], current["status"]) == (1, "draft")
    assert current == client.get(one, headers=auth).json()
    assert evidence
    assert client.get(one, headers=bearer(served.other_token)).status_code == 403
