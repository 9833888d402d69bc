"""The page's HTTP rules on the real `serve` app and both databases: who may see and change a
workspace, CSRF, revision checks, evidence one keyset page at a time, polling and export."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from timeline_pipeline.curation.rules import Action
from timeline_pipeline.curation.service import CurationService, NewEntry
from timeline_pipeline.security.credentials import csrf_token
from timeline_pipeline.store import ui_sessions
from timeline_pipeline.ui.pages import SESSION_COOKIE
from timeline_pipeline_tests.curation.support import (
    ROLLBACK,
    W1,
    incident,
    say,
    snapshot,
    synthesize,
)
from timeline_pipeline_tests.ui.support import session, sign_in_token

ORIGIN = "http://testserver"


@dataclass
class Site:
    client: TestClient
    engine: Engine
    service: CurationService
    ws: str
    """A workspace with one synthesized draft, `draft_id`."""
    other: str
    """Another workspace, with a chat of its own."""
    chat: str
    draft_id: int

    def signed_in(self, workspace_id: str | None = None) -> dict[str, str]:
        secret, csrf = session(self.engine, workspace_id or self.ws)
        self.client.cookies.set(SESSION_COOKIE, secret, path="/ui")
        return {"X-CSRF-Token": csrf, "Origin": ORIGIN, "HX-Request": "true"}


@pytest.fixture
def site(served: tuple[TestClient, Engine]) -> Site:
    client, engine = served
    client.cookies.clear()
    suffix = uuid.uuid4().hex[:8]
    ws, other, chat = f"inc-{suffix}", f"other-{suffix}", f"oc_{suffix}"
    incident(engine, ws, chat)
    incident(engine, other, f"oc_other_{suffix}")
    say(engine, W1, [ROLLBACK], workspace_id=ws, chat=chat)
    synthesize(engine, W1, workspace_id=ws, chat=chat)
    service = CurationService(engine)
    [draft] = service.timeline(ws).entries
    return Site(client, engine, service, ws, other, chat, draft.id)


def test_without_a_session_every_page_is_401_and_shows_nothing(site: Site) -> None:
    page = f"/ui/workspaces/{site.ws}"
    for path in (page, f"{page}/entries", f"{page}/export.md"):
        answer = site.client.get(path)
        assert answer.status_code == 401
        assert "data-entry-id" not in answer.text and "rolled back" not in answer.text
    before = snapshot(site.engine)
    refused = site.client.post(
        f"/ui/workspaces/{site.ws}/entries/{site.draft_id}/confirm",
        data={"revision": "1"},
        headers={"Origin": ORIGIN},
    )
    assert refused.status_code == 401
    assert snapshot(site.engine) == before


def test_a_session_of_another_workspace_is_refused_everywhere_and_changes_nothing(
    site: Site,
) -> None:
    headers = site.signed_in(site.other)
    assert site.client.get(f"/ui/workspaces/{site.other}").status_code == 200
    before = snapshot(site.engine)
    for path in (
        f"/ui/workspaces/{site.ws}",
        f"/ui/workspaces/{site.ws}/entries",
        f"/ui/workspaces/{site.ws}/entries/{site.draft_id}/evidence",
        f"/ui/workspaces/{site.ws}/export.md",
    ):
        answer = site.client.get(path)
        assert answer.status_code == 403, path
        assert "rolled back" not in answer.text and site.ws not in answer.text
    confirm = site.client.post(
        f"/ui/workspaces/{site.ws}/entries/{site.draft_id}/confirm",
        data={"revision": "1"},
        headers=headers,
    )
    assert confirm.status_code == 403
    assert snapshot(site.engine) == before


def test_a_change_without_the_csrf_token_or_from_another_origin_is_refused(site: Site) -> None:
    headers = site.signed_in()
    path = f"/ui/workspaces/{site.ws}/entries/{site.draft_id}/confirm"
    before = snapshot(site.engine)
    attempts = [
        {**headers, "Origin": "http://evil.example"},
        {**headers, "X-CSRF-Token": "0" * 64},
        {k: v for k, v in headers.items() if k != "X-CSRF-Token"},
        {k: v for k, v in headers.items() if k != "Origin"},
    ]
    for attempt in attempts:
        answer = site.client.post(path, data={"revision": "1"}, headers=attempt)
        assert answer.status_code == 403, attempt
    assert snapshot(site.engine) == before
    # The same request from the page itself: the token as a form field works too.
    token = headers.pop("X-CSRF-Token")
    done = site.client.post(path, data={"revision": "1", "csrf_token": token}, headers=headers)
    assert done.status_code == 200
    assert 'data-status="confirmed"' in done.text
    assert site.service.entry(site.ws, site.draft_id).status == "confirmed"


def test_a_stale_revision_is_409_with_its_message_and_changes_nothing(site: Site) -> None:
    headers = site.signed_in()
    site.service.edit(site.ws, site.draft_id, {"title": "Rolled back to v41"},
                      expected_revision=1, actor="someone")  # fmt: skip
    before = snapshot(site.engine)
    for action, form in (
        ("confirm", {"revision": "1"}),
        ("edit", {"revision": "1", "title": "My title"}),
    ):
        answer = site.client.post(
            f"/ui/workspaces/{site.ws}/entries/{site.draft_id}/{action}", data=form, headers=headers
        )
        assert answer.status_code == 409
        assert "changed by someone else" in answer.text
        assert "Rolled back to v41" in answer.text  # the current version is shown
    assert snapshot(site.engine) == before


def test_an_edit_changes_only_what_the_form_changed(site: Site) -> None:
    headers = site.signed_in()
    form = site.client.get(f"/ui/workspaces/{site.ws}/entries/{site.draft_id}/edit").text
    fields = dict(re.findall(r'name="(\w+)" value="([^"]*)"', form))
    untouched = site.client.post(
        f"/ui/workspaces/{site.ws}/entries/{site.draft_id}/edit",
        data={**fields, "detail": ""},
        headers=headers,
    )
    assert untouched.status_code == 200
    assert site.service.entry(site.ws, site.draft_id).human_edited is False
    edited = site.client.post(
        f"/ui/workspaces/{site.ws}/entries/{site.draft_id}/edit",
        data={**fields, "title": "Rollback of payments-api to v41", "category": "mitigation"},
        headers=headers,
    )
    assert edited.status_code == 200 and "Human-edited" in edited.text
    view = site.service.entry(site.ws, site.draft_id)
    assert (view.title, view.category, view.human_edited) == (
        "Rollback of payments-api to v41", "mitigation", True,
    )  # fmt: skip


def test_evidence_opens_one_keyset_page_at_a_time(site: Site) -> None:
    texts = [f"pool saturation on shard {i}" for i in range(25)]
    ids = say(site.engine, W1, texts, workspace_id=site.ws, chat=site.chat,
              offset=timedelta(minutes=3))  # fmt: skip
    added = site.service.add(
        site.ws,
        NewEntry(datetime.now(UTC), "Pool saturation", "finding", evidence_ids=ids),
        actor="test",
    )
    site.signed_in()
    base = f"/ui/workspaces/{site.ws}/entries/{added.id}/evidence"
    first = site.client.get(base)
    assert first.status_code == 200
    assert first.text.count("data-evidence-id=") == 20
    assert first.text.count("Open in Lark") == 20
    assert "https://applink.larksuite.com/client/chat/open?" in first.text
    more = re.search(r'evidence\?(after=[^"]+)"', first.text)
    assert more is not None
    second = site.client.get(f"{base}?{more.group(1).replace('&amp;', '&')}")
    assert second.text.count("data-evidence-id=") == 5
    assert "Show more messages" not in second.text
    shown = re.findall(r'data-evidence-id="(\d+)"', first.text + second.text)
    assert [int(i) for i in shown] == ids
    assert site.client.get(f"{base}?after=forged.cursor").status_code == 400


def test_polling_answers_no_change_until_the_timeline_changes(site: Site) -> None:
    site.signed_in()
    region = site.client.get(f"/ui/workspaces/{site.ws}/entries").text
    version = re.search(r'data-version="(\w+)"', region)
    assert version is not None
    poll = f"/ui/workspaces/{site.ws}/entries?version={version.group(1)}"
    assert site.client.get(poll).status_code == 204
    site.service.add(
        site.ws, NewEntry(datetime.now(UTC), "Status page updated", "impact"), actor="test"
    )
    changed = site.client.get(poll)
    assert changed.status_code == 200
    assert "Status page updated" in changed.text


def test_the_export_is_the_markdown_of_the_timeline(site: Site) -> None:
    site.signed_in()
    answer = site.client.get(f"/ui/workspaces/{site.ws}/export.md")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/markdown")
    assert "attachment" in answer.headers["content-disposition"]
    assert answer.text.startswith("# Incident timeline: ")
    assert "| Time (UTC) | Category | Entry | Status | Evidence |" in answer.text


def _sign_in_form(page: str) -> dict[str, str]:
    token = re.search(r'name="token" value="([^"]+)"', page)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert token and csrf, "no sign-in form"
    return {"token": token.group(1), "csrf_token": csrf.group(1)}


def _set_cookie(answer: object, name: str) -> str:
    headers = answer.headers.get_list("set-cookie")  # type: ignore[attr-defined]
    [found] = [h for h in headers if h.startswith(f"{name}=")]
    return str(found)


def test_opening_a_sign_in_link_spends_nothing_and_its_button_signs_in(site: Site) -> None:
    token = sign_in_token(site.engine, site.ws)
    link = f"/ui/sign-in?token={token}"
    preview = site.client.get(link, headers={"User-Agent": "link-preview-bot"})
    assert preview.status_code == 200
    assert "Sign in" in preview.text and "set-cookie" not in {
        k.lower() for k, v in preview.headers.items() if v.startswith(SESSION_COOKIE)
    }
    site.client.cookies.clear()  # the preview fetcher's cookies are not the person's
    opened = site.client.get(link)
    assert opened.status_code == 200
    assert "default-src 'none'" in opened.headers["content-security-policy"]
    form = _sign_in_form(opened.text)
    signed = site.client.post(
        "/ui/sign-in", data=form, headers={"Origin": ORIGIN}, follow_redirects=False
    )
    assert signed.status_code == 303
    assert signed.headers["location"] == f"/ui/workspaces/{site.ws}"
    cookie = _set_cookie(signed, SESSION_COOKIE).lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/ui" in cookie
    assert "secure" not in cookie
    assert site.client.get(f"/ui/workspaces/{site.ws}").status_code == 200
    # The link is spent now: opening it again says so, and so does its button.
    assert site.client.get(link).status_code == 403
    again = site.client.post(
        "/ui/sign-in", data=form, headers={"Origin": ORIGIN}, follow_redirects=False
    )
    assert again.status_code == 403  # its page's cookie went with the sign-in


def test_the_sign_in_button_is_refused_from_anywhere_but_its_own_page(site: Site) -> None:
    token = sign_in_token(site.engine, site.ws)
    form = _sign_in_form(site.client.get(f"/ui/sign-in?token={token}").text)
    for headers in (
        {"Origin": "http://evil.example"},
        {"Origin": "null", "Referer": f"{ORIGIN}/ui/sign-in"},
        {},
    ):
        answer = site.client.post("/ui/sign-in", data=form, headers=headers)
        assert answer.status_code == 403, headers
    # Without the cookie its page set (another browser posting a stolen form): refused too.
    site.client.cookies.clear()
    stolen = site.client.post("/ui/sign-in", data=form, headers={"Origin": ORIGIN})
    assert stolen.status_code == 403 and "expired" in stolen.text
    # None of these spent the link.
    with site.engine.connect() as conn:
        assert ui_sessions.link_workspace(conn, token, now=datetime.now(UTC)) == site.ws


def test_the_sign_in_cookie_is_secure_behind_https_and_sign_out_deletes_it_with_its_flags(
    site: Site,
) -> None:
    https = {"X-Forwarded-Proto": "https"}
    token = sign_in_token(site.engine, site.ws)
    opened = site.client.get(f"/ui/sign-in?token={token}", headers=https)
    nonce = _set_cookie(opened, "tlp_ui_sign_in")
    assert "; secure" in nonce.lower() and "path=/ui/sign-in" in nonce.lower()
    signed = site.client.post(
        "/ui/sign-in",
        data=_sign_in_form(opened.text),
        headers={**https, "Origin": "https://testserver", "Cookie": nonce.split(";")[0]},
        follow_redirects=False,
    )
    assert signed.status_code == 303
    session_cookie = _set_cookie(signed, SESSION_COOKIE)
    assert "; secure" in session_cookie.lower()
    secret = session_cookie.split(";")[0].split("=", 1)[1]
    out = site.client.post(
        "/ui/sign-out",
        data={"csrf_token": csrf_token(secret)},
        headers={
            **https,
            "Origin": "https://testserver",
            "Cookie": f"{SESSION_COOKIE}={secret}",
        },
    )
    assert out.status_code == 200
    deleted = _set_cookie(out, SESSION_COOKIE).lower()
    assert "max-age=0" in deleted
    for flag in ("path=/ui", "httponly", "samesite=strict", "secure"):
        assert flag in deleted, flag


def test_a_post_with_origin_null_is_refused_whatever_its_referer_says(site: Site) -> None:
    headers = site.signed_in()
    before = snapshot(site.engine)
    answer = site.client.post(
        f"/ui/workspaces/{site.ws}/entries/{site.draft_id}/confirm",
        data={"revision": "1"},
        headers={**headers, "Origin": "null", "Referer": f"{ORIGIN}/ui/workspaces/{site.ws}"},
    )
    assert answer.status_code == 403
    assert snapshot(site.engine) == before


def test_a_trailing_slash_is_redirected_to_a_path_not_to_the_host_the_client_named(
    site: Site,
) -> None:
    site.signed_in()
    answer = site.client.get(
        f"/ui/workspaces/{site.ws}/?status=draft",
        headers={"Host": "evil.example"},
        follow_redirects=False,
    )
    assert answer.status_code == 307
    assert answer.headers["location"] == f"/ui/workspaces/{site.ws}?status=draft"
    assert site.client.get("//evil.example/", follow_redirects=False).status_code == 404


def test_a_title_with_a_nul_or_a_lone_surrogate_is_refused_by_the_page_with_a_422(
    site: Site,
) -> None:
    headers = site.signed_in()
    before = snapshot(site.engine)
    path = f"/ui/workspaces/{site.ws}/entries/{site.draft_id}/edit"
    for raw, status in ((b"title=a%00b&revision=1", 422), (b"title=a%ED%A0%80b&revision=1", 400)):
        answer = site.client.post(
            path,
            content=raw,
            headers={**headers, "Content-Type": "application/x-www-form-urlencoded"},
        )
        assert answer.status_code == status, raw
        assert "Not saved" in answer.text or "not valid UTF-8" in answer.text
    assert snapshot(site.engine) == before


def test_a_session_ends_when_the_workspace_revokes_it(site: Site) -> None:
    site.signed_in()
    assert site.client.get(f"/ui/workspaces/{site.ws}").status_code == 200
    with site.engine.begin() as conn:
        ui_sessions.revoke_for_workspace(conn, site.ws, now=datetime.now(UTC))
    assert site.client.get(f"/ui/workspaces/{site.ws}").status_code == 401


def test_filters_show_only_the_chosen_statuses_and_category(site: Site) -> None:
    site.signed_in()
    site.service.transition(site.ws, site.draft_id, Action.HIDE, expected_revision=1, actor="t")
    site.service.add(site.ws, NewEntry(datetime.now(UTC), "Paged DBA", "decision"), actor="t")
    default = site.client.get(f"/ui/workspaces/{site.ws}").text
    assert default.count("data-entry-id=") == 1 and "Paged DBA" in default
    hidden = site.client.get(f"/ui/workspaces/{site.ws}?status=hidden").text
    assert re.findall(r'data-status="(\w+)"', hidden) == ["hidden"]
    query = "status=draft&status=confirmed&category=impact"
    impact = site.client.get(f"/ui/workspaces/{site.ws}?{query}")
    assert "data-entry-id=" not in impact.text


def test_adding_an_entry_stores_a_curators_entry_and_a_bad_one_says_why(site: Site) -> None:
    headers = site.signed_in()
    before = snapshot(site.engine)
    bad = site.client.post(
        f"/ui/workspaces/{site.ws}/entries",
        data={"occurred_at": "2026-11-29T10:05", "category": "impact", "title": "  "},
        headers=headers,
    )
    assert bad.status_code == 422
    assert "title must not be blank" in bad.text
    assert bad.headers["hx-retarget"] == "#add-entry-error"
    assert snapshot(site.engine) == before
    added = site.client.post(
        f"/ui/workspaces/{site.ws}/entries",
        data={"occurred_at": "2026-11-29T10:05", "category": "decision", "title": "Paged DBA"},
        headers=headers,
    )
    assert added.status_code == 200 and "Paged DBA" in added.text
    [entry] = [e for e in site.service.timeline(site.ws).entries if e.title == "Paged DBA"]
    assert (entry.source, entry.status, entry.category) == ("human", "confirmed", "decision")
    assert entry.occurred_at == datetime(2026, 11, 29, 10, 5, tzinfo=UTC)


def test_the_summary_is_written_by_a_curator_and_a_stale_one_is_refused(site: Site) -> None:
    headers = site.signed_in()
    path = f"/ui/workspaces/{site.ws}/summary"
    form = {"content": "EU checkout down", "revision": ""}
    first = site.client.post(path, data=form, headers=headers)
    assert first.status_code == 200
    assert "Written by a curator" in first.text and "EU checkout down" in first.text
    before = snapshot(site.engine)
    stale = site.client.post(path, data={"content": "Mine", "revision": "0"}, headers=headers)
    assert stale.status_code == 409
    assert "changed since you loaded it" in stale.text
    assert snapshot(site.engine) == before
    assert site.service.summary(site.ws).content == "EU checkout down"


def test_signing_out_ends_the_session(site: Site) -> None:
    headers = site.signed_in()
    secret = site.client.cookies.get(SESSION_COOKIE)
    assert secret
    answer = site.client.post("/ui/sign-out", headers=headers)
    assert answer.status_code == 200 and "signed out" in answer.text
    site.client.cookies.set(SESSION_COOKIE, secret, path="/ui")  # the old cookie, kept anyway
    assert site.client.get(f"/ui/workspaces/{site.ws}").status_code == 401


def test_the_api_docs_page_names_only_files_this_server_serves_under_a_strict_csp(
    site: Site,
) -> None:
    docs = site.client.get("/api/docs")
    assert docs.status_code == 200
    policy = docs.headers["content-security-policy"]
    assert "script-src 'self';" in policy and "default-src 'none'" in policy
    assert "http" not in docs.text and "<script>" not in docs.text  # no CDN, no inline script
    urls = re.findall(r'(?:src|href)="([^"]+)"', docs.text)
    assert len(urls) == 4
    for url in urls:
        asset = site.client.get(url)
        assert asset.status_code == 200, url
        assert asset.headers["x-content-type-options"] == "nosniff"
    assert site.client.get("/api/docs/assets/../../etc/passwd").status_code == 404
    assert site.client.get("/api/openapi.json").json()["paths"]
