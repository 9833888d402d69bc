"""The workspace's language reaches the model (docs/i18n.md): a window run and a rerun preview put
the workspace's locale on every chunk, and the Claude synthesizer, through the real SDK against
the loopback stand-in of the Messages API, asks for titles in it. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Engine

from timeline_pipeline.domain.entries import EntryStatus
from timeline_pipeline.domain.window_keys import WindowRef
from timeline_pipeline.i18n.locales import Locale
from timeline_pipeline.llm.forced_tool import build_claude_client
from timeline_pipeline.maintenance.processors.rerun_preview import PREVIEW_COUNTERS, RerunPreview
from timeline_pipeline.retry import RetryPolicy
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import entries, workspaces
from timeline_pipeline.synthesis.claude import ClaudeSynthesizer
from timeline_pipeline.synthesis.contract import SynthesisChunk, SynthesisResult
from timeline_pipeline.synthesis.prompt import SYSTEM_PROMPT, system_prompt
from timeline_pipeline.synthesis_run.runner import RunStatus, WindowRunner
from timeline_pipeline_tests.support.anthropic_standin import (
    AnthropicStandIn,
    ReceivedRequest,
    evidence_ids_in,
    tool_reply,
)
from timeline_pipeline_tests.windows.support import T0, post, settings

pytestmark = pytest.mark.slow  # starts a loopback HTTP server

REF = WindowRef("inc-1", "oc_chat", T0)
CHINESE_CHAT = [
    "支付网关 p99 飙到 3s，订单失败率 12%",
    "rollback 已经开始了",
    "回滚完成，成功率恢复到 99.9%",
]
ENGLISH_CHAT = [
    "checkout p99 is above 3s, 12% of orders failing",
    "rollback started",
    "rollback done, success rate back to 99.9%",
]
CHINESE_TITLE = "支付网关 p99 飙到 3s，订单失败率 12%"


def _chinese_entry(body: Mapping[str, Any]) -> dict[str, Any]:
    first = evidence_ids_in(body)[0]
    return {"entries": [{"title": CHINESE_TITLE, "category": "impact", "evidence_ids": [first]}]}


def _workspace(engine: Engine, locale: str | None) -> None:
    with engine.begin() as conn:
        workspaces.create(conn, "inc-1", created_at=T0 - timedelta(hours=1), locale=locale)
        workspaces.bind_chat(conn, "inc-1", "oc_chat")


def _chat(engine: Engine, texts: Sequence[str]) -> None:
    for n, text in enumerate(texts):
        post(engine, [T0 + timedelta(seconds=20 * n)], text=text, prefix=f"m{n}")


def _run_with_claude(
    engine: Engine, config: LarkTimelineSettings | None = None
) -> tuple[RunStatus, list[ReceivedRequest]]:
    with AnthropicStandIn(default=tool_reply(_chinese_entry)) as standin:
        claude = ClaudeSynthesizer(
            build_claude_client(standin.api_key, standin.base_url, timeout_seconds=5),
            model="claude-standin",
            max_output_tokens=1024,
            retry=RetryPolicy(
                attempts=1, backoff_base=0.01, backoff_cap=0.02, max_retry_after=0.05
            ),
        )
        report = WindowRunner(
            engine, config or settings(), claude, clock=lambda: T0 + timedelta(minutes=30)
        ).run(REF, owner="run-1")
        return report.status, list(standin.requests)


def test_a_chinese_chat_in_a_zh_cn_workspace_asks_claude_for_chinese_titles(
    engine: Engine,
) -> None:
    _workspace(engine, "zh-CN")
    _chat(engine, CHINESE_CHAT)
    status, [request] = _run_with_claude(engine)
    assert status is RunStatus.COMPLETED
    system = request.body["system"]
    assert system == system_prompt(Locale.ZH_CN)
    assert system.startswith(SYSTEM_PROMPT)
    assert "The workspace's language is Simplified Chinese (zh-CN)." in system
    assert "Write every title and detail in Simplified Chinese" in system
    assert CHINESE_CHAT[0] in request.body["messages"][0]["content"]
    with engine.connect() as conn:
        [entry] = entries.list_for_workspace(conn, "inc-1", statuses=(EntryStatus.DRAFT,))
    assert entry.title == CHINESE_TITLE


def test_an_auto_workspace_reads_its_chinese_chat_as_zh_cn(engine: Engine) -> None:
    _workspace(engine, None)  # the `locale` setting's default: auto, the chat's majority script
    _chat(engine, CHINESE_CHAT)
    _, [request] = _run_with_claude(engine)
    assert request.body["system"] == system_prompt(Locale.ZH_CN)


@pytest.mark.parametrize(
    ("choice", "texts", "setting"),
    [
        pytest.param(None, ENGLISH_CHAT, "auto", id="auto-english-chat"),
        pytest.param("en", CHINESE_CHAT, "auto", id="workspace-en-over-a-chinese-chat"),
        pytest.param(None, CHINESE_CHAT, "en", id="setting-en"),
    ],
)
def test_an_english_workspace_sends_the_request_it_always_sent(
    engine: Engine, choice: str | None, texts: Sequence[str], setting: str
) -> None:
    _workspace(engine, choice)
    _chat(engine, texts)
    _, [request] = _run_with_claude(engine, settings(locale=setting))
    assert request.body["system"] == SYSTEM_PROMPT
    assert set(request.body) == {
        "model",
        "max_tokens",
        "system",
        "messages",
        "tools",
        "tool_choice",
        "temperature",
    }
    sent = json.dumps(request.body, ensure_ascii=False)
    assert "zh-CN" not in sent and "Simplified Chinese" not in sent


class _Recorder:
    """Records each chunk the preview plans and proposes nothing."""

    name = "recorder"
    prompt_version = "recorder-v1"

    def __init__(self) -> None:
        self.chunks: list[SynthesisChunk] = []

    def synthesize(self, chunk: SynthesisChunk) -> SynthesisResult:
        self.chunks.append(chunk)
        return SynthesisResult(entries=[], model="none", prompt_version=self.prompt_version)


@pytest.mark.parametrize(("choice", "expected"), [("zh-CN", Locale.ZH_CN), ("en", Locale.EN)])
def test_a_rerun_preview_plans_its_chunks_in_the_workspace_language(
    engine: Engine, choice: str, expected: Locale
) -> None:
    _workspace(engine, choice)
    _chat(engine, CHINESE_CHAT)
    recorder = _Recorder()
    totals: dict[str, Any] = dict.fromkeys(PREVIEW_COUNTERS, 0)
    with engine.begin() as conn:
        RerunPreview(settings(), synthesizer=lambda: recorder).window(
            conn, REF, job_id="job-locale", now=T0 + timedelta(hours=1), totals=totals
        )
    assert totals["chunks"] == len(recorder.chunks) == 1
    assert [chunk.locale for chunk in recorder.chunks] == [expected]
