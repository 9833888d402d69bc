"""The Markdown export in the workspace's language and zone (docs/i18n.md): Chinese words and
UTC+8 times for a `zh-CN` workspace in Asia/Shanghai, and an English workspace in UTC exactly as
it was before workspaces had a language."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from timeline_pipeline.cli.main import cli
from timeline_pipeline.curation.export import render_markdown
from timeline_pipeline.curation.links import message_applink
from timeline_pipeline.curation.timeline import EntryView, EvidenceLink, SummaryView, TimelineView
from timeline_pipeline.http.app import create_app
from timeline_pipeline.i18n.labels import CATEGORY_LABELS, category_label
from timeline_pipeline.i18n.locales import Locale, Presentation
from timeline_pipeline.settings import LarkTimelineSettings, RuntimeEnvironment, Settings
from timeline_pipeline.store import workspaces
from timeline_pipeline.ui.pages import SESSION_COOKIE
from timeline_pipeline_tests.curation.support import (
    IMPACT,
    ROLLBACK,
    W1,
    incident,
    say,
    synthesize,
)
from timeline_pipeline_tests.ui.support import chinese_incident, session

T = datetime(2026, 12, 4, 15, 40, tzinfo=UTC)  # 23:40 in Shanghai
SHANGHAI = Presentation(Locale.ZH_CN, ZoneInfo("Asia/Shanghai"))


def entry(
    entry_id: int,
    title: str,
    at: datetime,
    *,
    category: str = "mitigation",
    status: str = "confirmed",
    links: tuple[EvidenceLink, ...] = (),
    **fields: object,
) -> EntryView:
    values: dict[str, object] = {
        "id": entry_id,
        "workspace_id": "inc-1",
        "occurred_at": at,
        "title": title,
        "detail": None,
        "category": category,
        "source": "ai",
        "status": status,
        "human_edited": False,
        "revision": 1,
        "etag": f'"e{entry_id}.r1"',
        "evidence": links,
        "created_at": at,
        "updated_at": at,
    }
    values.update(fields)
    return EntryView(**values)  # type: ignore[arg-type]


LINK = EvidenceLink(7, T, message_applink("oc_abc", "om_7"))
MANY = tuple(EvidenceLink(100 + n, T, None) for n in range(22))


def across_midnight(summary_source: str = "ai") -> TimelineView:
    """An incident from 23:40 to 00:35 Shanghai time: two local days, one UTC day."""
    return TimelineView(
        workspace_id="inc-1",
        statuses=("draft", "confirmed"),
        entries=[
            entry(1, "支付网关 p99 飙到 3s", T, category="impact", links=(LINK,)),
            entry(
                2,
                "回滚 payments-api 到 v41",
                T + timedelta(minutes=30),
                status="draft",
                human_edited=True,
                links=MANY,
            ),
            entry(
                3, "连接池耗尽", T + timedelta(minutes=55), category="root_cause", source="human"
            ),
        ],
        summary=SummaryView("inc-1", "支付网关故障。\n已回滚。", summary_source, 3, "", T),
        title="支付故障",
        next_after=(T, 3),
    )


def test_a_chinese_workspace_exports_in_chinese_with_its_local_dates_and_zone() -> None:
    generated = datetime(2026, 12, 4, 20, 5, tzinfo=UTC)

    document = render_markdown(across_midnight(), generated_at=generated, presentation=SHANGHAI)

    lines = document.splitlines()
    assert lines[:8] == [
        "# 故障时间线：支付故障",
        "",
        "工作区 `inc-1` · 共 3 条（草稿、已确认）· 由 timeline-pipeline 于 2026-12-05 04:05 "
        "UTC+8 导出。",
        "",
        "## 摘要",
        "",
        "支付网关故障。",
        "已回滚。",
    ]
    assert "_摘要自动生成，第 3 版。_" in lines
    assert lines.index("## 时间线") > lines.index("## 摘要")
    table = lines[lines.index("## 时间线") + 2 :]
    assert table[:2] == [
        "| 时间（UTC+8） | 类别 | 内容 | 状态 | 来源消息 |",
        "|---|---|---|---|---|",
    ]
    # The local date changes at midnight: 23:40 on the 4th, then 00:10 and 00:35 on the 5th.
    assert [row.split(" | ")[0] for row in table[2:5]] == [
        "| 2026-12-04 23:40",
        "| 2026-12-05 00:10",
        "| 2026-12-05 00:35",
    ]
    assert [row.split(" | ")[1:2] + row.split(" | ")[3:4] for row in table[2:5]] == [
        ["影响", "已确认"],
        ["缓解措施", "草稿，已人工编辑"],
        ["根因", "已确认，人工添加"],
    ]
    assert table[3].endswith("#118 #119 另有 2 条 |")
    assert table[-1] == "_时间线条目较多，本导出未全部列出。_"


def test_a_chinese_export_of_a_curators_summary_and_of_nothing_yet() -> None:
    written = render_markdown(across_midnight("human"), generated_at=T, presentation=SHANGHAI)
    assert "_摘要由人工撰写，第 3 版。_" in written.splitlines()

    empty = render_markdown(
        TimelineView("inc-1", ("confirmed",), [], None), generated_at=T, presentation=SHANGHAI
    )
    assert "_暂无摘要。_" in empty.splitlines() and "_暂无条目。_" in empty.splitlines()
    assert "Summary" not in empty and "Timeline" not in empty


def test_an_english_workspace_in_utc_exports_byte_for_byte_what_it_did() -> None:
    """The document as the export wrote it before workspaces had a language (HEAD 34794ab)."""
    view = across_midnight()
    expected = (
        "# Incident timeline: 支付故障\n"
        "\n"
        "Workspace `inc-1` · 3 entries (draft, confirmed) · exported 2026-12-04 20:05 UTC by "
        "timeline-pipeline.\n"
        "\n"
        "## Summary\n"
        "\n"
        "支付网关故障。\n"
        "已回滚。\n"
        "\n"
        "_Summary generated, revision 3._\n"
        "\n"
        "## Timeline\n"
        "\n"
        "| Time (UTC) | Category | Entry | Status | Evidence |\n"
        "|---|---|---|---|---|\n"
        "| 2026-12-04 15:40 | Impact | **支付网关 p99 飙到 3s** | confirmed | "
        "[#7](https://applink.larksuite.com/client/chat/open?openChatId=oc_abc&openMessageId=om_7)"
        " |\n"
        "| 2026-12-04 16:10 | Mitigation | **回滚 payments-api 到 v41** | draft, edited | "
        + " ".join(f"#{100 + n}" for n in range(20))
        + " +2 more |\n"
        "| 2026-12-04 16:35 | Root cause | **连接池耗尽** | confirmed, added by curator | - |\n"
        "\n"
        "_The timeline is longer than this export shows._\n"
    )
    generated = datetime(2026, 12, 4, 20, 5, tzinfo=UTC)

    assert render_markdown(view, generated_at=generated) == expected
    assert (
        render_markdown(view, generated_at=generated, presentation=Presentation.default())
        == expected
    )


def test_the_zone_is_named_in_each_time_when_daylight_saving_changes_inside_the_incident() -> None:
    # New York leaves daylight saving at 06:00 UTC on 2026-11-01 (02:00 EDT becomes 01:00 EST).
    start = datetime(2026, 11, 1, 5, 30, tzinfo=UTC)
    view = TimelineView(
        "inc-1",
        ("confirmed",),
        [entry(1, "Checkout down", start), entry(2, "Rolled back", start + timedelta(hours=1))],
        None,
    )
    shown = Presentation(Locale.EN, ZoneInfo("America/New_York"))

    lines = render_markdown(view, generated_at=start, presentation=shown).splitlines()

    assert "exported 2026-11-01 01:30 UTC-4 by timeline-pipeline." in lines[2]
    table = lines[lines.index("## Timeline") + 2 :]
    assert table[0].startswith("| Time | Category |")
    assert [row.split(" | ")[0] for row in table[2:]] == [
        "| 2026-11-01 01:30 UTC-4",
        "| 2026-11-01 01:30 UTC-5",
    ]


@pytest.fixture
def run(db_url: str, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("TIMELINE_DATABASE_URL", db_url)
    return CliRunner()


def test_timeline_export_writes_a_chinese_workspace_in_chinese_and_its_zone(
    run: CliRunner, engine: Engine, tmp_path: Path
) -> None:
    incident(engine)
    say(engine, W1, [IMPACT, ROLLBACK])
    synthesize(engine, W1)
    with engine.begin() as conn:
        workspaces.set_language(conn, "inc-1", locale="zh-CN", time_zone="Asia/Shanghai")
    out = tmp_path / "postmortem.md"

    result = run.invoke(cli, ["timeline", "export", "inc-1", "--output", str(out)])

    assert result.exit_code == 0, result.output
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "# 故障时间线：inc-1"
    assert lines[2].endswith(" UTC+8 导出。")
    assert "| 时间（UTC+8） | 类别 | 内容 | 状态 | 来源消息 |" in lines
    local = W1.astimezone(ZoneInfo("Asia/Shanghai"))
    rows = [line for line in lines if line.startswith(f"| {local:%Y-%m-%d}")]
    assert len(rows) == 2
    # Whichever category the synthesizer drafted, it is named as `i18n.labels` names it.
    chinese = {category_label(category, Locale.ZH_CN) for category in CATEGORY_LABELS}
    assert {row.split(" | ")[1] for row in rows} <= chinese
    assert {row.split(" | ")[3] for row in rows} == {"草稿"}
    stamp = f"| {local:%Y-%m-%d %H}:{local.minute + 1:02d}"
    assert all(row.split(" | ")[0] == stamp for row in rows)


def test_the_pages_download_is_the_chinese_workspaces_export(engine: Engine) -> None:
    incident = chinese_incident(engine, "zh-export")
    secret, _csrf = session(engine, incident.workspace_id)
    settings = Settings(LarkTimelineSettings(), RuntimeEnvironment(LARK_VERIFICATION_TOKEN="vt"))
    with TestClient(create_app(settings, engine)) as client:
        client.cookies.set(SESSION_COOKIE, secret, path="/ui")
        answer = client.get(f"/ui/workspaces/{incident.workspace_id}/export.md")

    assert answer.status_code == 200
    lines = answer.text.splitlines()
    assert lines[0] == "# 故障时间线：支付网关超时"
    rows = [line for line in lines if line.startswith("| 2026-")]
    # 23:40 on 4 December and 00:12 on 5 December in Shanghai: one UTC day, two local ones.
    assert [row.split(" | ")[:2] for row in rows] == [
        ["| 2026-12-04 23:40", "影响"],
        ["| 2026-12-05 00:12", "恢复"],
    ]
    assert "| 时间（UTC+8） | 类别 | 内容 | 状态 | 来源消息 |" in lines
