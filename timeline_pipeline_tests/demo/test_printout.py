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
