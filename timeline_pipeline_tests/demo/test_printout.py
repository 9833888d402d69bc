"""What `demo` prints for a person: unchanged for English in UTC, Chinese and local for a zh-CN
workspace in Asia/Shanghai (docs/i18n.md)."""

from __future__ import annotations

from typing import Any
from zoneinfo import ZoneInfo

import pytest

from timeline_pipeline.demo.printout import display_width, human_lines
from timeline_pipeline.i18n.locales import Locale, Presentation

SHANGHAI = Presentation(Locale.ZH_CN, ZoneInfo("Asia/Shanghai"))


def _view(summary: str | None = "Impact: checkout slow\nRecovery: back") -> dict[str, Any]:
    return {
        "entries": [
            {
                "occurred_at": "2026-12-03T15:55:00+00:00",
                "category": "impact",
                "title": "下单接口 p99 涨到 3 秒",
                "evidence": [{"link": "https://l/1"}, {"link": "https://l/2"}],
            },
            {
                "occurred_at": "2026-12-03T16:05:00+00:00",
                "category": "root_cause",
                "title": "缓存没有容量上限",
                "evidence": [{"link": "https://l/3"}],
            },
            {
                "occurred_at": "2026-12-03T16:09:00+00:00",
                "category": "mitigation",
                "title": "rolled back",
                "evidence": [{"link": ""}],
            },
        ],
        "summary": summary,
    }


def _print(view: dict[str, Any], presentation: Presentation, *, serving: bool = False) -> str:
    lines = human_lines(view, "demo-1", presentation, dagster_home="/h", serving=serving, port=8081)
    return "\n".join(line.text for line in lines)


def test_english_in_utc_prints_exactly_what_the_demo_always_printed() -> None:
    lines = human_lines(
        _view(), "demo-1", Presentation.default(), dagster_home="/h", serving=False, port=8081
    )
    assert [line.text for line in lines] == [
        "",
        "Timeline of workspace demo-1",
        "  15:55  impact      下单接口 p99 涨到 3 秒",
        "                     https://l/1  (+1 more)",
        "  16:05  root_cause  缓存没有容量上限",
        "                     https://l/3",
        "  16:09  mitigation  rolled back",
        "",
        "Summary",
        "  Impact: checkout slow",
        "  Recovery: back",
        "",
        "Open the same data:",
        "  Dagster UI: DAGSTER_HOME=/h .venv/bin/dagster dev -w workspace.yaml",
        "  API:        timeline-pipeline token create --workspace demo-1",
        "              timeline-pipeline serve --port 8080  # then, with the token:",
        "              curl -H 'Authorization: Bearer <token>' "
        "http://127.0.0.1:8080/api/workspaces/demo-1/timeline",
        "  CLI:        timeline-pipeline timeline show demo-1",
        "  Page:       timeline-pipeline serve --port 8081  # or `demo --serve`; "
        "then open this one-time link (valid 10 minutes):",
    ]
    assert [line.text for line in lines if line.bold] == ["Timeline of workspace demo-1", "Summary"]
    serving = _print(_view(None), Presentation.default(), serving=True).splitlines()
    assert "  (no summary yet)" in serving
    assert serving[-1] == "  Page:       open this one-time sign-in link (valid 10 minutes):"


def test_a_chinese_workspace_reads_chinese_names_and_local_times_with_dates_across_midnight() -> (
    None
):
    text = _print(_view(), SHANGHAI)
    lines = text.splitlines()
    assert lines[1] == "工作区 demo-1 的时间线"
    # The chat runs from 23:55 to 00:09 in UTC+8: two local days, so every time has its date.
    assert lines[2] == "  2026年12月3日 23:55 UTC+8  影响" + " " * 7 + " 下单接口 p99 涨到 3 秒"
    assert lines[3].endswith("https://l/1  （另有 1 条）")
    assert lines[4].startswith("  2026年12月4日 00:05 UTC+8  根因 ")
    assert lines[6].startswith("  2026年12月4日 00:09 UTC+8  缓解措施 ")
    for word in ("impact", "root_cause", "mitigation", "Timeline", "Summary", "Open the same"):
        assert word not in text, word
    assert "摘要" in lines
    assert "同一份数据还可以这样看：" in lines
    assert "  命令行：" in text and "  时间线页面：" in text
    assert "（暂无摘要）" in _print(_view(None), SHANGHAI)


def test_one_local_day_shows_times_without_dates() -> None:
    view = _view()
    view["entries"] = view["entries"][:1]
    lines = _print(view, SHANGHAI).splitlines()
    assert lines[2].startswith("  23:55 UTC+8  影响 ")


def test_columns_line_up_in_terminal_columns_whatever_the_script() -> None:
    """Han characters take two columns: the titles start in one column on every line."""
    lines = human_lines(_view(), "demo-1", SHANGHAI, dagster_home="/h", serving=False, port=1)
    rows = [line.text for line in lines[2:8]]
    title_columns = {
        display_width(row[: row.index(title)])
        for row, title in zip(rows[::2], ("下单接口", "缓存没有", "rolled back"), strict=True)
    }
    assert len(title_columns) == 1
    link_column = display_width(rows[1][: rows[1].index("https://")])
    assert {link_column} == title_columns
    labelled = [
        line.text for line in lines if line.text.startswith(("  Dagster", "  API", "  命令行"))
    ]
    starts = {
        display_width(row[: row.index(key)])
        for row, key in zip(
            labelled,
            ("DAGSTER_HOME", "timeline-pipeline token", "timeline-pipeline timeline"),
            strict=True,
        )
    }
    assert len(starts) == 1


