"""`timeline-pipeline demo --chat zh` end to end, on SQLite and PostgreSQL (docs/i18n.md).

The same real parts as the English demo (test_demo.py), on the bundled Chinese chat: the
workspace is created in zh-CN and Asia/Shanghai, and what a person reads is Chinese and local,
the incident report at the end included (docs/report.md). One run per database serves every
assertion: the printout is checked against the stored timeline and report, read back from the
database the run wrote.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select

from bench.quality.evaluation import ProducedFact, Score, score
from bench.quality.gold import ExpectedFact
from timeline_pipeline.cli.main import cli
from timeline_pipeline.curation.presentation import presentation_of
from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.schema import workspace_timeline_evidence as ev
from timeline_pipeline.demo.printout import human_lines
from timeline_pipeline.demo.run import DEMO_FLAGS
from timeline_pipeline.demo.view import demo_report, demo_timeline
from timeline_pipeline.demo_data import CHATS, DemoChat, load_expected_facts, load_messages
from timeline_pipeline.domain.entries import EntrySource, EntryStatus
from timeline_pipeline.i18n.catalogs import Domain, translations
from timeline_pipeline.i18n.labels import category_label
from timeline_pipeline.i18n.locales import Locale
from timeline_pipeline.i18n.times import show_time, spans_days
from timeline_pipeline.settings import load_timeline_settings
from timeline_pipeline.store import workspaces
from timeline_pipeline.synthesis.contract import Category

MIN_RECALL = 0.6
MIN_PRECISION = 0.4
"""Floors under what the rules measured on this chat (matched by category and message): 0.69 /
0.51 when it was added (22 of 32 expected facts from 43 drafts), 0.75 / 0.49 once the rules read
Chinese in words (24 of 32 from 49). A regression check, not a target: the chat was written
without reading the synthesizer."""
HAN = re.compile(r"[\u4e00-\u9fff]")
SHANGHAI = ZoneInfo("Asia/Shanghai")


def _message_id(item: dict[str, Any]) -> str:
    return str(item["source_key"]).rsplit("/", 1)[1]


def _quality(entries: list[dict[str, Any]]) -> Score:
    """The drafts (not the commander's pin) against the chat's expected timeline."""
    produced = [
        ProducedFact(
            Category(entry["category"]),
            frozenset(_message_id(item) for item in entry["evidence"]),
            entry["title"],
        )
        for entry in entries
        if entry["source"] != EntrySource.HUMAN
    ]
    expected = [
        ExpectedFact(Category(fact["category"]), frozenset(fact["evidence_message_ids"]), "")
        for fact in load_expected_facts(DemoChat.ZH)
    ]
    return score(produced, expected)


@pytest.mark.slow
def test_the_chinese_demo_prints_a_chinese_timeline_in_the_workspace_zone(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIMELINE_DATABASE_URL", db_url)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    result = CliRunner().invoke(
        cli, ["demo", "--chat", "zh", "--dagster-home", str(tmp_path / "dh")]
    )
    assert result.exit_code == 0, result.stderr
    noise = [line for line in result.stderr.splitlines() if line and not line.startswith("[")]
    assert not noise, noise[:3]
    printed = result.stdout.splitlines()
    [heading] = [line for line in printed if line.startswith("工作区 ")]
    workspace_id = heading.split()[1]

    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            workspace = workspaces.require(conn, workspace_id)
            presentation = presentation_of(conn, workspace_id, load_timeline_settings(**DEMO_FLAGS))
            view = demo_timeline(conn, workspace_id)
            report = demo_report(conn, workspace_id)
            stored = conn.execute(
                select(func.count()).where(ev.c.workspace_id == workspace_id)
            ).scalar_one()
    finally:
        engine.dispose()

    # The Chinese chat, all of it, on a workspace that reads Chinese in UTC+8.
    assert stored == len(load_messages(DemoChat.ZH))
    assert (workspace.locale, workspace.time_zone) == ("zh-CN", "Asia/Shanghai")
    assert presentation.locale is Locale.ZH_CN
    assert presentation.time_zone.key == "Asia/Shanghai"
    entries = view["entries"]
    assert len(entries) >= 10
    assert all(
        item["source_key"].startswith(f"chat/{CHATS[DemoChat.ZH].chat_id}/")
        for entry in entries
        for item in entry["evidence"]
    )

    # The report was built and written into a Lark document, its link replied in the chat in
    # Chinese (the chat catalog's words, as the document's title).
    assert report is not None
    assert report["status"] == "recovered"
    url = report["document_url"]
    assert url and report["document_revision"] == report["revision"] == 1
    report["reply"] = (
        translations(Domain.CHAT, Locale.ZH_CN)
        .gettext("The incident report is ready: {url}")
        .format(url=url)
    )
    assert HAN.search(report["reply"])

    # The printout is the stored timeline and report in Chinese: shared category names, local
    # times with their offset (and dates when the run happens to span local midnight), Chinese
    # headings, the document's link and the chat's reply as the local Lark holds it.
    expected = human_lines(
        view,
        workspace_id,
        presentation,
        dagster_home=str((tmp_path / "dh").resolve()),
        serving=False,
        port=8080,
        report=report,
    )
    assert printed[:-1] == [line.text for line in expected]
    assert "故障报告（第 1 版）" in printed
    assert any(line.startswith("  故障解决  ") and " UTC+8  条目 #" in line for line in printed)
    assert any(line.strip().startswith("飞书文档：") and line.endswith(url) for line in printed)
    assert any(line.strip().startswith("群聊回复：") for line in printed)
    assert printed[-1].startswith("http://127.0.0.1:8080/ui/")
    assert "摘要" in printed
    moments = [entry["occurred_at"] for entry in entries]
    dated = spans_days([datetime.fromisoformat(moment) for moment in moments], SHANGHAI)
    timeline = printed[printed.index(heading) + 1 : printed.index("摘要")]
    entry_lines = [line for line in timeline if line and not line.lstrip().startswith("https://")]
    assert len(entry_lines) == len(entries)
    for line, entry in zip(entry_lines, entries, strict=True):
        when = show_time(
            datetime.fromisoformat(entry["occurred_at"]), SHANGHAI, Locale.ZH_CN, with_date=dated
        )
        assert when.endswith(" UTC+8")
        label = category_label(entry["category"], Locale.ZH_CN)
        assert HAN.search(label), label
        assert line.startswith(f"  {when}  {label} "), line

    # Titles are the chat's own Chinese words.
    chinese_titles = [entry for entry in entries if HAN.search(entry["title"])]
    assert len(chinese_titles) >= 0.9 * len(entries)

    # The timeline finds the chat's facts: a floor under what was measured.
    quality = _quality(entries)
    assert quality.recall >= MIN_RECALL, quality
    assert quality.precision >= MIN_PRECISION, quality

    # The commander confirmed one draft from its card and pinned one message from the chat.
    confirmed = [
        e
        for e in entries
        if e["status"] == EntryStatus.CONFIRMED and e["source"] != EntrySource.HUMAN
    ]
    pinned = [e for e in entries if e["source"] == EntrySource.HUMAN]
    assert len(confirmed) == 1
    assert len(pinned) == 1
    assert pinned[0]["status"] == EntryStatus.CONFIRMED
    assert HAN.search(pinned[0]["title"])

    # The summary speaks the workspace's language.
    summary = view["summary"]
    assert summary
    assert len(HAN.findall(summary.splitlines()[0])) >= 4, summary.splitlines()[0]
