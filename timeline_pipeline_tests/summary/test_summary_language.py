"""The summary in the workspace's language and zone (docs/i18n.md): the rule summarizer's
labels and sentences from the summary catalog, times in the workspace's zone with their offset
and with dates when the incident crosses local midnight, Claude asked to write in the
workspace's locale, and the runner reading the workspace's presentation once per summary."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import dagster as dg
import pytest
from sqlalchemy import Engine, update

from timeline_pipeline.db.schema import workspaces as workspaces_table
from timeline_pipeline.i18n.labels import category_label
from timeline_pipeline.i18n.locales import Locale, Presentation
from timeline_pipeline.llm.forced_tool import build_claude_client
from timeline_pipeline.orchestration.resources import DatabaseResource, TimelineSettingsResource
from timeline_pipeline.orchestration.summary import SUMMARY_JOB, WORKSPACE_PARTITIONS, summary_defs
from timeline_pipeline.retry import RetryPolicy
from timeline_pipeline.settings import LarkTimelineSettings, load_timeline_settings
from timeline_pipeline.store import summaries, workspaces
from timeline_pipeline.summary.claude import SYSTEM_PROMPT, TOOL_NAME, ClaudeSummarizer
from timeline_pipeline.summary.contract import SummaryEntry, SummaryInput
from timeline_pipeline.summary.deterministic import SECTIONS, DeterministicSummarizer
from timeline_pipeline.summary.runner import SummaryOutcome, SummaryRunner
from timeline_pipeline_tests.curation.support import IMPACT, ROLLBACK, W1, incident, say, synthesize
from timeline_pipeline_tests.support.anthropic_standin import AnthropicStandIn, tool_reply

T = datetime(2026, 12, 4, 15, 40, tzinfo=UTC)  # 23:40 in Shanghai
SHANGHAI = ZoneInfo("Asia/Shanghai")
CHINESE = Presentation(Locale.ZH_CN, SHANGHAI)


def item(
    entry_id: int, at: datetime, category: str, title: str, status: str = "draft"
) -> SummaryEntry:
    return SummaryEntry(
        id=entry_id, occurred_at=at, title=title, category=category, status=status, source="ai"
    )


def incident_from(start: datetime) -> list[SummaryEntry]:
    return [
        item(1, start, "impact", "支付网关 p99 飙到 3s，订单失败率 12%", "confirmed"),
        item(2, start + timedelta(minutes=10), "root_cause", "根因：配置推送把连接池上限改成了 10"),
        item(3, start + timedelta(minutes=25), "mitigation", "回滚 payments-config 到 r811",
             "confirmed"),
        item(4, start + timedelta(minutes=40), "recovery", "订单失败率回落到 0.1%", "confirmed"),
        item(5, start + timedelta(minutes=50), "next_step", "后续：补充连接池饱和告警"),
    ]  # fmt: skip


def render(entries: list[SummaryEntry], presentation: Presentation, omitted: int = 0) -> str:
    given = SummaryInput(
        workspace_id="inc-1", entries=entries, omitted=omitted, presentation=presentation
    )
    return DeterministicSummarizer().render(given)


def test_a_chinese_workspace_reads_a_chinese_summary_with_dates_across_local_midnight() -> None:
    assert render(incident_from(T), CHINESE).splitlines() == [
        "共 5 条时间线条目，2026年12月4日 23:40 UTC+8 至 2026年12月5日 00:30 UTC+8"
        "（3 条已人工确认，2 条为草稿）。",
        "影响：支付网关 p99 飙到 3s，订单失败率 12%。",
        "根因：配置推送把连接池上限改成了 10。",
        "缓解措施：回滚 payments-config 到 r811。",
        "恢复：订单失败率回落到 0.1%。",
        "后续行动：补充连接池饱和告警。",
        "状态：已于 2026年12月5日 00:20 UTC+8 恢复。",
    ]


def test_within_one_local_day_the_times_carry_no_date() -> None:
    morning = datetime(2026, 12, 4, 2, 0, tzinfo=UTC)  # 10:00 in Shanghai
    lines = render(incident_from(morning), CHINESE).splitlines()
    assert lines[0].startswith("共 5 条时间线条目，10:00 UTC+8 至 10:50 UTC+8（")
    assert lines[-1] == "状态：已于 10:40 UTC+8 恢复。"


def test_an_ongoing_chinese_incident_counts_what_it_leaves_out_in_chinese() -> None:
    actions = [
        item(10 + n, T + timedelta(minutes=n), "mitigation", title)
        for n, title in enumerate(["扩容到 20 个实例", "摘掉 az2 流量", "限流", "Rolled back v41"])
    ]
    text = render([incident_from(T)[0], *actions], CHINESE, omitted=4)
    lines = text.splitlines()
    assert lines[1] == "另有 4 条条目未纳入本摘要。"
    # Chinese sentences run on; an English title in a Chinese summary ends as Chinese does.
    assert "缓解措施：摘掉 az2 流量。限流。Rolled back v41。（另有 1 条）" in lines
    assert lines[-1] == "状态：处理中；最新进展（23:43 UTC+8）：Rolled back v41。"
    assert render([], CHINESE) == "暂无时间线条目。"


def test_the_chinese_headings_are_the_shared_category_names() -> None:
    text = render(
        [item(n, T, category, f"条目 {n}") for n, (category, _h, _w) in enumerate(SECTIONS)],
        CHINESE,
    )
    headings = [line.split("：")[0] for line in text.splitlines()[1:-1]]
    assert headings == [category_label(category, Locale.ZH_CN) for category, _h, _w in SECTIONS]


def test_an_english_workspace_keeps_its_dated_form_in_its_own_zone() -> None:
    english = Presentation(Locale.EN, SHANGHAI)
    lines = render(incident_from(T), english).splitlines()
    assert lines[0] == (
        "5 timeline entries from 2026-12-04 23:40 UTC+8 to 2026-12-05 00:30 UTC+8 "
        "(3 confirmed by curators, 2 drafts)."
    )
    assert lines[-1] == "Status: recovered at 2026-12-05 00:20 UTC+8."


def test_the_digest_changes_with_the_language_and_zone_and_not_for_english_in_utc() -> None:
    entries = incident_from(T)[:1]
    english = SummaryInput(workspace_id="inc-1", entries=entries)
    # The digest summaries were stored with before workspaces had a language (HEAD 34794ab).
    assert english.digest() == "f843628cdfe323b1d996081b8486e6ded0537ff9234e58ffe8499485736e9d53"
    chinese = SummaryInput(workspace_id="inc-1", entries=entries, presentation=CHINESE)
    zoned = SummaryInput(
        workspace_id="inc-1", entries=entries, presentation=Presentation(Locale.EN, SHANGHAI)
    )
    assert len({english.digest(), chinese.digest(), zoned.digest()}) == 3


# --- Claude ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def standin() -> Iterator[AnthropicStandIn]:
    with AnthropicStandIn(api_key="k") as server:
        yield server


def claude(standin: AnthropicStandIn) -> ClaudeSummarizer:
    return ClaudeSummarizer(
        build_claude_client("k", standin.base_url, timeout_seconds=5),
        model="claude-test",
        max_output_tokens=512,
        retry=RetryPolicy(attempts=1, backoff_base=0, backoff_cap=0, max_retry_after=0),
    )


def test_claude_is_asked_for_the_workspaces_language_with_times_in_its_zone(
    standin: AnthropicStandIn,
) -> None:
    standin.reset(default=tool_reply({"summary": "支付网关故障，已回滚。"}, tool_name=TOOL_NAME))
    given = SummaryInput(workspace_id="inc-1", entries=incident_from(T)[:2], presentation=CHINESE)

    result = claude(standin).summarize(given)

    assert result.content == "支付网关故障，已回滚。"
    (request,) = standin.requests
    system = request.body["system"]
    assert system.startswith(SYSTEM_PROMPT)
    assert "Chinese (Simplified, China) (locale zh-CN)" in system
    assert "write the whole summary in it" in system and "Asia/Shanghai" in system
    prompt = request.body["messages"][0]["content"]
    assert '"time": "2026-12-04T23:40+08:00"' in prompt
    assert '"time": "2026-12-04T23:50+08:00"' in prompt


def test_an_english_workspace_in_utc_sends_the_prompt_it_always_did(
    standin: AnthropicStandIn,
) -> None:
    standin.reset(default=tool_reply({"summary": "Checkout was slow."}, tool_name=TOOL_NAME))
    claude(standin).summarize(SummaryInput(workspace_id="inc-1", entries=incident_from(T)[:1]))
    (request,) = standin.requests
    assert request.body["system"] == SYSTEM_PROMPT
    assert '"time": "2026-12-04T15:40Z"' in request.body["messages"][0]["content"]


# --- the runner, on SQLite and PostgreSQL ------------------------------------------------------


def _run(engine: Engine, settings: LarkTimelineSettings | None = None) -> summaries.SummaryRow:
    report = SummaryRunner(engine, DeterministicSummarizer(), enabled=True, settings=settings).run(
        "inc-1"
    )
    assert report.outcome is SummaryOutcome.WRITTEN, report.reason
    with engine.connect() as conn:
        written = summaries.get_summary(conn, "inc-1")
    assert written is not None
    return written


def _first_line_in_shanghai(count: int) -> str:
    local = W1.astimezone(SHANGHAI)
    return f"共 {count} 条时间线条目，{local:%H}:{local.minute + 1:02d} UTC+8 至 "


def test_the_runner_writes_a_chinese_workspaces_summary_in_chinese(engine: Engine) -> None:
    incident(engine)
    with engine.begin() as conn:
        workspaces.set_language(conn, "inc-1", locale="zh-CN", time_zone="Asia/Shanghai")
    say(engine, W1, [IMPACT, ROLLBACK])
    synthesize(engine, W1)

    written = _run(engine)

    lines = written.content.splitlines()
    assert lines[0].startswith(_first_line_in_shanghai(2)), lines[0]
    assert lines[-1].startswith("状态：")
    assert (written.metadata["locale"], written.metadata["time_zone"]) == (
        "zh-CN",
        "Asia/Shanghai",
    )


def test_the_runner_reads_a_workspace_without_a_choice_by_the_settings(engine: Engine) -> None:
    incident(engine)
    say(engine, W1, [IMPACT, ROLLBACK])
    synthesize(engine, W1)

    written = _run(engine, LarkTimelineSettings(locale="zh-CN", time_zone="Asia/Shanghai"))

    assert written.content.startswith(_first_line_in_shanghai(2))


def test_the_runner_reads_auto_from_the_chat_and_english_stays_english(engine: Engine) -> None:
    incident(engine)
    incident(engine, "inc-2", chat="oc_other")
    # Mostly Chinese messages: `auto` (the default setting) reads the workspace in Chinese.
    say(engine, W1, [IMPACT, ROLLBACK, "收到", "好的我看一下", "在看了"])
    synthesize(engine, W1)
    assert _run(engine).content.startswith("共 ")

    say(engine, W1, [IMPACT, ROLLBACK], workspace_id="inc-2", chat="oc_other")
    synthesize(engine, W1, workspace_id="inc-2", chat="oc_other")
    report = SummaryRunner(engine, DeterministicSummarizer(), enabled=True).run("inc-2")
    assert report.outcome is SummaryOutcome.WRITTEN
    with engine.connect() as conn:
        english = summaries.get_summary(conn, "inc-2")
    assert english is not None and english.content.startswith("2 timeline entries from ")
    assert " UTC to " in english.content.splitlines()[0]


def test_the_summary_asset_reads_the_workspace_by_the_configured_settings(
    db_url: str, engine: Engine
) -> None:
    """The Dagster asset gives the runner its settings: a `locale` and `timeZone` set in the
    configuration reach a workspace without its own choice."""
    overrides = {
        "enabled": True,
        "summary_enabled": True,
        "locale": "zh-CN",
        "time_zone": "Asia/Shanghai",
    }
    defs = dg.Definitions.merge(
        dg.Definitions(
            resources={
                "database": DatabaseResource(url=db_url),
                "timeline_settings": TimelineSettingsResource(overrides=overrides),
            }
        ),
        summary_defs(load_timeline_settings(**overrides)),
    )
    incident(engine)
    say(engine, W1, [IMPACT, ROLLBACK])
    synthesize(engine, W1)

    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(WORKSPACE_PARTITIONS, ["inc-1"])
        result = defs.resolve_job_def(SUMMARY_JOB).execute_in_process(
            partition_key="inc-1", instance=instance, raise_on_error=False
        )

    assert result.success
    with engine.connect() as conn:
        written = summaries.get_summary(conn, "inc-1")
    assert written is not None and written.content.startswith(_first_line_in_shanghai(2))


def test_a_workspace_that_cannot_be_read_fails_the_attempt_and_writes_nothing(
    engine: Engine,
) -> None:
    incident(engine)
    say(engine, W1, [IMPACT, ROLLBACK])
    synthesize(engine, W1)
    with engine.begin() as conn:  # a zone this machine's time zone database no longer knows
        conn.execute(update(workspaces_table).values(time_zone="Mars/Olympus_Mons"))

    report = SummaryRunner(engine, DeterministicSummarizer(), enabled=True).run("inc-1")

    assert report.outcome is SummaryOutcome.FAILED
    assert report.reason is not None and report.reason.startswith("no_presentation: ")
    assert "Mars/Olympus_Mons" in report.reason
    with engine.connect() as conn:
        assert summaries.get_summary(conn, "inc-1") is None
