"""The page's report view on the real `serve` app and both databases: who may see it, the
newest revision in the workspace's language and zone (English/UTC and Chinese/Shanghai), the
milestones set and cleared from their forms as `ui:<session>` behind the page's CSRF and origin
checks, refusals shown with their reason and nothing written, a withdrawn revision without its
text, and the link from the timeline page."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from timeline_pipeline.store import report_documents, ui_sessions
from timeline_pipeline.ui.pages import SESSION_COOKIE
from timeline_pipeline.ui.view import input_value
from timeline_pipeline_tests.curation.support import IMPACT, ROLLBACK, incident
from timeline_pipeline_tests.support.reports import (
    build_report,
    report_service,
    report_state,
    reported_incident,
    withdraw,
)
from timeline_pipeline_tests.ui.support import SPIKE, chinese_incident, session

ORIGIN = "http://testserver"
UTC_ZONE = ZoneInfo("UTC")
APPLINK = "https://applink.larksuite.com/client/chat/open?"


@dataclass
class Viewing:
    client: TestClient
    engine: Engine
    ws: str
    csrf: str
    session_id: str

    @property
    def url(self) -> str:
        return f"/ui/workspaces/{self.ws}/report"

    def post(self, name: str, form: dict[str, str], **headers: str) -> object:
        return self.client.post(
            f"{self.url}/milestones/{name}",
            data={"csrf_token": self.csrf, **form},
            headers={"Origin": ORIGIN, **headers},
            follow_redirects=False,
        )


def _sign_in(client: TestClient, engine: Engine, ws: str) -> tuple[str, str]:
    secret, csrf = session(engine, ws)
    client.cookies.clear()
    client.cookies.set(SESSION_COOKIE, secret, path="/ui")
    with engine.connect() as conn:
        info = ui_sessions.session_for(conn, secret, now=datetime.now(UTC))
    assert info is not None
    return csrf, info.id


def _viewing(served: tuple[TestClient, Engine], *, build: bool = True) -> Viewing:
    client, engine = served
    suffix = uuid.uuid4().hex[:8]
    ws, chat = f"inc-{suffix}", f"oc_{suffix}"
    incident(engine, ws, chat)
    reported_incident(engine, ws, chat, build=build)
    csrf, session_id = _sign_in(client, engine, ws)
    return Viewing(client, engine, ws, csrf, session_id)


def _row(page: str, name: str) -> str:
    found = re.search(rf'<tr data-milestone="{name}".*?</tr>', page, re.DOTALL)
    assert found is not None, name
    return found.group(0)


def test_only_the_workspaces_session_sees_its_report(served: tuple[TestClient, Engine]) -> None:
    client, engine = served
    viewing = _viewing(served)
    other = f"other-{uuid.uuid4().hex[:8]}"
    incident(engine, other, f"oc_{other}")
    client.cookies.clear()
    before = report_state(engine)
    anonymous = client.get(viewing.url)
    assert anonymous.status_code == 401
    refused = viewing.post("started", {"action": "clear"})
    assert refused.status_code == 401  # type: ignore[attr-defined]
    _sign_in(client, engine, other)
    for answer in (
        client.get(viewing.url),
        viewing.post("started", {"action": "clear"}),
    ):
        assert answer.status_code == 403  # type: ignore[attr-defined]
        assert "rolled back" not in answer.text.lower()  # type: ignore[attr-defined]
        assert "data-milestone" not in answer.text  # type: ignore[attr-defined]
    assert report_state(engine) == before


def test_without_a_report_the_view_says_so_and_how_to_build_one(
    served: tuple[TestClient, Engine],
) -> None:
    viewing = _viewing(served, build=False)
    page = viewing.client.get(viewing.url)
    assert page.status_code == 200
    assert 'data-report="none"' in page.text
    assert f"timeline-pipeline report build --workspace {viewing.ws}" in page.text
    assert "data-milestone" not in page.text


def test_the_view_shows_the_newest_revision_and_the_timeline_page_links_to_it(
    served: tuple[TestClient, Engine],
) -> None:
    viewing = _viewing(served)
    timeline = viewing.client.get(f"/ui/workspaces/{viewing.ws}")
    assert f'href="{viewing.url}" data-report-link' in timeline.text
    page = viewing.client.get(viewing.url)
    assert page.status_code == 200
    text = page.text
    assert '<html lang="en">' in text
    assert "Incident report" in text and 'data-revision="1"' in text
    assert "Revision 1 · built" in text and "by cli:test" in text
    assert "data-drafts-pending" in text
    assert "Built while 3 drafts awaited review" in text
    assert [m for m in re.findall(r'data-milestone="(\w+)"', text)] == [
        "started",
        "detected",
        "mitigated",
        "resolved",
    ]
    resolved = _row(text, "resolved")
    assert "Time to resolve" in resolved and re.search(r"data-duration>\d", resolved)
    assert "entry #" in _row(text, "mitigated")
    for key in ("impact", "root_cause", "decisions", "mitigations", "timeline", "follow_ups"):
        assert f'data-section="{key}"' in text, key
    assert "Root cause" in text and "Follow-ups" in text and "Unconfirmed drafts" in text
    timeline_rows = re.findall(r'<tr data-entry-id="\d+".*?</tr>', text, re.DOTALL)
    assert len(timeline_rows) == 5
    assert all(f'href="{APPLINK}' in row for row in timeline_rows)
    assert all('rel="noopener noreferrer"' in row for row in timeline_rows)
    assert IMPACT[:20].lower() in text.lower()
    assert "data-document-link" not in text
    # Every change form carries the session's CSRF token.
    assert text.count(f'name="csrf_token" value="{viewing.csrf}"') == 5  # 4 forms + sign-out


def test_the_lark_documents_link_is_shown_once_it_exists(
    served: tuple[TestClient, Engine],
) -> None:
    viewing = _viewing(served)
    url = "https://acme.feishu.cn/docx/doxcnReport01"
    now = datetime.now(UTC)
    with viewing.engine.begin() as conn:
        planned = report_documents.plan(
            conn,
            workspace_id=viewing.ws,
            folder_token="fldreports",
            title="Incident report",
            chat_id=None,
            target_revision=1,
            now=now,
        )
        assert report_documents.move(
            conn, planned, document_id="doxcnReport01", document_url=url, updated_at=now
        )
    page = viewing.client.get(viewing.url).text
    assert f'data-document-link href="{url}"' in page


def test_a_chinese_workspace_reads_its_report_in_chinese_in_its_zone(
    served: tuple[TestClient, Engine],
) -> None:
    client, engine = served
    ws = f"zh-{uuid.uuid4().hex[:8]}"
    chinese_incident(engine, ws, chat=f"oc_{ws}")
    build_report(engine, ws)
    _sign_in(client, engine, ws)
    text = client.get(f"/ui/workspaces/{ws}/report").text
    assert '<html lang="zh-CN">' in text
    for words in ("故障报告", "关键节点", "故障开始", "故障解决", "解决用时", "时间线", "后续行动"):
        assert words in text, words
    assert "本报告生成时仍有 1 条草稿待审核" in text
    started = _row(text, "started")
    assert "2026年12月4日 23:40 UTC+8" in started
    assert 'value="2026-12-04T23:40"' in started  # the form's time, in Shanghai
    assert "时间（UTC+8）" in started
    assert "32 分钟 25 秒" in _row(text, "resolved")
    assert SPIKE in text
    for english in ("Milestones", "Set time", "Time to resolve", "Nothing recorded yet."):
        assert english not in text, english


def test_a_milestone_set_from_its_form_is_the_sessions_and_clears_back(
    served: tuple[TestClient, Engine],
) -> None:
    viewing = _viewing(served)
    service = report_service(viewing.engine)
    derived = service.milestones(viewing.ws).resolved.at
    assert derived is not None
    wanted = (derived + timedelta(minutes=3)).replace(second=0, microsecond=0)
    answer = viewing.post("resolved", {"action": "set", "at": input_value(wanted, UTC_ZONE)})
    assert answer.status_code == 303  # type: ignore[attr-defined]
    assert answer.headers["location"] == viewing.url  # type: ignore[attr-defined]
    resolved = service.milestones(viewing.ws).resolved
    assert (resolved.at, resolved.derived_at) == (wanted, derived)
    assert resolved.overridden_by == f"ui:{viewing.session_id}"
    page = viewing.client.get(viewing.url).text
    row = _row(page, "resolved")
    assert 'data-overridden="1"' in row
    assert f"set by ui:{viewing.session_id} (timeline: " in row
    assert "Use the timeline&#39;s time" in row
    assert "data-milestones-changed" in page  # revision 1 was built without it
    cleared = viewing.post("resolved", {"action": "clear"})
    assert cleared.status_code == 303  # type: ignore[attr-defined]
    assert service.milestones(viewing.ws).resolved.overridden_by is None
    page = viewing.client.get(viewing.url).text
    assert "data-milestones-changed" not in page and "data-overridden" not in page


@pytest.mark.parametrize(
    ("form", "reason"),
    [
        ({"action": "set", "at": "LATER"}, "after the incident was resolved"),
        ({"action": "set", "at": "2099-01-01T00:00"}, "is in the future"),
        ({"action": "set", "at": "yesterday"}, "the time is not a date and time"),
        ({"action": "set", "at": "1999-12-31T23:00"}, "the time must be between 2000 and 2100"),
        ({"action": "set"}, "the time is not a date and time"),
    ],
)
def test_a_refused_time_is_shown_with_its_reason_and_writes_nothing(
    served: tuple[TestClient, Engine], form: dict[str, str], reason: str
) -> None:
    viewing = _viewing(served)
    resolved = report_service(viewing.engine).milestones(viewing.ws).resolved.at
    assert resolved is not None
    if form.get("at") == "LATER":
        form = {**form, "at": input_value(resolved + timedelta(minutes=2), UTC_ZONE)}
    before = report_state(viewing.engine)
    answer = viewing.post("mitigated", form)
    assert answer.status_code == 422  # type: ignore[attr-defined]
    row = _row(answer.text, "mitigated")  # type: ignore[attr-defined]
    assert 'role="alert">Not saved: ' in row and reason in row
    if "at" in form:
        assert f'value="{form["at"]}"' in row  # what was typed stays in the form
    assert report_state(viewing.engine) == before


def test_a_change_without_csrf_or_from_elsewhere_or_of_no_milestone_is_refused(
    served: tuple[TestClient, Engine],
) -> None:
    viewing = _viewing(served)
    before = report_state(viewing.engine)
    form = {"action": "clear"}
    assert viewing.post("started", form, Origin="http://evil.example").status_code == 403  # type: ignore[attr-defined]
    stale = viewing.client.post(
        f"{viewing.url}/milestones/started",
        data={"csrf_token": "0" * 64, **form},
        headers={"Origin": ORIGIN},
        follow_redirects=False,
    )
    assert stale.status_code == 403
    unknown = viewing.post("ended", form)
    assert unknown.status_code == 404  # type: ignore[attr-defined]
    assert "This milestone does not exist." in unknown.text  # type: ignore[attr-defined]
    assert report_state(viewing.engine) == before


def test_a_withdrawn_revision_shows_its_notice_and_none_of_its_text(
    served: tuple[TestClient, Engine],
) -> None:
    client, engine = served
    suffix = uuid.uuid4().hex[:8]
    ws, chat = f"inc-{suffix}", f"oc_{suffix}"
    incident(engine, ws, chat)
    reported = reported_incident(engine, ws, chat)
    withdraw(engine, ws, reported.evidence[ROLLBACK])
    _sign_in(client, engine, ws)
    page = client.get(f"/ui/workspaces/{ws}/report")
    assert page.status_code == 200
    assert "data-withdrawn" in page.text
    assert "rolled back" not in page.text.lower()
    assert 'data-section="' not in page.text
