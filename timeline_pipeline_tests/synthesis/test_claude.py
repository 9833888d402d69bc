"""Model synthesis through the REAL anthropic SDK against a loopback stand-in of the Messages API:
structured output by a forced tool call, a bounded retry of our own, and strict output checks."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from typing import Any

import anthropic
import pytest

from timeline_pipeline.i18n.locales import Locale
from timeline_pipeline.llm.forced_tool import build_claude_client
from timeline_pipeline.retry import RetryPolicy
from timeline_pipeline.synthesis.chunking import ChunkLimits, plan_chunks
from timeline_pipeline.synthesis.claude import PROMPT_VERSION, ClaudeSynthesizer
from timeline_pipeline.synthesis.contract import (
    Category,
    InvalidSynthesisOutput,
    SynthesisChunk,
    SynthesisRejected,
    SynthesisUnavailable,
)
from timeline_pipeline.synthesis.prompt import SYSTEM_PROMPT, TOOL_NAME, system_prompt
from timeline_pipeline_tests.support.anthropic_standin import (
    AnthropicStandIn,
    ErrorReply,
    Reply,
    SlowReply,
    TextReply,
    cite_first_evidence,
    evidence_ids_in,
    overloaded,
    rate_limited,
    server_error,
    tool_reply,
)
from timeline_pipeline_tests.synthesis.builders import WINDOW_END, WINDOW_START, evidence

pytestmark = pytest.mark.slow  # starts a loopback HTTP server

API_KEY = "sk-test-standin"
SECRET = "card 4111 1111 1111 1111 belongs to jane@example.com"


@pytest.fixture
def chunk() -> SynthesisChunk:
    earlier = evidence(100, "context: the deploy finished", at=-120, actor="ou_ctx")
    items = [
        evidence(1, "checkout is returning 500 for 30% of requests", at=10),
        evidence(2, "rolling back the deploy now", at=40, actor="ou_bob"),
        evidence(3, SECRET, at=70, thread="omt_1"),
    ]
    [planned] = plan_chunks(
        WINDOW_START, WINDOW_END, items, limits=ChunkLimits(), context_candidates=[earlier, *items]
    )
    return planned


def _synthesizer(
    base_url: str,
    *,
    api_key: str = API_KEY,
    max_attempts: int = 3,
    timeout_seconds: float = 5.0,
    max_retry_after_seconds: float = 0.05,
) -> ClaudeSynthesizer:
    return ClaudeSynthesizer(
        build_claude_client(api_key, base_url, timeout_seconds),
        model="claude-test-model",
        max_output_tokens=1024,
        retry=RetryPolicy(
            attempts=max_attempts,
            backoff_base=0.001,
            backoff_cap=0.01,
            max_retry_after=max_retry_after_seconds,
        ),
    )


@pytest.fixture(scope="module")
def _server() -> Iterator[AnthropicStandIn]:
    with AnthropicStandIn(api_key=API_KEY) as server:
        yield server


@pytest.fixture
def standin(_server: AnthropicStandIn) -> AnthropicStandIn:
    _server.reset()
    return _server


def _entries_input(*entries: Mapping[str, Any]) -> dict[str, Any]:
    return {"entries": list(entries)}


# --- the happy path ------------------------------------------------------------------------


def test_tool_output_becomes_validated_drafts_with_usage(
    standin: AnthropicStandIn, chunk: SynthesisChunk
) -> None:
    standin.enqueue(tool_reply(cite_first_evidence, input_tokens=321, output_tokens=54))
    result = _synthesizer(standin.base_url).synthesize(chunk)
    [entry] = result.entries
    assert entry.category is Category.FINDING
    assert entry.evidence_ids == [1]
    assert entry.occurred_at == chunk.evidence[0].occurred_at
    assert (result.usage.input_tokens, result.usage.output_tokens) == (321, 54)
    assert result.model == "claude-standin"
    assert result.prompt_version == PROMPT_VERSION == "claude-v3"


def test_request_forces_the_tool_and_lists_evidence_and_read_only_context(
    standin: AnthropicStandIn, chunk: SynthesisChunk
) -> None:
    _synthesizer(standin.base_url).synthesize(chunk)
    [request] = standin.requests
    assert request.path == "/v1/messages"
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    body = request.body
    assert body["model"] == "claude-test-model"
    assert body["max_tokens"] == 1024
    # Sampling is pinned so that a restart or replay gets the same wording back.
    assert body["temperature"] == 0
    assert body["system"] == SYSTEM_PROMPT
    assert body["tool_choice"] == {"type": "tool", "name": TOOL_NAME}
    [tool] = body["tools"]
    assert tool["name"] == TOOL_NAME
    assert "$ref" not in json.dumps(tool["input_schema"])
    prompt = body["messages"][0]["content"]
    assert evidence_ids_in(body) == [1, 2, 3]  # context is listed, but without citable ids
    assert prompt.index("CONTEXT (read-only") < prompt.index("context: the deploy finished")
    assert prompt.index("context: the deploy finished") < prompt.index("EVIDENCE")
    assert '"group":"g1"' in prompt


def test_a_chinese_workspace_asks_for_chinese_titles_and_keeps_them(
    standin: AnthropicStandIn, chunk: SynthesisChunk
) -> None:
    title = "支付网关 p99 升到 3s，已回滚 payments-config"
    standin.enqueue(
        tool_reply(_entries_input({"title": title, "category": "mitigation", "evidence_ids": [2]}))
    )
    chinese = chunk.model_copy(update={"locale": Locale.ZH_CN})
    result = _synthesizer(standin.base_url).synthesize(chinese)
    [request] = standin.requests
    assert request.body["system"] == system_prompt(Locale.ZH_CN) != SYSTEM_PROMPT
    assert "Simplified Chinese (zh-CN)" in request.body["system"]
    assert [entry.title for entry in result.entries] == [title]


def test_repeated_ids_are_cited_once(standin: AnthropicStandIn, chunk: SynthesisChunk) -> None:
    entry = {"title": "Rollback", "category": "mitigation", "evidence_ids": [2, 2]}
    standin.enqueue(tool_reply(_entries_input(entry)))
    [result] = _synthesizer(standin.base_url).synthesize(chunk).entries
    assert result.evidence_ids == [2]


def test_nothing_material_is_an_empty_result(
    standin: AnthropicStandIn, chunk: SynthesisChunk
) -> None:
    standin.enqueue(tool_reply(_entries_input()))
    assert _synthesizer(standin.base_url).synthesize(chunk).entries == []


# --- transient failures: our own bounded retry ---------------------------------------------


@pytest.mark.parametrize(
    "failure",
    [overloaded(), rate_limited(), server_error(500), server_error(503)],
    ids=["529", "429", "500", "503"],
)
def test_transient_failures_are_retried(
    standin: AnthropicStandIn, chunk: SynthesisChunk, failure: Reply
) -> None:
    standin.enqueue(failure, failure, tool_reply(cite_first_evidence))
    result = _synthesizer(standin.base_url, max_attempts=3).synthesize(chunk)
    assert result.entries[0].evidence_ids == [1]
    assert len(standin.requests) == 3


@pytest.mark.parametrize(
    ("failure", "reason"),
    [
        (overloaded(), "overloaded"),
        (rate_limited(), "rate_limited"),
        (server_error(), "server_error"),
    ],
)
def test_exhausted_retries_make_the_chunk_unavailable(
    standin: AnthropicStandIn, chunk: SynthesisChunk, failure: Reply, reason: str
) -> None:
    standin.reset(default=failure)
    with pytest.raises(SynthesisUnavailable) as caught:
        _synthesizer(standin.base_url, max_attempts=3).synthesize(chunk)
    assert len(standin.requests) == 3
    assert caught.value.reason == reason


def test_retry_after_is_obeyed_only_up_to_the_cap(
    standin: AnthropicStandIn, chunk: SynthesisChunk
) -> None:
    standin.enqueue(rate_limited(retry_after_seconds=3600), tool_reply(cite_first_evidence))
    started = time.monotonic()
    _synthesizer(standin.base_url, max_retry_after_seconds=0.05).synthesize(chunk)
    assert time.monotonic() - started < 5
    assert len(standin.requests) == 2


def test_slow_replies_time_out_and_are_retried(
    standin: AnthropicStandIn, chunk: SynthesisChunk
) -> None:
    standin.enqueue(SlowReply(0.6, tool_reply(_entries_input())), tool_reply(cite_first_evidence))
    result = _synthesizer(standin.base_url, timeout_seconds=0.3).synthesize(chunk)
    assert result.entries[0].evidence_ids == [1]
    assert len(standin.requests) == 2


def test_a_service_that_stays_slow_is_unavailable(
    standin: AnthropicStandIn, chunk: SynthesisChunk
) -> None:
    standin.reset(default=SlowReply(0.6, tool_reply(_entries_input())))
    with pytest.raises(SynthesisUnavailable) as caught:
        _synthesizer(standin.base_url, timeout_seconds=0.2, max_attempts=2).synthesize(chunk)
    assert len(standin.requests) == 2
    assert caught.value.reason == "timeout"


def test_the_sdk_never_retries_on_its_own(standin: AnthropicStandIn, chunk: SynthesisChunk) -> None:
    standin.reset(default=overloaded())
    eager = anthropic.Anthropic(api_key=API_KEY, base_url=standin.base_url, max_retries=5)
    synthesizer = ClaudeSynthesizer(
        eager,
        model="m",
        max_output_tokens=100,
        retry=RetryPolicy(attempts=2, backoff_base=0.001, backoff_cap=0.001, max_retry_after=0.001),
    )
    with pytest.raises(SynthesisUnavailable):
        synthesizer.synthesize(chunk)
    assert len(standin.requests) == 2


# --- refused requests: no retry ------------------------------------------------------------


def test_a_wrong_key_is_rejected_without_retry(
    standin: AnthropicStandIn, chunk: SynthesisChunk
) -> None:
    with pytest.raises(SynthesisRejected) as caught:
        _synthesizer(standin.base_url, api_key="sk-wrong").synthesize(chunk)
    assert caught.value.reason == "http_401"
    assert len(standin.requests) == 1


def test_a_bad_request_is_rejected_without_retry(
    standin: AnthropicStandIn, chunk: SynthesisChunk
) -> None:
    standin.enqueue(ErrorReply(400, "invalid_request_error", "prompt is too long"))
    with pytest.raises(SynthesisRejected) as caught:
        _synthesizer(standin.base_url).synthesize(chunk)
    assert caught.value.reason == "http_400"
    assert len(standin.requests) == 1


# --- invalid output: reported at once, the caller owns the retry ---------------------------

_INVALID = [
    pytest.param(
        tool_reply(_entries_input({"title": "x", "category": "finding", "evidence_ids": [999]})),
        "unknown_evidence_id",
        id="unknown-evidence-id",
    ),
    pytest.param(
        tool_reply(_entries_input({"title": "x", "category": "finding", "evidence_ids": [100]})),
        "context_evidence_cited",
        id="cites-read-only-context",
    ),
    pytest.param(
        tool_reply(_entries_input({"title": "x", "category": "gossip", "evidence_ids": [1]})),
        "schema_invalid",
        id="unknown-category",
    ),
    pytest.param(
        tool_reply(_entries_input({"title": "x", "category": "finding"})),
        "schema_invalid",
        id="missing-evidence",
    ),
    pytest.param(
        tool_reply(_entries_input({"title": "x", "category": "finding", "evidence_ids": []})),
        "schema_invalid",
        id="empty-evidence",
    ),
    pytest.param(
        tool_reply(_entries_input({"title": "   ", "category": "finding", "evidence_ids": [1]})),
        "schema_invalid",
        id="blank-title",
    ),
    pytest.param(tool_reply({"entries": "none"}), "schema_invalid", id="entries-not-a-list"),
    pytest.param(tool_reply({"items": []}), "schema_invalid", id="wrong-top-level-key"),
    pytest.param(
        tool_reply(cite_first_evidence, tool_name="other_tool"), "missing_tool_use", id="wrong-tool"
    ),
    pytest.param(TextReply(), "missing_tool_use", id="text-instead-of-tool"),
    pytest.param(
        tool_reply(cite_first_evidence, stop_reason="max_tokens"),
        "output_truncated",
        id="hit-max-tokens",
    ),
]


@pytest.mark.parametrize(("reply", "reason"), _INVALID)
def test_invalid_output_is_reported_once_without_retry(
    standin: AnthropicStandIn, chunk: SynthesisChunk, reply: Reply, reason: str
) -> None:
    standin.enqueue(reply)
    with pytest.raises(InvalidSynthesisOutput) as caught:
        _synthesizer(standin.base_url).synthesize(chunk)
    assert caught.value.reason == reason
    assert len(standin.requests) == 1


def test_failures_never_carry_chat_text(standin: AnthropicStandIn, chunk: SynthesisChunk) -> None:
    bad = {"title": SECRET, "category": SECRET, "evidence_ids": [3], "detail": SECRET}
    standin.enqueue(tool_reply(_entries_input(bad)))
    with pytest.raises(InvalidSynthesisOutput) as caught:
        _synthesizer(standin.base_url).synthesize(chunk)
    assert SECRET not in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__context__ is None