@pytest.mark.parametrize(
    ("text", "width"), [("abc", 3), ("影响", 4), ("缓解措施", 8), ("p99 涨到", 8), ("（", 2)]
)
def test_display_width(text: str, width: int) -> None:
    assert display_width(text) == width


def _report() -> dict[str, Any]:
    """`demo.view.demo_report`'s shape: a report across local midnight in UTC+8, one milestone
    set by a curator and one not reached."""
    return {
        "revision": 2,
        "milestones": {
            "started": {"at": "2026-12-03T15:55:00Z", "entry_id": 7, "overridden_by": None},
            "detected": {"at": "2026-12-03T15:50:00Z", "entry_id": None, "overridden_by": None},
            "mitigated": {
                "at": "2026-12-03T16:09:00Z",
                "entry_id": None,
                "overridden_by": "cli:ana",
            },
            "resolved": {"at": None, "entry_id": None, "overridden_by": None},
        },
        "durations": {"time_to_detect": 0, "time_to_mitigate": 840, "time_to_resolve": None},
        "counts": {"confirmed": 2, "drafts": 1, "hidden": 3, "withheld": 1},
        "sections": {
            "impact": 1,
            "root_cause": 1,
            "decisions": 0,
            "mitigations": 1,
            "timeline": 3,
            "follow_ups": 1,
            "unconfirmed": 1,
        },
        "owners": ["Dana", "陈晨"],
        "document_url": "https://example.feishu.cn/docx/doxsim1",
        "reply": "The incident report is ready: https://example.feishu.cn/docx/doxsim1",
    }


def test_the_report_follows_the_summary_in_short_with_its_document_link() -> None:
    lines = human_lines(
        _view(),
        "demo-1",
        Presentation.default(),
        dagster_home="/h",
        serving=False,
        port=8081,
        report=_report(),
    )
    texts = [line.text for line in lines]
    start = texts.index("Incident report, revision 2")
    assert texts[start - 1] == ""
    assert texts[start - 3 : start - 1] == ["  Impact: checkout slow", "  Recovery: back"]
    assert texts[start : start + 12] == [
        "Incident report, revision 2",
        "  Started    15:55 UTC  entry #7",
        "  Detected   15:50 UTC  from the chat",
        "  Mitigated  16:09 UTC  set by cli:ana",
        "  Resolved   not yet",
        "  Time to detect 0 s · to mitigate 14 min · to resolve —",
        "  Entries: 2 confirmed · 1 drafts · 3 hidden · 1 withheld for a recalled message",
        "  Sections: Impact 1 · Root cause 1 · Decisions 0 · Mitigations 1 · Timeline 3 · "
        "Follow-ups 1 · Unconfirmed drafts 1",
        "  Follow-up owners: Dana, 陈晨",
        "  Lark document: https://example.feishu.cn/docx/doxsim1",
        "  Chat reply:    The incident report is ready: https://example.feishu.cn/docx/doxsim1",
        "",
    ]
    assert texts[start + 12] == "Open the same data:"
    assert (
        "              timeline-pipeline report show demo-1  # the whole report, in Markdown"
        in (texts)
    )
    assert [line.text for line in lines if line.bold] == [
        "Timeline of workspace demo-1",
        "Summary",
        "Incident report, revision 2",
    ]


def test_a_chinese_workspace_reads_the_report_in_chinese_with_local_dated_times() -> None:
    report = {**_report(), "reply": "故障报告已生成：https://example.feishu.cn/docx/doxsim1"}
    lines = human_lines(
        _view(), "demo-1", SHANGHAI, dagster_home="/h", serving=False, port=8081, report=report
    )
    texts = [line.text for line in lines]
    start = texts.index("故障报告（第 2 版）")
    # 23:50 and 00:09 in UTC+8: two local days, so every milestone's time has its date.
    assert texts[start + 1 : start + 12] == [
        "  故障开始  2026年12月3日 23:55 UTC+8  条目 #7",
        "  故障发现  2026年12月3日 23:50 UTC+8  来自群聊",
        "  故障缓解  2026年12月4日 00:09 UTC+8  由 cli:ana 设定",
        "  故障解决  尚无",
        "  发现用时 0 秒 · 缓解用时 14 分钟 · 解决用时 —",
        "  条目：已确认 2 · 草稿 1 · 已隐藏 3 · 因消息撤回未收录 1",
        "  各部分：影响 1 · 根因 1 · 决策 0 · 缓解措施 1 · 时间线 3 · 后续行动 1 · 待确认草稿 1",
        "  后续行动负责人：Dana、陈晨",
        "  飞书文档： https://example.feishu.cn/docx/doxsim1",
        "  群聊回复： 故障报告已生成：https://example.feishu.cn/docx/doxsim1",
        "",
    ]
    assert "  " * 8 + " timeline-pipeline report show demo-1  # 完整报告（Markdown）" in texts


def test_a_report_not_written_to_lark_says_so_and_shows_no_reply() -> None:
    report = {**_report(), "document_url": None, "reply": "", "owners": []}
    texts = [
        line.text
        for line in human_lines(
            _view(),
            "demo-1",
            Presentation.default(),
            dagster_home="/h",
            serving=False,
            port=1,
            report=report,
        )
    ]
    assert "  Lark document: (not written)" in texts
    assert not any(text.startswith(("  Chat reply:", "  Follow-up owners:")) for text in texts)
