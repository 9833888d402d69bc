"""The timeline page in a real browser: Debian's chromium driven by Playwright against one real
`serve` (uvicorn on 127.0.0.1, port 0) over the demo's incident, shared by every test here.

Every browser context aborts and records any request that would leave loopback, so each test
also proves the page needs nothing from elsewhere. The screenshot of the demo's timeline is
written to `test-results/ui/` (docs/timeline-page.md). Beside the demo's English workspace, a
`zh-CN` one in Asia/Shanghai whose entries cross local midnight (docs/i18n.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from playwright import sync_api as playwright_api
from sqlalchemy import Engine

from timeline_pipeline.curation.service import CurationService, NewEntry
from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.migrate import upgrade
from timeline_pipeline.demo.pin import missed_message
from timeline_pipeline.http.app import create_app
from timeline_pipeline.lark.simulator.runner import LoopbackUvicorn
from timeline_pipeline.observability.metrics import PinMetrics
from timeline_pipeline.pins.reactions import Reaction
from timeline_pipeline.pins.service import PinService, pin_fingerprint
from timeline_pipeline.settings import LarkTimelineSettings, RuntimeEnvironment, Settings
from timeline_pipeline.store import entries as entries_store
from timeline_pipeline.store import workspaces
from timeline_pipeline_tests.support.reports import build_report, report_service
from timeline_pipeline_tests.ui.support import chinese_incident, demo_incident, sign_in_token

CHROMIUM = Path("/usr/bin/chromium")
DEMO = "demo-ui"
OTHER = "other-ui"
CHINESE = "zh-ui"
SCREENSHOT_DIR = Path(__file__).resolve().parents[2] / "test-results" / "ui"
LOOPBACK = {"127.0.0.1", "localhost", "::1"}

pytestmark = pytest.mark.slow


@dataclass
class Served:
    base_url: str
    engine: Engine
    service: CurationService


@dataclass
class Visit:
    """One browser context (its own cookies) and every request it made."""

    context: object
    page: object
    requests: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    url = f"sqlite:///{tmp_path_factory.mktemp('ui-browser') / 'timeline.db'}"
    engine = make_engine(url)
    upgrade(engine)
    demo_incident(engine, DEMO)
    with engine.begin() as conn:
        workspaces.create(conn, OTHER, title="Another team's incident")
    service = CurationService(engine)
    service.add(OTHER, NewEntry(datetime.now(UTC), "Secret of the other team", "impact"), actor="t")
    settings = Settings(
        LarkTimelineSettings(ui_poll_interval="1s"),
        RuntimeEnvironment(LARK_VERIFICATION_TOKEN="vt"),
    )
    server = LoopbackUvicorn(create_app(settings, engine)).start()
    try:
        yield Served(server.base_url, engine, service)
    finally:
        server.stop()
        engine.dispose()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not CHROMIUM.exists():
        pytest.fail("chromium is missing: scripts/bootstrap installs it with apt")
    with playwright_api.sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=str(CHROMIUM))
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def visit(browser: object) -> Iterator[Visit]:
    # A viewer far from UTC, so that the local times beside the UTC ones differ from them.
    context = browser.new_context(  # type: ignore[attr-defined]
        viewport={"width": 1200, "height": 900}, timezone_id="Asia/Singapore", locale="en-GB"
    )
    page = context.new_page()
    seen = Visit(context, page)

    def guard(route: object) -> None:
        url = route.request.url  # type: ignore[attr-defined]
        seen.requests.append(url)
        if urlsplit(url).hostname not in LOOPBACK:
            seen.blocked.append(url)
            route.abort()  # type: ignore[attr-defined]
        else:
            route.continue_()  # type: ignore[attr-defined]

    context.route("**/*", guard)
    page.set_default_timeout(30_000)  # a loaded machine (CI beside other jobs) is slow
    try:
        yield seen
    finally:
        context.close()
    assert not seen.blocked, seen.blocked


def sign_in(served: Served, visit: Visit, workspace_id: str = DEMO) -> str:
    """Open a fresh link and press its Sign in button, as a person does."""
    link = f"{served.base_url}/ui/sign-in?token={sign_in_token(served.engine, workspace_id)}"
    page = visit.page
    page.goto(link, wait_until="domcontentloaded")  # type: ignore[attr-defined]
    page.get_by_role("button", name="Sign in").click()  # type: ignore[attr-defined]
    page.wait_for_url(  # type: ignore[attr-defined]
        f"{served.base_url}/ui/workspaces/{workspace_id}", wait_until="domcontentloaded"
    )
    return link


def entries(visit: Visit) -> object:
    return visit.page.locator("[data-entry-id]")  # type: ignore[attr-defined]


def test_a_screenshot_of_the_demo_timeline_is_written_before_anything_changes_it(
    served: Served, visit: Visit
) -> None:
    sign_in(served, visit)
    page = visit.page
    entries(visit).first.get_by_text("Evidence").click()  # type: ignore[attr-defined]
    playwright_api.expect(page.locator(".messages li").first).to_be_visible()  # type: ignore[attr-defined]
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    shot = SCREENSHOT_DIR / "timeline-page.png"
    page.set_viewport_size({"width": 1200, "height": 1800})  # type: ignore[attr-defined]
    page.evaluate("window.scrollTo(0, 0)")  # type: ignore[attr-defined]
    page.screenshot(path=str(shot))  # type: ignore[attr-defined]
    assert shot.stat().st_size > 10_000


def test_a_sign_in_link_opens_the_page_with_an_httponly_strict_cookie(
    served: Served, visit: Visit
) -> None:
    link = sign_in(served, visit)
    page = visit.page
    assert page.url == f"{served.base_url}/ui/workspaces/{DEMO}"  # type: ignore[attr-defined]
    assert "token" not in page.url  # type: ignore[attr-defined]
    [cookie] = visit.context.cookies()  # type: ignore[attr-defined]
    assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict"
    assert cookie["secure"] is False  # plain http on loopback; https sets Secure (test_routes)
    visible = served.service.timeline(DEMO).entries
    playwright_api.expect(entries(visit)).to_have_count(len(visible))
    assert page.locator("h1").inner_text().startswith("Checkout latency")  # type: ignore[attr-defined]
    assert link not in page.content()  # type: ignore[attr-defined]


def test_a_preview_fetching_the_link_spends_nothing_and_the_person_still_signs_in(
    served: Served, visit: Visit
) -> None:
    import httpx

    link = f"{served.base_url}/ui/sign-in?token={sign_in_token(served.engine, DEMO)}"
    for _ in range(2):  # a chat's link preview, fetched twice
        preview = httpx.get(link, headers={"User-Agent": "link-preview"}, timeout=10)
        assert preview.status_code == 200 and "tlp_ui_session" not in str(preview.headers)
    page = visit.page
    page.goto(link, wait_until="domcontentloaded")  # type: ignore[attr-defined]
    assert visit.context.cookies() == [] or all(  # type: ignore[attr-defined]
        c["name"] != "tlp_ui_session"
        for c in visit.context.cookies()  # type: ignore[attr-defined]
    )
    page.get_by_role("button", name="Sign in").click()  # type: ignore[attr-defined]
    page.wait_for_url(  # type: ignore[attr-defined]
        f"{served.base_url}/ui/workspaces/{DEMO}", wait_until="domcontentloaded"
    )
    playwright_api.expect(entries(visit).first).to_be_visible()


def test_two_sessions_deciding_the_same_entry_the_second_sees_it_changed_and_its_value(
    served: Served, browser: object, visit: Visit
) -> None:
    other = browser.new_context()  # type: ignore[attr-defined]
    try:
        second = Visit(other, other.new_page())
        second.page.set_default_timeout(30_000)  # type: ignore[attr-defined]
        sign_in(served, visit)
        sign_in(served, second)
        entry_id = served.service.timeline(DEMO).entries[3].id
        forms = []
        for seen in (visit, second):
            shown = seen.page.locator(f'[data-entry-id="{entry_id}"]')  # type: ignore[attr-defined]
            shown.get_by_role("button", name="Edit").click()
            forms.append(shown)
        forms[0].get_by_label("Title").fill("First curator's title")
        forms[0].get_by_role("button", name="Save").click()
        playwright_api.expect(forms[0].locator(".entry-title")).to_have_text(
            "First curator's title"
        )
        forms[1].get_by_label("Title").fill("Second curator's title")
        forms[1].get_by_role("button", name="Save").click()
        playwright_api.expect(forms[1].get_by_role("alert")).to_contain_text("changed by someone")
        playwright_api.expect(forms[1].locator(".entry-title")).to_have_text(
            "First curator's title"
        )
        assert served.service.entry(DEMO, entry_id).title == "First curator's title"
    finally:
        other.close()


def test_the_api_docs_load_nothing_from_elsewhere_and_run_under_their_csp(
    served: Served, visit: Visit
) -> None:
    page = visit.page
    violations: list[str] = []
    page.on(  # type: ignore[attr-defined]
        "console",
        lambda message: (
            violations.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    answer = page.goto(f"{served.base_url}/api/docs")  # type: ignore[attr-defined]
    assert answer.status == 200
    assert "script-src 'self'" in answer.headers["content-security-policy"]
    # Swagger UI has drawn the schema it fetched (1.5 MB of script first: a slow machine waits).
    title = page.get_by_text("The curated incident timeline of a workspace")  # type: ignore[attr-defined]
    playwright_api.expect(title).to_be_visible(timeout=30_000)
    page.wait_for_load_state("networkidle")  # type: ignore[attr-defined]
    assert {urlsplit(url).hostname for url in visit.requests} == {"127.0.0.1"}
    assert any("/api/openapi.json" in url for url in visit.requests)
    assert violations == []


def test_a_used_or_expired_link_is_refused(served: Served, browser: object, visit: Visit) -> None:
    link = sign_in(served, visit)
    again = browser.new_context()  # type: ignore[attr-defined]
    try:
        answer = again.new_page().goto(link)
        assert answer.status == 403
        assert "does not work" in answer.text()
        assert again.cookies() == []
        expired = sign_in_token(served.engine, DEMO, now=datetime.now(UTC) - timedelta(minutes=11))
        late = again.new_page().goto(f"{served.base_url}/ui/sign-in?token={expired}")
        assert late.status == 403
        assert again.cookies() == []
    finally:
        again.close()


def test_entries_open_to_their_messages_with_links_to_lark(served: Served, visit: Visit) -> None:
    sign_in(served, visit)
    page = visit.page
    first = entries(visit).first  # type: ignore[attr-defined]
    first.get_by_text("Evidence").click()
    message = first.locator(".messages li").first
    playwright_api.expect(message).to_be_visible()
    link = message.get_by_role("link", name="Open in Lark")
    assert link.get_attribute("href").startswith("https://applink.larksuite.com/client/chat/open?")
    assert message.locator(".sender").inner_text() not in ("", "Unknown sender")
    assert page.evaluate("typeof window.htmx") == "object"  # type: ignore[attr-defined]
    # Times in UTC, and in the viewer's local time beside them.
    shown = first.locator("[data-local-time]").first
    moment = datetime.fromisoformat(shown.get_attribute("data-local-time").replace("Z", "+00:00"))
    singapore = (moment + timedelta(hours=8)).strftime("%H:%M")
    assert shown.inner_text() == f"({singapore} GMT+8 local)"


def test_confirming_a_draft_by_clicking_is_stored_and_survives_a_reload(
    served: Served, visit: Visit
) -> None:
    sign_in(served, visit)
    page = visit.page
    draft = page.locator('[data-status="draft"]').first  # type: ignore[attr-defined]
    entry_id = int(draft.get_attribute("data-entry-id"))
    draft.get_by_role("button", name="Confirm").click()
    same = page.locator(f'[data-entry-id="{entry_id}"]')  # type: ignore[attr-defined]
    playwright_api.expect(same).to_have_attribute("data-status", "confirmed")
    playwright_api.expect(page.locator("#live")).to_contain_text("Entry confirmed")  # type: ignore[attr-defined]
    assert served.service.entry(DEMO, entry_id).status == "confirmed"
    page.reload()  # type: ignore[attr-defined]
    playwright_api.expect(same).to_have_attribute("data-status", "confirmed")
    playwright_api.expect(same.get_by_role("button", name="Confirm")).to_have_count(0)
    playwright_api.expect(same.get_by_role("button", name="Hide")).to_have_count(1)


def test_a_stale_edit_is_refused_with_its_message(served: Served, visit: Visit) -> None:
    sign_in(served, visit)
    page = visit.page
    entry = entries(visit).nth(2)  # type: ignore[attr-defined]
    entry_id = int(entry.get_attribute("data-entry-id"))
    entry.get_by_role("button", name="Edit").click()
    title = page.get_by_label("Title").first  # type: ignore[attr-defined]
    playwright_api.expect(title).to_be_focused()
    current = served.service.entry(DEMO, entry_id)
    served.service.edit(DEMO, entry_id, {"title": "Edited elsewhere meanwhile"},
                        expected_revision=current.revision, actor="someone")  # fmt: skip
    title.fill("My version of the title")
    page.get_by_role("button", name="Save").click()  # type: ignore[attr-defined]
    shown = page.locator(f'[data-entry-id="{entry_id}"]')  # type: ignore[attr-defined]
    playwright_api.expect(shown.get_by_role("alert")).to_contain_text("changed by someone else")
    playwright_api.expect(shown.locator(".entry-title")).to_have_text("Edited elsewhere meanwhile")
    assert served.service.entry(DEMO, entry_id).title == "Edited elsewhere meanwhile"


def test_another_workspaces_page_is_refused_and_shows_nothing(served: Served, visit: Visit) -> None:
    sign_in(served, visit)
    answer = visit.page.goto(f"{served.base_url}/ui/workspaces/{OTHER}")  # type: ignore[attr-defined]
    assert answer.status == 403
    text = visit.page.content()  # type: ignore[attr-defined]
    assert "Secret of the other team" not in text and "Another team" not in text
    playwright_api.expect(entries(visit)).to_have_count(0)


def test_a_csrf_attempt_from_another_origin_is_refused(served: Served, visit: Visit) -> None:
    sign_in(served, visit)
    draft = served.service.timeline(DEMO, statuses=("draft",)).entries[-1]
    target = f"{served.base_url}/ui/workspaces/{DEMO}/entries/{draft.id}/hide"
    evil = FastAPI()

    @evil.get("/")
    def lure() -> HTMLResponse:
        return HTMLResponse(
            f'<form method="post" action="{target}"><input name="revision" '
            f'value="{draft.revision}"><button>Win a prize</button></form>'
        )

    with LoopbackUvicorn(evil) as attacker:  # same site (127.0.0.1), another origin (port)
        visit.page.goto(attacker.base_url)  # type: ignore[attr-defined]
        with visit.page.expect_response(target) as answer:  # type: ignore[attr-defined]
            visit.page.get_by_role("button", name="Win a prize").click()  # type: ignore[attr-defined]
        assert answer.value.status == 403
    assert served.service.entry(DEMO, draft.id).status == "draft"


def test_the_page_loads_with_no_request_leaving_loopback(served: Served, visit: Visit) -> None:
    sign_in(served, visit)
    page = visit.page
    entries(visit).first.get_by_text("Evidence").click()  # type: ignore[attr-defined]
    playwright_api.expect(page.locator(".messages li").first).to_be_visible()  # type: ignore[attr-defined]
    page.wait_for_load_state("networkidle")  # type: ignore[attr-defined]
    hosts = {urlsplit(url).hostname for url in visit.requests}
    assert hosts == {"127.0.0.1"}
    assert any("/ui/static/htmx-" in url for url in visit.requests)
    # `?dated=1` when the entries span local days (docs/i18n.md): the demo's times follow the
    # clock, so whether they cross midnight depends on when the test runs.
    assert any(urlsplit(url).path.endswith("/evidence") for url in visit.requests)


def test_new_entries_appear_without_a_reload(served: Served, visit: Visit) -> None:
    sign_in(served, visit)
    served.service.add(
        DEMO, NewEntry(datetime.now(UTC), "Status page updated for EU", "impact"), actor="t"
    )
    appeared = visit.page.get_by_role("heading", name="Status page updated for EU")  # type: ignore[attr-defined]
    playwright_api.expect(appeared).to_be_visible(timeout=12_000)


def test_the_actions_work_from_the_keyboard_and_are_announced(served: Served, visit: Visit) -> None:
    sign_in(served, visit)
    page = visit.page
    page.keyboard.press("Tab")  # type: ignore[attr-defined]
    skip = page.get_by_role("link", name="Skip to the timeline")  # type: ignore[attr-defined]
    playwright_api.expect(skip).to_be_focused()
    draft = page.locator('[data-status="draft"]').nth(1)  # type: ignore[attr-defined]
    entry_id = int(draft.get_attribute("data-entry-id"))
    draft.get_by_role("button", name="Hide").focus()
    page.keyboard.press("Enter")  # type: ignore[attr-defined]
    same = page.locator(f'[data-entry-id="{entry_id}"]')  # type: ignore[attr-defined]
    playwright_api.expect(same).to_have_attribute("data-status", "hidden")
    playwright_api.expect(page.locator("#live")).to_contain_text("Entry hidden")  # type: ignore[attr-defined]
    assert served.service.entry(DEMO, entry_id).status == "hidden"


def test_a_message_pinned_from_the_chat_shows_as_human_and_confirmed(
    served: Served, visit: Visit
) -> None:
    # A curator's pin reaction, through the pin service the receiver calls (docs/pins.md).
    with served.engine.connect() as conn:
        message_id = missed_message(conn, DEMO)
    assert message_id is not None
    with served.engine.begin() as conn:
        workspaces.add_curator(conn, DEMO, "ou_pinning_curator")
    pins = PinService(
        served.engine,
        LarkTimelineSettings(enabled=True, pin_from_chat_enabled=True),
        PinMetrics(),
        lark=None,
        app_id=None,
    )
    pinned = pins.handle(
        Reaction(message_id, "Pin", "user", "ou_pinning_curator", datetime.now(UTC), False)
    )
    assert pinned.pinned == (DEMO,)
    with served.engine.connect() as conn:
        entry = entries_store.get_by_fingerprint(conn, DEMO, pin_fingerprint(message_id))
    assert entry is not None
    sign_in(served, visit)
    shown = visit.page.locator(f'[data-entry-id="{entry.id}"]')  # type: ignore[attr-defined]
    playwright_api.expect(shown).to_have_attribute("data-status", "confirmed")
    playwright_api.expect(shown.locator(".badge.source")).to_contain_text("Human")
    playwright_api.expect(shown.locator(".entry-title")).to_have_text(entry.title)
    shown.get_by_text("Evidence").click()
    playwright_api.expect(shown.locator(".messages li")).to_have_count(1)


def test_a_chinese_workspaces_page_speaks_chinese_in_its_zone_and_confirms_from_it(
    served: Served, browser: object, visit: Visit
) -> None:
    incident = chinese_incident(served.engine, CHINESE, chat="oc_zh_ui")
    page = visit.page
    link = f"{served.base_url}/ui/sign-in?token={sign_in_token(served.engine, CHINESE)}"
    page.goto(link, wait_until="domcontentloaded")  # type: ignore[attr-defined]
    assert page.locator("html").get_attribute("lang") == "zh-CN"  # type: ignore[attr-defined]
    page.get_by_role("button", name="登录").click()  # type: ignore[attr-defined]
    page.wait_for_url(  # type: ignore[attr-defined]
        f"{served.base_url}/ui/workspaces/{CHINESE}", wait_until="domcontentloaded"
    )
    playwright_api.expect(page.locator("html")).to_have_attribute("lang", "zh-CN")  # type: ignore[attr-defined]
    playwright_api.expect(page.locator("html")).to_have_class(re.compile(r"\bjs\b"))  # type: ignore[attr-defined]
    playwright_api.expect(page.locator(".hint")).to_contain_text("Asia/Shanghai (UTC+8)")  # type: ignore[attr-defined]
    draft = page.locator(f'[data-entry-id="{incident.draft_id}"]')  # type: ignore[attr-defined]
    human = page.locator(f'[data-entry-id="{incident.human_id}"]')  # type: ignore[attr-defined]
    # 15:40 and 16:12 UTC on one day are 23:40 and 00:12 in Shanghai: two days, so dated.
    playwright_api.expect(draft.locator("time")).to_have_text("2026年12月4日 23:40 UTC+8")
    playwright_api.expect(human.locator("time")).to_have_text("2026年12月5日 00:12 UTC+8")
    # The viewer is in Singapore, UTC+8 as well: no "local time" repeats the time shown.
    playwright_api.expect(draft.locator(".local-time")).to_have_text("")
    for name in ("确认", "隐藏", "编辑"):
        playwright_api.expect(draft.get_by_role("button", name=name)).to_be_visible()
    playwright_api.expect(page.get_by_role("button", name="Confirm")).to_have_count(0)  # type: ignore[attr-defined]
    playwright_api.expect(draft.locator(".badge.status-draft")).to_contain_text("草稿")
    draft.get_by_role("button", name="确认").click()
    playwright_api.expect(draft).to_have_attribute("data-status", "confirmed")
    playwright_api.expect(page.locator("#live")).to_contain_text("已确认条目：")  # type: ignore[attr-defined]
    playwright_api.expect(draft.locator("time")).to_have_text("2026年12月4日 23:40 UTC+8")
    assert served.service.entry(CHINESE, incident.draft_id).status == "confirmed"
    page.reload()  # type: ignore[attr-defined]
    playwright_api.expect(draft).to_have_attribute("data-status", "confirmed")
    playwright_api.expect(draft.get_by_role("button", name="确认")).to_have_count(0)
    playwright_api.expect(draft.locator(".badge.status-confirmed")).to_contain_text("已确认")
    # A viewer elsewhere (Berlin, UTC+1 in December) sees the local time beside, in Chinese.
    berlin = browser.new_context(timezone_id="Europe/Berlin", locale="en-GB")  # type: ignore[attr-defined]
    try:
        elsewhere = berlin.new_page()
        elsewhere.set_default_timeout(30_000)
        secret = visit.context.cookies()[0]  # type: ignore[attr-defined]
        berlin.add_cookies([secret])
        elsewhere.goto(f"{served.base_url}/ui/workspaces/{CHINESE}")
        shown = elsewhere.locator(f'[data-entry-id="{incident.draft_id}"] .local-time')
        playwright_api.expect(shown).to_have_text(re.compile(r"^（本地时间 16:40 .+）$"))
    finally:
        berlin.close()


def test_the_report_view_speaks_chinese_and_sets_a_milestone_from_its_form(
    served: Served, visit: Visit
) -> None:
    workspace_id = "zh-report-ui"
    chinese_incident(served.engine, workspace_id, chat="oc_zh_report_ui")
    build_report(served.engine, workspace_id)
    page = visit.page
    link = f"{served.base_url}/ui/sign-in?token={sign_in_token(served.engine, workspace_id)}"
    page.goto(link, wait_until="domcontentloaded")  # type: ignore[attr-defined]
    page.get_by_role("button", name="登录").click()  # type: ignore[attr-defined]
    page.wait_for_url(f"{served.base_url}/ui/workspaces/{workspace_id}")  # type: ignore[attr-defined]
    page.get_by_role("link", name="报告").click()  # type: ignore[attr-defined]
    report_url = f"{served.base_url}/ui/workspaces/{workspace_id}/report"
    page.wait_for_url(report_url, wait_until="domcontentloaded")  # type: ignore[attr-defined]
    playwright_api.expect(page.locator("html")).to_have_attribute("lang", "zh-CN")  # type: ignore[attr-defined]
    playwright_api.expect(page.locator("h1")).to_have_text("支付网关超时")  # type: ignore[attr-defined]
    playwright_api.expect(page.locator("[data-drafts-pending]")).to_contain_text("条草稿待审核")  # type: ignore[attr-defined]
    started = page.locator('tr[data-milestone="started"]')  # type: ignore[attr-defined]
    playwright_api.expect(started.locator("time")).to_have_text("2026年12月4日 23:40 UTC+8")
    playwright_api.expect(started.locator("th")).to_have_text("故障开始")
    resolved = page.locator('tr[data-milestone="resolved"]')  # type: ignore[attr-defined]
    playwright_api.expect(resolved.locator("[data-duration]")).to_have_text("32 分钟 25 秒")
    # 00:15 on 5 December in Shanghai is 16:15 UTC on the 4th.
    resolved.locator('input[name="at"]').fill("2026-12-05T00:15")
    resolved.get_by_role("button", name="设定时间").click()
    page.wait_for_url(report_url, wait_until="domcontentloaded")  # type: ignore[attr-defined]
    playwright_api.expect(resolved).to_have_attribute("data-overridden", "1")
    playwright_api.expect(resolved.locator("time")).to_have_text("2026年12月5日 00:15 UTC+8")
    playwright_api.expect(resolved.locator(".source")).to_contain_text("由 ui:")
    playwright_api.expect(page.locator("[data-milestones-changed]")).to_contain_text("下次生成")  # type: ignore[attr-defined]
    stored = report_service(served.engine).milestones(workspace_id).resolved
    assert stored.at == datetime(2026, 12, 4, 16, 15, tzinfo=UTC)
    assert stored.overridden_by is not None and stored.overridden_by.startswith("ui:")
    resolved.get_by_role("button", name="改用时间线的时间").click()
    page.wait_for_url(report_url, wait_until="domcontentloaded")  # type: ignore[attr-defined]
    playwright_api.expect(resolved.locator("time")).to_have_text("2026年12月5日 00:12 UTC+8")
    assert report_service(served.engine).milestones(workspace_id).resolved.overridden_by is None
