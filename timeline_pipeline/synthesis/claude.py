"""Model synthesis through the Anthropic Messages API: a forced `record_entries` tool call.

The call, its bounded retry and the mapping of SDK errors are `llm.forced_tool`'s, shared with the
workspace summary. Anything transient that outlives the retry policy becomes
`SynthesisUnavailable`, and the caller retries the chunk later; a malformed answer becomes
`InvalidSynthesisOutput` at once, because the caller owns the bounded whole-window retry.
"""

from __future__ import annotations

from typing import Any

import structlog

from timeline_pipeline.llm.forced_tool import ForcedToolCaller, ToolErrors, validated
from timeline_pipeline.synthesis.contract import (
    DraftEntry,
    InvalidSynthesisOutput,
    SynthesisChunk,
    SynthesisRejected,
    SynthesisResult,
    SynthesisUnavailable,
    TokenUsage,
    validate_entries,
)
from timeline_pipeline.synthesis.prompt import (
    PROMPT_VERSION,
    RecordEntriesInput,
    render_chunk,
    system_prompt,
    tool_definition,
)

__all__ = ["PROMPT_VERSION", "ClaudeSynthesizer"]

log = structlog.get_logger(__name__)

ERRORS = ToolErrors(
    invalid=InvalidSynthesisOutput,
    rejected=SynthesisRejected,
    unavailable=lambda reason, message, after: SynthesisUnavailable(
        reason, message, retry_after=after
    ),
)


def _chunk_ids(chunk: SynthesisChunk) -> dict[str, object]:
    """What identifies a chunk in logs: ids and times only, never message text."""
    return {
        "chat_id": chunk.evidence[0].chat_id if chunk.evidence else None,
        "window_start": chunk.window_start.isoformat(),
        "chunk_index": chunk.index,
        "first_evidence_id": chunk.evidence[0].id if chunk.evidence else None,
    }


class ClaudeSynthesizer(ForcedToolCaller):
    """Synthesizes drafts with Claude via a forced `record_entries` tool call."""

    prompt_version = PROMPT_VERSION
    errors = ERRORS
    event = "synthesis.claude"
    _tool = tool_definition()

    def synthesize(self, chunk: SynthesisChunk) -> SynthesisResult:
        answer = self.call(
            system=system_prompt(chunk.locale),
            prompt=render_chunk(chunk),
            tool=self._tool,
            schema=RecordEntriesInput,
            ids=_chunk_ids(chunk),
        )
        entries = validate_entries(chunk, self._entries(chunk, answer.value))
        usage = TokenUsage(input_tokens=answer.input_tokens, output_tokens=answer.output_tokens)
        log.info(
            "synthesis.claude.completed",
            **_chunk_ids(chunk),
            evidence_count=len(chunk.evidence),
            entry_count=len(entries),
            locale=chunk.locale.value,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            model=answer.model,
        )
        return SynthesisResult(
            entries=entries, usage=usage, model=answer.model, prompt_version=self.prompt_version
        )

    def _entries(self, chunk: SynthesisChunk, parsed: RecordEntriesInput) -> list[DraftEntry]:
        """Drafts from the tool input; a shape problem is reported by code and count only."""
        times = {item.id: item.occurred_at for item in chunk.evidence}
        entries: list[DraftEntry] = []
        for proposed in parsed.entries:
            # A repeated id is harmless noise; unknown ids are left for validate_entries to refuse.
            ids = list(dict.fromkeys(proposed.evidence_ids))
            known = [times[i] for i in ids if i in times]
            fields: dict[str, Any] = {
                "title": proposed.title,
                "category": proposed.category,
                "occurred_at": min(known) if known else chunk.window_start,
                "evidence_ids": ids,
                "detail": proposed.detail,
            }
            entry, errors = validated(DraftEntry, fields)
            if entry is None:
                raise InvalidSynthesisOutput(
                    "schema_invalid", f"entry failed validation ({errors} errors)"
                )
            entries.append(entry)
        return entries
