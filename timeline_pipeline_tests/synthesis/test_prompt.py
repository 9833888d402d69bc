"""What the model is shown: a versioned system prompt, a flat tool schema generated from the
pydantic model, and a compact listing where only window evidence carries citable ids."""

from __future__ import annotations

import hashlib
import json

from timeline_pipeline.i18n.locales import Locale
from timeline_pipeline.synthesis.chunking import ChunkLimits, plan_chunks
from timeline_pipeline.synthesis.contract import Category
from timeline_pipeline.synthesis.prompt import (
    CONTEXT_HEADER,
    EVIDENCE_HEADER,
    LANGUAGE_INSTRUCTION,
    PROMPT_VERSION,
    SYSTEM_PROMPT,
    TOOL_NAME,
    RecordEntriesInput,
    render_chunk,
    system_prompt,
    tool_definition,
    tool_input_schema,
)
from timeline_pipeline_tests.synthesis.builders import WINDOW_END, WINDOW_START, evidence


def test_prompt_is_versioned() -> None:
    assert PROMPT_VERSION == "claude-v3"
    for category in Category:
        assert category.value in SYSTEM_PROMPT


# SHA-256 of claude-v2's system prompt: English's wording did not move with v3.
V2_SYSTEM_PROMPT_SHA256 = "af0f243b3cade71f4ae7c084f0c4a9aa7cfdb56e03d296f1d534a11b561d2b04"


def test_an_english_workspace_keeps_the_default_system_prompt() -> None:
    assert system_prompt(Locale.EN) == SYSTEM_PROMPT
    assert hashlib.sha256(SYSTEM_PROMPT.encode()).hexdigest() == V2_SYSTEM_PROMPT_SHA256
    assert "zh-CN" not in SYSTEM_PROMPT


def test_a_chinese_workspace_is_named_and_asked_for_titles_in_simplified_chinese() -> None:
    prompt = system_prompt(Locale.ZH_CN)
    assert prompt.startswith(SYSTEM_PROMPT + "\n\n")
    added = prompt.removeprefix(SYSTEM_PROMPT + "\n\n")
    assert added == LANGUAGE_INSTRUCTION.format(language="Simplified Chinese", locale="zh-CN")
    assert added.startswith("The workspace's language is Simplified Chinese (zh-CN).")
    assert "Write every title and detail in Simplified Chinese" in added
    assert "technical terms" in added and "exactly as the chat writes them" in added


def test_the_user_turn_is_the_same_whatever_the_locale() -> None:
    [chunk] = plan_chunks(
        WINDOW_START, WINDOW_END, [evidence(1, "支付网关超时，已回滚")], limits=ChunkLimits()
    )
    chinese = chunk.model_copy(update={"locale": Locale.ZH_CN})
    assert chunk.locale is Locale.EN
    assert render_chunk(chinese) == render_chunk(chunk)


def test_tool_schema_is_flat_and_matches_the_pydantic_model() -> None:
    tool = tool_definition()
    assert tool["name"] == TOOL_NAME == "record_entries"
    schema = tool_input_schema()
    assert tool["input_schema"] == schema
    text = json.dumps(schema)
    assert "$ref" not in text and "$defs" not in text
    assert schema["required"] == ["entries"]
    entry = schema["properties"]["entries"]["items"]
    assert set(entry["required"]) == {"title", "category", "evidence_ids"}
    assert entry["properties"]["category"]["enum"] == [c.value for c in Category]
    assert entry["additionalProperties"] is False
    example = {"entries": [{"title": "t", "category": "impact", "evidence_ids": [1]}]}
    assert RecordEntriesInput.model_validate(example).entries[0].category is Category.IMPACT


def test_rendering_lists_context_without_ids_then_evidence_with_ids_and_groups() -> None:
    context = evidence(50, "earlier message", at=-60, actor="ou_ctx")
    items = [
        evidence(1, "first\nsecond line", at=5, thread="omt_a"),
        evidence(2, 'quote " and {braces}', at=9),
        evidence(3, "in the thread", at=12, thread="omt_a"),
    ]
    [chunk] = plan_chunks(
        WINDOW_START, WINDOW_END, items, limits=ChunkLimits(), context_candidates=[context, *items]
    )
    lines = render_chunk(chunk).splitlines()
    assert lines[0] == "Window 2025-03-14T02:10:00Z to 2025-03-14T02:20:00Z (UTC), part 1."
    assert lines[1] == CONTEXT_HEADER
    assert json.loads(lines[2]) == {
        "time": "02:09:00",
        "actor": "ou_ctx",
        "text": "earlier message",
    }
    assert lines[3] == EVIDENCE_HEADER
    rows = [json.loads(line) for line in lines[4:]]
    assert [row["id"] for row in rows] == [1, 2, 3]
    assert [row["group"] for row in rows] == ["g1", "g2", "g1"]
    assert rows[0]["text"] == "first\nsecond line"
    assert rows[1]["text"] == 'quote " and {braces}'


def test_truncated_messages_are_announced() -> None:
    [chunk] = plan_chunks(
        WINDOW_START,
        WINDOW_END,
        [evidence(1, "x" * 10_000)],
        limits=ChunkLimits(max_estimated_tokens=500),
    )
    assert render_chunk(chunk).endswith("Note: messages [1] were truncated to fit.")
