"""A title's own label is said once, under its section's heading: one rule over the category
words of every language the product speaks (summary/own_label.py), not a list of phrases."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from timeline_pipeline.summary.contract import SummaryEntry, SummaryInput
from timeline_pipeline.summary.deterministic import DeterministicSummarizer
from timeline_pipeline.summary.own_label import strip_own_label

STRIPPED = [
    # (title, its category, the claim left under the heading)
    ("Root cause identified: pool exhausted by the retry storm", "root_cause",
     "Pool exhausted by the retry storm"),
    ("Root Cause Analysis: pool exhausted", "root_cause", "Pool exhausted"),
    ("[Root cause] pool exhausted", "root_cause", "Pool exhausted"),
    ("[Root cause]: pool exhausted", "root_cause", "Pool exhausted"),
    ("RCA - pool exhausted", "root_cause", "Pool exhausted"),
    ("Mitigation applied: rolled back to v41", "mitigation", "Rolled back to v41"),
    ("Decision made: freeze payment deploys", "decision", "Freeze payment deploys"),
    ("Root cause:", "root_cause", ""),
    ("Root cause (draft): pool exhausted", "root_cause", "(draft) pool exhausted"),
    ("INC-2291 follow-ups: fix the rollback path", "next_step", "Fix the rollback path"),
    ("Next steps \u2013 add alerting", "next_step", "Add alerting"),
    ("根因：连接池耗尽", "root_cause", "连接池耗尽"),
    ("【根因】连接池耗尽", "root_cause", "连接池耗尽"),
    ("根因分析（初步）：配置推送错误", "root_cause", "（初步）配置推送错误"),
    ("根因已定位: 配置推送错误", "root_cause", "配置推送错误"),
    ("决策：回滚到 v41", "decision", "回滚到 v41"),
    ("缓解措施：已摘流量", "mitigation", "已摘流量"),
    ("后续行动：补充连接池告警", "next_step", "补充连接池告警"),
    ("影响：华东用户下单失败", "impact", "华东用户下单失败"),
    ("恢复：错误率回落", "recovery", "错误率回落"),
    ("发现：重试风暴", "finding", "重试风暴"),
]  # fmt: skip

KEPT = [
    # A word that changes the claim is not an announcing word.
    ("Decision needed: fail over to the secondary?", "decision"),
    ("Recovery ETA: 15 minutes", "recovery"),
    ("影响范围：华东", "impact"),
    # Another category's label is the author's words.
    ("Root cause: pool exhausted", "finding"),
    ("根因：连接池耗尽", "mitigation"),
    # No label: a sentence that starts with a category word.
    ("Root cause is still unknown, pools are full", "root_cause"),
    ("Impactful change rolled out at 09:55", "impact"),
    ("Mitigation", "mitigation"),
    ("根因还没找到", "root_cause"),
]


@pytest.mark.parametrize(("title", "category", "claim"), STRIPPED)
def test_a_leading_label_naming_the_titles_own_category_is_stripped(
    title: str, category: str, claim: str
) -> None:
    assert strip_own_label(title, category) == claim


@pytest.mark.parametrize(("title", "category"), KEPT)
def test_a_title_without_its_own_label_is_left_as_written(title: str, category: str) -> None:
    assert strip_own_label(title, category) == title


T = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)


def item(entry_id: int, category: str, title: str, detail: str | None = None) -> SummaryEntry:
    return SummaryEntry(
        id=entry_id,
        occurred_at=T + timedelta(minutes=entry_id),
        title=title,
        detail=detail,
        category=category,
        status="draft",
        source="ai",
    )


def test_the_summary_never_says_a_label_twice() -> None:
    entries = [
        item(1, "impact", "Impact: checkout down for EU cards"),
        item(2, "root_cause", "Root cause identified: pool exhausted"),
        item(3, "root_cause", "Root Cause Analysis: retries doubled the load"),
        item(4, "decision", "Decision made: freeze payment deploys"),
        item(5, "mitigation", "Mitigation applied: rolled back to v41"),
        item(6, "next_step", "[Next step] add alerting on pool saturation"),
    ]

    lines = DeterministicSummarizer().render(SummaryInput(workspace_id="inc-1", entries=entries))

    assert lines.splitlines()[1:6] == [
        "Impact: Checkout down for EU cards.",
        "Root cause: Pool exhausted. Retries doubled the load.",
        "Decisions: Freeze payment deploys.",
        "Mitigation: Rolled back to v41.",
        "Next steps: Add alerting on pool saturation.",
    ]


def test_a_title_that_is_only_its_label_is_said_by_its_detail_or_not_at_all() -> None:
    entries = [
        item(1, "root_cause", "Root cause:", detail="Root cause: the pool was sized for v40"),
        item(2, "decision", "决策："),
        item(3, "impact", "Checkout down"),
    ]

    lines = DeterministicSummarizer().render(SummaryInput(workspace_id="inc-1", entries=entries))

    assert "Root cause: The pool was sized for v40." in lines.splitlines()
    assert not any(line.startswith("Decisions:") for line in lines.splitlines())
