"""The page of a `zh-CN` workspace in Asia/Shanghai, router by router, on the real `serve` app and
both databases: Chinese words, times in UTC+8 with their dates where the entries cross local
midnight (on one UTC day), and the entry form read and filled in that zone (docs/i18n.md)."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol
from zoneinfo import ZoneInfo

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from timeline_pipeline.curation.service import CurationService
from timeline_pipeline.ui.pages import SESSION_COOKIE
from timeline_pipeline_tests.curation.support import snapshot
from timeline_pipeline_tests.ui.support import (
    ROLLED_BACK,
    SPIKE,
    ChineseIncident,
    chinese_incident,
    session,
    sign_in_token,
)

ORIGIN = "http://testserver"
SHANGHAI = ZoneInfo("Asia/Shanghai")
SPIKE_SHOWN = "2026年12月4日 23:40 UTC+8"
ROLLED_BACK_SHOWN = "2026年12月5日 00:12 UTC+8"


class Response(Protocol):
    """What these tests read of an answer (the test client's response)."""

    @property
    def status_code(self) -> int: ...

    @property
    def text(self) -> str: ...

    @property
    def headers(self) -> Mapping[str, str]: ...


@dataclass
class Chinese:
    client: TestClient
    engine: Engine
    service: CurationService
    incident: ChineseIncident
    headers: dict[str, str]
    """A signed-in page's htmx request headers (CSRF token, origin)."""

    @property
    def ws(self) -> str:
        return self.incident.workspace_id

    def get(self, path: str) -> Response:
        return self.client.get(f"/ui/workspaces/{self.ws}{path}")

    def post(self, path: str, form: dict[str, str]) -> Response:
        return self.client.post(f"/ui/workspaces/{self.ws}{path}", data=form, headers=self.headers)


def _open(
    served: tuple[TestClient, Engine], *, time_zone: str = "Asia/Shanghai", locale: str = "zh-CN"
) -> Chinese:
    client, engine = served
    client.cookies.clear()
    incident = chinese_incident(
        engine,
        f"zh-{uuid.uuid4().hex[:8]}",
        chat=f"oc_{uuid.uuid4().hex[:8]}",
        time_zone=time_zone,
        locale=locale,
    )
    secret, csrf = session(engine, incident.workspace_id)
    client.cookies.set(SESSION_COOKIE, secret, path="/ui")
    headers = {"X-CSRF-Token": csrf, "Origin": ORIGIN, "HX-Request": "true"}
    return Chinese(client, engine, CurationService(engine), incident, headers)


@pytest.fixture
def zh(served: tuple[TestClient, Engine]) -> Chinese:
    return _open(served)


def _entry(html: str, entry_id: int) -> str:
    found = re.search(rf'<li class="entry-item" id="entry-{entry_id}">.*?</li>', html, re.S)
    assert found, f"entry {entry_id} is not on the page"
    return found.group(0)


def _announced(answer: Response) -> str:
    return str(json.loads(answer.headers["hx-trigger"])["ui:announce"])


# --- the timeline router: the page and its entry list ---


def test_the_page_is_chinese_with_times_in_utc8_dated_across_local_midnight(zh: Chinese) -> None:
    before = datetime.now(SHANGHAI).replace(second=0, microsecond=0, tzinfo=None)
    page = zh.get("")
    after = datetime.now(SHANGHAI).replace(tzinfo=None)
    assert page.status_code == 200
    html = page.text
    assert '<html lang="zh-CN">' in html
    assert "<title>支付网关超时 · 事件时间线</title>" in html
    assert "时间按 Asia/Shanghai (UTC+8) 显示，旁边附有你的本地时间。" in html
    assert "Times in UTC" not in html and "Incident timeline" not in html
    spike = _entry(html, zh.incident.draft_id)
    assert f">{SPIKE_SHOWN}</time>" in spike  # 15:40 UTC on the 4th ...
    assert f">{ROLLED_BACK_SHOWN}</time>" in _entry(html, zh.incident.human_id)  # ... and 16:12
    assert 'data-status="draft"' in spike and 'data-category="impact"' in spike
    assert 'data-action="confirm">确认</button>' in spike
    assert 'data-action="hide">隐藏</button>' in spike
    assert 'data-action="edit"' in spike and ">编辑</button>" in spike
    assert '<span class="badge cat-impact">影响</span>' in spike
    assert "草稿</span>" in spike and "AI 草稿</span>" in spike
    assert "2 个条目" in html and "<legend>状态</legend>" in html
    assert '<option value="root_cause">根因</option>' in html
    # The add form is read in the zone and filled with the present time there.
    assert "时间（UTC+8）" in html
    typed = re.search(r'name="occurred_at" value="([^"]+)"', html)
    assert typed is not None
    assert before <= datetime.fromisoformat(typed.group(1)) <= after


def test_a_list_within_one_local_day_shows_times_without_their_date(zh: Chinese) -> None:
    region = zh.get("/entries?status=draft&status=confirmed&category=impact")
    assert region.status_code == 200
    assert ">23:40 UTC+8</time>" in region.text and SPIKE_SHOWN not in region.text
    assert "1 个条目符合筛选条件" in region.text
    nothing = zh.get("/entries?category=next_step")
    assert "没有符合筛选条件的条目。" in nothing.text


# --- the entries router: fragments, evidence and changes ---


def test_confirming_from_the_chinese_page_keeps_the_date_and_says_so_in_chinese(
    zh: Chinese,
) -> None:
    draft = zh.incident.draft_id
    answer = zh.post(f"/entries/{draft}/confirm", {"revision": "1", "dated": "1"})
    assert answer.status_code == 200
    assert 'data-status="confirmed"' in answer.text
    assert f">{SPIKE_SHOWN}</time>" in answer.text
    assert "已确认</span>" in answer.text and 'data-action="hide">隐藏</button>' in answer.text
    assert _announced(answer) == f"已确认条目：{SPIKE}"
    assert zh.service.entry(zh.ws, draft).status == "confirmed"
    stale = zh.post(f"/entries/{draft}/hide", {"revision": "1", "dated": "1"})
    assert stale.status_code == 409
    assert "未保存：你打开后，此条目已被其他人修改。" in stale.text


def test_the_edit_form_is_filled_and_read_in_the_workspaces_zone(zh: Chinese) -> None:
    draft = zh.incident.draft_id
    form = zh.get(f"/entries/{draft}/edit?dated=1")
    assert form.status_code == 200
    assert 'name="occurred_at" value="2026-12-04T23:40"' in form.text
    assert "时间（UTC+8）" in form.text and "编辑条目" in form.text
    assert '<option value="impact" selected>影响</option>' in form.text
    fields = dict(re.findall(r'name="(\w+)" value="([^"]*)"', form.text))
    untouched = zh.post(f"/entries/{draft}/edit", fields)
    assert untouched.status_code == 200 and _announced(untouched) == "没有改动"
    assert zh.service.entry(zh.ws, draft).human_edited is False
    moved = zh.post(f"/entries/{draft}/edit", {**fields, "occurred_at": "2026-12-05T00:30"})
    assert moved.status_code == 200
    assert ">2026年12月5日 00:30 UTC+8</time>" in moved.text
    assert zh.service.entry(zh.ws, draft).occurred_at == datetime(2026, 12, 4, 16, 30, tzinfo=UTC)


def test_evidence_is_chinese_and_timed_in_the_zone(zh: Chinese) -> None:
    path = f"/entries/{zh.incident.human_id}/evidence"
    alone = zh.get(path)
    assert alone.status_code == 200
    assert ROLLED_BACK in alone.text
    assert ">00:12:30 UTC+8</time>" in alone.text  # one message: no date of its own
    assert "在飞书中打开" in alone.text and "Open in Lark" not in alone.text
    dated = zh.get(f"{path}?dated=1")  # as the list that spans two local days shows it
    assert ">2026年12月5日 00:12:30 UTC+8</time>" in dated.text


def test_an_entry_added_in_chinese_is_read_in_the_zone_and_bad_times_are_the_forms_error(
    zh: Chinese,
) -> None:
    added = zh.post(
        "/entries",
        {"occurred_at": "2026-12-05T08:00", "category": "next_step", "title": "补充连接池告警"},
    )
    assert added.status_code == 200
    assert _announced(added) == "已添加条目：补充连接池告警"
    assert "后续行动" in added.text and "3 个条目" in added.text
    [entry] = [e for e in zh.service.timeline(zh.ws).entries if e.title == "补充连接池告警"]
    assert entry.occurred_at == datetime(2026, 12, 5, 0, 0, tzinfo=UTC)
    before = snapshot(zh.engine)
    for typed, reason in (
        ("yesterday", "时间不是有效的日期和时间"),
        ("1999-12-31T23:59", "时间须在 2000 年到 2100 年之间"),
    ):
        bad = zh.post("/entries", {"occurred_at": typed, "category": "impact", "title": "x"})
        assert bad.status_code == 422, typed
        assert f"未添加：{reason}。" in bad.text
    assert snapshot(zh.engine) == before


def test_a_year_one_time_in_a_utc14_zone_is_the_forms_error_not_a_crash(
    served: tuple[TestClient, Engine],
) -> None:
    # 0001-01-01T00:00 at UTC+14 is before the first UTC moment Python can hold (OverflowError).
    kiribati = _open(served, time_zone="Pacific/Kiritimati")
    before = snapshot(kiribati.engine)
    draft = kiribati.incident.draft_id
    added = kiribati.post(
        "/entries", {"occurred_at": "0001-01-01T00:00", "category": "impact", "title": "x"}
    )
    assert added.status_code == 422
    assert "未添加：时间须在 2000 年到 2100 年之间。" in added.text
    edited = kiribati.post(
        f"/entries/{draft}/edit", {"revision": "1", "occurred_at": "0001-01-01T00:00"}
    )
    assert edited.status_code == 422
    assert "未保存：时间须在 2000 年到 2100 年之间。" in edited.text
    assert 'value="0001-01-01T00:00"' in edited.text  # what was typed stays in the form
    late = kiribati.post(
        f"/entries/{draft}/edit", {"revision": "1", "occurred_at": "9999-12-31T23:59"}
    )
    assert late.status_code == 422
    assert snapshot(kiribati.engine) == before


# --- the summary router ---


def test_the_summary_panel_is_chinese_and_its_stamp_has_its_date_in_the_zone(zh: Chinese) -> None:
    empty = zh.get("/summary")
    assert "暂无摘要。" in empty.text and "编辑摘要" in empty.text
    editing = zh.get("/summary?edit=true")
    assert "摘要内容" in editing.text and "保存摘要" in editing.text
    written = zh.post("/summary", {"content": "支付网关超时，已回滚。", "revision": ""})
    assert written.status_code == 200
    assert _announced(written) == "摘要已保存"
    assert "审核人撰写" in written.text
    stamp = re.search(r"第 1 版 · 更新于 (\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d) UTC\+8", written.text)
    assert stamp is not None, written.text
    updated = zh.service.summary(zh.ws).updated_at.astimezone(SHANGHAI)
    shown = tuple(int(part) for part in stamp.groups())
    assert shown == (updated.year, updated.month, updated.day, updated.hour, updated.minute)
    stale = zh.post("/summary", {"content": "另一个版本", "revision": "0"})
    assert stale.status_code == 409
    assert "未保存：你打开后，摘要已被修改。" in stale.text


# --- the sign-in router ---


def test_a_links_page_speaks_its_workspaces_language_and_refusals_the_browsers(
    zh: Chinese,
) -> None:
    zh.client.cookies.clear()
    token = sign_in_token(zh.engine, zh.ws)
    opened = zh.client.get(f"/ui/sign-in?token={token}")
    assert opened.status_code == 200
    assert '<html lang="zh-CN">' in opened.text
    assert "<h1>登录时间线</h1>" in opened.text
    assert f"此链接会让本浏览器登录事件 <strong>{zh.ws}</strong>，只能使用一次。" in opened.text
    assert '<button type="submit" class="button primary">登录</button>' in opened.text
    spent = "/ui/sign-in?token=" + "x" * 43
    chinese = zh.client.get(spent, headers={"Accept-Language": "zh-CN,zh;q=0.9,en;q=0.8"})
    assert chinese.status_code == 403
    assert '<html lang="zh-CN">' in chinese.text and "此登录链接无法使用" in chinese.text
    english = zh.client.get(spent)
    assert english.status_code == 403
    assert '<html lang="en">' in english.text and "This sign-in link does not work" in english.text
    # Without a session: the browser's language, and nothing of the workspace.
    refused = zh.client.get(f"/ui/workspaces/{zh.ws}", headers={"Accept-Language": "zh-CN"})
    assert refused.status_code == 401
    assert "登录后才能查看此时间线" in refused.text
    assert zh.ws not in refused.text and "支付网关" not in refused.text


def test_an_expired_form_and_the_signed_out_page_speak_the_workspaces_language(
    zh: Chinese,
) -> None:
    forged = {**zh.headers, "X-CSRF-Token": "0" * 64}
    confirmed = zh.post(f"/entries/{zh.incident.draft_id}/confirm", {"revision": "1"})
    assert confirmed.status_code == 200  # the page's own token: confirmed
    refused = zh.client.post(
        f"/ui/workspaces/{zh.ws}/entries/{zh.incident.draft_id}/hide",
        data={"revision": "2"},
        headers=forged,
    )
    assert refused.status_code == 403
    assert (
        '<html lang="zh-CN">' in refused.text and "表单已过期，请刷新页面后重试。" in refused.text
    )
    assert zh.service.entry(zh.ws, zh.incident.draft_id).status == "confirmed"
    out = zh.client.post("/ui/sign-out", headers=zh.headers)
    assert out.status_code == 200
    assert '<html lang="zh-CN">' in out.text and "你已退出登录。" in out.text


def test_an_english_workspace_in_utc_is_shown_as_before_beside_a_chinese_one(
    zh: Chinese, served: tuple[TestClient, Engine]
) -> None:
    # The same app and database: the language and zone are the workspace's, not the process's.
    assert "事件时间线" in zh.get("").text
    english = _open(served, time_zone="UTC", locale="en")
    page = english.get("")
    assert '<html lang="en">' in page.text
    assert "Times in UTC, with your local time beside them." in page.text
    assert ">15:40 UTC</time>" in page.text and ">16:12 UTC</time>" in page.text  # one UTC day
    assert ">Confirm</button>" in page.text and "Time (UTC)" in page.text
    assert "1 message</span>" in page.text and "2 entries" in page.text
