"""The report written out (timeline_pipeline/report/render.py, docs/report.md): Markdown in the
workspace's language and zone, with plain constructs Lark's converter accepts, and JSON in UTC."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from timeline_pipeline.curation.timeline import EntryView, EvidenceLink, TimelineView
from timeline_pipeline.i18n.locales import Locale, Presentation
from timeline_pipeline.report.milestones import (
    IncidentSignals,
    MilestoneName,
    MilestoneOverride,
    derive_milestones,
    durations_of,
)
from timeline_pipeline.report.render import content_json, human_duration, render_markdown
from timeline_pipeline.report.sections import ReportContent, build_content, facts_of

T0 = datetime(2026, 5, 6, 15, 40, tzinfo=UTC)  # 23:40 in Shanghai
SHANGHAI = Presentation(Locale.ZH_CN, ZoneInfo("Asia/Shanghai"))
NEW_YORK = Presentation(Locale.EN, ZoneInfo("America/New_York"))
APPLINK = "https://applink.larksuite.com/client/message/link/open?token=om_{}"


def at(minutes: float, start: datetime = T0) -> datetime:
    return start + timedelta(minutes=minutes)


def entry(
    entry_id: int,
    when: datetime,
    category: str,
    title: str,
    *,
    status: str = "confirmed",
    detail: str | None = None,
    links: tuple[str | None, ...] = ("default",),
    recalled: bool = False,
) -> EntryView:
    evidence = tuple(
        EvidenceLink(
            entry_id * 10 + place,
            when,
            APPLINK.format(entry_id * 10 + place) if url == "default" else url,
        )
        for place, url in enumerate(links)
    )
    return EntryView(
        id=entry_id,
        workspace_id="inc-9",
        occurred_at=when,
        title=title,
        detail=detail,
        category=category,
        source="ai",
        status=status,
        human_edited=False,
        revision=1,
        etag=f'"e{entry_id}.r1"',
        evidence=evidence,
        created_at=when,
        updated_at=when,
        recalled_evidence=recalled,
    )


def across_midnight() -> list[EntryView]:
    """From 23:40 to 00:52 Shanghai time: two local days, one UTC day."""
    return [
        entry(1, at(0), "impact", "支付网关 p99 飙到 3s"),
        entry(2, at(8), "finding", "连接池打满 200/200", status="draft"),
        entry(3, at(15), "decision", "切主到 mysql-order-02"),
        entry(4, at(30), "mitigation", "切主完成", detail="VIP 已漂移"),
        entry(5, at(45), "root_cause", "宿主机 nvme 盘硬件故障"),
        entry(6, at(72), "recovery", "p99 回落到 180ms"),
        entry(7, at(80), "next_step", "补建从库 mysql-order-04（陈晨，明天）"),
        entry(8, at(20), "impact", "用户手机号 138…", recalled=True),
    ]


def content_of(
    entries: list[EntryView],
    *overrides: MilestoneOverride,
    title: str = "下单接口超时",
    alert: datetime | None = None,
) -> ReportContent:
    shown = TimelineView(
        workspace_id="inc-9", statuses=("draft", "confirmed"), entries=entries, summary=None
    )
    first = min((item.occurred_at for item in entries), default=T0)
    milestones = derive_milestones(
        facts_of(shown), IncidentSignals(first, first, alert, None), overrides
    )
    return build_content(
        shown,
        title=title,
        status="recovered",
        milestones=milestones,
        durations=durations_of(milestones),
        hidden_count=0,
    )


def headings(markdown: str) -> list[str]:
    return [line for line in markdown.splitlines() if line.startswith("#")]


def test_an_english_workspace_in_utc_reads_in_english_with_utc() -> None:
    markdown = render_markdown(content_of(across_midnight(), title="Order API timeouts"))
    assert markdown.startswith("# Incident report: Order API timeouts\n\n")
    assert headings(markdown) == [
        "# Incident report: Order API timeouts",
        "## Milestones",
        "## Impact",
        "## Root cause",
        "## Decisions",
        "## Mitigations",
        "## Timeline",
        "## Follow-ups",
        "## Unconfirmed drafts",
    ]
    assert "- **Status:** Recovered" in markdown
    assert "- **Window:** 2026-05-06 15:40 UTC to 2026-05-06 16:52 UTC" in markdown
    assert "- **Entries:** confirmed 6 · drafts 1 · hidden 0 · withheld 1" in markdown
    assert "| Started | 2026-05-06 15:40 UTC | [entry #1](" + APPLINK.format(10) + ") |" in markdown
    assert "| Detected | 2026-05-06 15:40 UTC | from the chat |" in markdown
    assert "| Resolved | 2026-05-06 16:52 UTC | [entry #6](" in markdown
    assert "- **Time to detect:** 0 s" in markdown
    assert "- **Time to mitigate:** 30 min" in markdown
    assert "- **Time to resolve:** 1 h 12 min" in markdown
    assert "| Time (UTC) | Category | Entry | Messages |" in markdown
    assert "| 2026-05-06 16:10 | Mitigation | 切主完成 — VIP 已漂移 | [1](" in markdown
    assert "- 补建从库 mysql-order-04（陈晨，明天） — **Owners:** 陈晨" in markdown


def test_a_chinese_workspace_in_shanghai_reads_in_chinese_across_midnight() -> None:
    markdown = render_markdown(content_of(across_midnight()), SHANGHAI)
    assert headings(markdown) == [
        "# 故障报告：下单接口超时",
        "## 关键节点",
        "## 影响",
        "## 根因",
        "## 决策",
        "## 缓解措施",
        "## 时间线",
        "## 后续行动",
        "## 待确认草稿",
    ]
    assert "- **状态**：已恢复" in markdown
    assert "- **时间范围**：2026-05-06 23:40 UTC+8 至 2026-05-07 00:52 UTC+8" in markdown
    assert "| 故障开始 | 2026-05-06 23:40 UTC+8 | [条目 #1](" in markdown
    assert "| 故障解决 | 2026-05-07 00:52 UTC+8 | [条目 #6](" in markdown
    assert "- **解决用时**：1 小时 12 分钟" in markdown
    assert "- **缓解用时**：30 分钟" in markdown
    assert "| 时间（UTC+8） | 类别 | 内容 | 来源消息 |" in markdown
    rows = [line for line in markdown.splitlines() if line.startswith("| 2026-")]
    assert [row.split(" | ")[0] for row in rows] == [
        "| 2026-05-06 23:40",
        "| 2026-05-06 23:48",
        "| 2026-05-06 23:55",
        "| 2026-05-07 00:10",
        "| 2026-05-07 00:25",
        "| 2026-05-07 00:52",
        "| 2026-05-07 01:00",
    ]
    assert "| 2026-05-07 00:10 | 缓解措施 | 切主完成 — VIP 已漂移 | [1](" in markdown
    assert "- 补建从库 mysql-order-04（陈晨，明天） — **负责人**：陈晨" in markdown
    assert "- 2026-05-06 23:48 UTC+8 · 发现 · 连接池打满 200/200" in markdown
    for english in ("Milestones", "Timeline", "Started", "Time to", "Window", "from the chat"):
        assert english not in markdown


def test_a_daylight_saving_change_names_the_zone_in_each_cell() -> None:
    start = datetime(2026, 3, 8, 6, 30, tzinfo=UTC)  # 01:30 EST; clocks spring forward at 07:00
    entries = [
        entry(1, start, "impact", "Checkout errors"),
        entry(2, at(60, start), "recovery", "Checkout back"),
    ]
    markdown = render_markdown(content_of(entries, title="DST"), NEW_YORK)
    assert "| Time | Category | Entry | Messages |" in markdown
    assert "| 2026-03-08 01:30 UTC-5 | Impact | Checkout errors |" in markdown
    assert "| 2026-03-08 03:30 UTC-4 | Recovery | Checkout back |" in markdown
    assert "- **Time to resolve:** 1 h" in markdown


def test_pending_drafts_are_said_first() -> None:
    markdown = render_markdown(content_of(across_midnight()))
    first_paragraph = markdown.split("\n\n")[1]
    assert first_paragraph == (
        "_Built while 1 draft awaits review: it is marked below and listed under Unconfirmed "
        "drafts, and the report may still change._"
    )
    assert "| 2026-05-06 15:48 | Finding | 连接池打满 200/200 _(draft)_ |" in markdown
    chinese = render_markdown(content_of(across_midnight()), SHANGHAI).split("\n\n")[1]
    assert chinese.startswith("_本报告生成时仍有 1 条草稿待审核")
    confirmed = [item for item in across_midnight() if item.status != "draft"]
    plain = render_markdown(content_of(confirmed))
    assert plain.split("\n\n")[1].startswith("- **Status:**")
    assert "_None: every entry in this report is confirmed._" in plain


def test_an_override_shows_who_set_it_and_what_the_timeline_says() -> None:
    content = content_of(
        across_midnight(),
        MilestoneOverride(MilestoneName.STARTED, at(-5), "cli:alice", at(200)),
    )
    markdown = render_markdown(content)
    assert (
        "| Started | 2026-05-06 15:35 UTC | set by cli:alice (timeline: 2026-05-06 15:40 UTC) |"
    ) in markdown
    assert "- **Time to resolve:** 1 h 17 min" in markdown
    chinese = render_markdown(content, SHANGHAI)
    assert (
        "| 故障开始 | 2026-05-06 23:35 UTC+8 | "
        "由 cli:alice 设定（时间线：2026-05-06 23:40 UTC+8） |"
    ) in chinese


def test_a_recalled_entry_is_left_out_of_every_format() -> None:
    content = content_of(across_midnight())
    markdown = render_markdown(content)
    document = json.dumps(content_json(content), ensure_ascii=False)
    for text in (markdown, document, render_markdown(content, SHANGHAI)):
        assert "138" not in text
        assert "om_80" not in text
    assert "_1 entry is left out because a message it cites was recalled._" in markdown
    assert "_有 1 条条目未收录：其引用的消息已被撤回。_" in render_markdown(content, SHANGHAI)
    assert 80 not in content_json(content)["cited_evidence_ids"]


def test_text_is_literal_and_no_html_reaches_the_converter() -> None:
    entries = [
        entry(1, at(0), "impact", "a | b <script>alert(1)</script>", detail="line one\nline two"),
        entry(
            2, at(5), "finding", "[click](javascript:alert(1)) **bold**", links=("javascript:x",)
        ),
        entry(3, at(6), "finding", "linkless", links=(None,)),
        entry(4, at(7), "finding", "spaced", links=("https://example.test/a b(c)",)),
    ]
    markdown = render_markdown(content_of(entries, title="x | <b>y</b>"))
    assert "<" not in markdown
    assert markdown.startswith("# Incident report: x \\| &lt;b\\>y&lt;/b\\>\n")
    assert "| a \\| b &lt;script\\>alert(1)&lt;/script\\> — line one line two |" in markdown
    assert "\\[click\\](javascript:alert(1)) \\*\\*bold\\*\\* | — |" in markdown
    assert "| linkless | — |" in markdown
    assert "[1](https://example.test/a%20b%28c%29)" in markdown


def test_many_messages_are_counted_not_all_linked() -> None:
    many = entry(1, at(0), "impact", "thread", links=("default",) * 23)
    markdown = render_markdown(content_of([many]))
    row = next(line for line in markdown.splitlines() if "| thread |" in line)
    assert "[20](" in row and "[21](" not in row
    assert row.endswith(" +3 more |")


def test_an_empty_report_says_so() -> None:
    shown = TimelineView(workspace_id="inc-9", statuses=(), entries=[], summary=None)
    milestones = derive_milestones([], IncidentSignals(T0, None, None, None))
    content = build_content(
        shown,
        title="quiet",
        status="firing",
        milestones=milestones,
        durations=durations_of(milestones),
        hidden_count=3,
    )
    markdown = render_markdown(content)
    assert "- **Status:** Firing" in markdown
    assert "- **Entries:** confirmed 0 · drafts 0 · hidden 3 · withheld 0" in markdown
    assert "| Detected | 2026-05-06 15:40 UTC | from the chat |" in markdown
    assert markdown.count("_Nothing recorded yet._") == 6
    assert "| Started | — | not yet |" in markdown
    assert "- **Window:** — to ongoing" in markdown
    assert "- **Time to resolve:** —" in markdown


def test_content_json() -> None:
    content = content_of(
        across_midnight(), MilestoneOverride(MilestoneName.MITIGATED, at(20), "ui:7", at(200))
    )
    document = content_json(content)
    assert json.loads(json.dumps(document)) == document
    assert document["title"] == "下单接口超时"
    assert document["status"] == "recovered"
    assert document["window"] == {"start": "2026-05-06T15:40:00Z", "end": "2026-05-06T16:52:00Z"}
    assert document["milestones"]["mitigated"] == {
        "at": "2026-05-06T16:00:00Z",
        "entry_id": None,
        "derived_at": "2026-05-06T16:10:00Z",
        "derived_entry_id": 4,
        "overridden_by": "ui:7",
        "overridden_at": "2026-05-06T19:00:00Z",
    }
    assert document["milestones"]["started"]["entry_id"] == 1
    assert list(document["milestones"]) == ["started", "detected", "mitigated", "resolved"]
    assert document["durations"] == {
        "time_to_detect": 0,
        "time_to_mitigate": 1200,
        "time_to_resolve": 4320,
    }
    assert [section["key"] for section in document["sections"]] == [
        "impact",
        "root_cause",
        "decisions",
        "mitigations",
        "timeline",
        "follow_ups",
        "unconfirmed",
    ]
    assert document["sections"][1]["title"] == "Root cause"
    assert document["sections"][5]["items"] == [
        {
            "entry_id": 7,
            "occurred_at": "2026-05-06T17:00:00Z",
            "category": "next_step",
            "status": "confirmed",
            "text": "补建从库 mysql-order-04（陈晨，明天）",
            "links": [APPLINK.format(70)],
            "owners": ["陈晨"],
        }
    ]
    assert document["counts"] == {"confirmed": 6, "drafts": 1, "hidden": 0, "withheld": 1}
    chinese = content_json(content, SHANGHAI)
    assert [section["title"] for section in chinese["sections"]] == [
        "影响",
        "根因",
        "决策",
        "缓解措施",
        "时间线",
        "后续行动",
        "待确认草稿",
    ]
    assert chinese["milestones"] == document["milestones"]  # UTC in every language


@pytest.mark.parametrize(
    ("seconds", "english", "chinese"),
    [
        (None, "—", "—"),
        (0, "0 s", "0 秒"),
        (45, "45 s", "45 秒"),
        (60, "1 min", "1 分钟"),
        (190, "3 min 10 s", "3 分钟 10 秒"),
        (3600, "1 h", "1 小时"),
        (4320, "1 h 12 min", "1 小时 12 分钟"),
        (4359, "1 h 12 min", "1 小时 12 分钟"),
        (86400 + 3 * 3600, "27 h", "27 小时"),
        (86400, "24 h", "24 小时"),
        (2 * 86400 + 4 * 3600 + 59, "2 d 4 h", "2 天 4 小时"),
        (3 * 86400, "3 d", "3 天"),
    ],
)
def test_human_duration(seconds: int | None, english: str, chinese: str) -> None:
    assert human_duration(seconds) == english
    assert human_duration(seconds, SHANGHAI) == chinese


_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=60), min_size=1, max_size=4), st.text(max_size=30))
def test_any_text_keeps_the_tables_whole_and_no_html(titles: list[str], detail: str) -> None:
    entries = [
        entry(place, at(place), "next_step", title, detail=detail or None)
        for place, title in enumerate(titles, start=1)
    ]
    for shown in (Presentation.default(), SHANGHAI):
        markdown = render_markdown(content_of(entries, title=titles[0]), shown)
        assert "<" not in markdown
        for line in markdown.splitlines():
            if line.startswith("|"):
                assert len(_UNESCAPED_PIPE.findall(line)) in (4, 5), line
