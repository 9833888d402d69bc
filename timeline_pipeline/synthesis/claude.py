"""Model synthesis through the Anthropic Messages API, with a bounded retry of our own.

The SDK's built-in retry obeys `retry-after` without a cap (a `retry-after: 3600` sleeps an
hour), so the client runs with `max_retries=0` and this module retries transient failures with
exponential backoff, full jitter and a capped server hint. Anything that outlives those attempts
becomes `SynthesisUnavailable`, and the caller retries the chunk later; a malformed answer becomes
`InvalidSynthesisOutput` at once, because the caller owns the bounded whole-window retry.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import anthropic
import structlog
from anthropic.types import Message, ToolUseBlock
from pydantic import ValidationError
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_random_exponential,
)

from timeline_pipeline.synthesis.models import (
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
    SYSTEM_PROMPT,
    TOOL_NAME,
    RecordEntriesInput,
    render_chunk,
    tool_definition,
)

__all__ = [
    "PROMPT_VERSION",
    "ClaudeSynthesizer",
    "build_claude_client",
    "failure_reason",
    "is_transient",
    "retry_after_seconds",
    "retry_free_client",
    "transient_retrying",
]

log = structlog.get_logger(__name__)

_TRANSIENT_STATUS = frozenset({408, 429})


def build_claude_client(
    api_key: str | None, base_url: str | None, timeout_seconds: float
) -> anthropic.Anthropic:
    """An SDK client with its own retries off; `ClaudeSynthesizer` applies a bounded policy."""
    return anthropic.Anthropic(
        api_key=api_key, base_url=base_url, timeout=timeout_seconds, max_retries=0
    )


def is_transient(error: BaseException) -> bool:
    """Overload (529), rate limits (429), other 5xx, request timeouts and dropped connections."""
    if isinstance(error, anthropic.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(error, anthropic.APIStatusError):
        return error.status_code >= 500 or error.status_code in _TRANSIENT_STATUS
    return False


def failure_reason(error: BaseException) -> str:
    """A short, stable code for a failed Messages API call (logs and diagnostics)."""
    if isinstance(error, anthropic.APITimeoutError):
        return "timeout"
    if isinstance(error, anthropic.APIConnectionError):
        return "connection_error"
    if isinstance(error, anthropic.APIStatusError):
        return {429: "rate_limited", 529: "overloaded"}.get(error.status_code, "server_error")
    return "unexpected_error"


def retry_after_seconds(error: BaseException | None) -> float | None:
    """The server's own hint, from `retry-after-ms` or `retry-after` (seconds or HTTP date)."""
    if not isinstance(error, anthropic.APIStatusError):
        return None
    headers = error.response.headers
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return max(0.0, (moment - datetime.now(UTC)).total_seconds())


def _chunk_ids(chunk: SynthesisChunk) -> dict[str, object]:
    """What identifies a chunk in logs: ids and times only, never message text."""
    return {
        "chat_id": chunk.evidence[0].chat_id if chunk.evidence else None,
        "window_start": chunk.window_start.isoformat(),
        "chunk_index": chunk.index,
        "first_evidence_id": chunk.evidence[0].id if chunk.evidence else None,
    }


def transient_retrying(
    *,
    max_attempts: int,
    backoff_base_seconds: float,
    backoff_cap_seconds: float,
    max_retry_after_seconds: float,
    before_sleep: Callable[[RetryCallState], None],
) -> Retrying:
    """The one retry policy for Messages API calls (synthesis and summary alike).

    Transient errors only; full-jitter exponential backoff, i.e. uniform(0, min(cap,
    base * 2 ** (attempt - 1))); a server's retry-after is obeyed but capped, because the SDK
    would otherwise sleep as long as the server asks.
    """
    backoff = wait_random_exponential(multiplier=backoff_base_seconds, max=backoff_cap_seconds)

    def wait(state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome is not None else None
        hint = retry_after_seconds(error)
        if hint is not None:
            return min(hint, max_retry_after_seconds)
        return float(backoff(state))

    return Retrying(
        stop=stop_after_attempt(max_attempts),
        wait=wait,
        retry=retry_if_exception(is_transient),
        before_sleep=before_sleep,
        sleep=time.sleep,
        reraise=True,
    )


def retry_free_client(
    client: anthropic.Anthropic,
    max_attempts: int,
    backoff_base_seconds: float,
    backoff_cap_seconds: float,
    max_retry_after_seconds: float,
) -> anthropic.Anthropic:
    """Check the retry bounds and return the client with the SDK's own retries off, so that
    `transient_retrying` is the only policy in force whatever client a caller hands in."""
    if max_attempts < 1:
        raise ValueError("max_attempts must be at least 1")
    if min(backoff_base_seconds, backoff_cap_seconds, max_retry_after_seconds) < 0:
        raise ValueError("backoff settings must not be negative")
    return client if client.max_retries == 0 else client.with_options(max_retries=0)


class ClaudeSynthesizer:
    """Synthesizes drafts with Claude via a forced `record_entries` tool call."""

    name = "claude"
    prompt_version = PROMPT_VERSION

    def __init__(
        self,
        client: anthropic.Anthropic,
        *,
        model: str,
        max_output_tokens: int,
        max_attempts: int,
        backoff_base_seconds: float,
        backoff_cap_seconds: float,
        max_retry_after_seconds: float,
    ) -> None:
        self._client = retry_free_client(
            client, max_attempts, backoff_base_seconds, backoff_cap_seconds, max_retry_after_seconds
        )
        self.model = model
        self.max_output_tokens = max_output_tokens
        self.max_attempts = max_attempts
        self.backoff_base_seconds = backoff_base_seconds
        self.backoff_cap_seconds = backoff_cap_seconds
        self.max_retry_after_seconds = max_retry_after_seconds
        self._tool = tool_definition()

    def synthesize(self, chunk: SynthesisChunk) -> SynthesisResult:
        message = self._call_with_retries(chunk)
        entries = validate_entries(chunk, self._entries(chunk, message))
        usage = TokenUsage(
            input_tokens=message.usage.input_tokens, output_tokens=message.usage.output_tokens
        )
        log.info(
            "synthesis.claude.completed",
            **_chunk_ids(chunk),
            evidence_count=len(chunk.evidence),
            entry_count=len(entries),
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            model=message.model,
        )
        return SynthesisResult(
            entries=entries,
            usage=usage,
            model=message.model or self.model,
            prompt_version=self.prompt_version,
        )

    # --- the call ------------------------------------------------------------------------------

    def _log_retry(self, chunk: SynthesisChunk, state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        log.warning(
            "synthesis.claude.retry",
            **_chunk_ids(chunk),
            attempt=state.attempt_number,
            reason=failure_reason(error) if error is not None else "unknown",
            status=getattr(error, "status_code", None),
            request_id=getattr(error, "request_id", None),
            wait_seconds=round(state.upcoming_sleep, 3),
        )

    def _call_with_retries(self, chunk: SynthesisChunk) -> Message:
        retrying = transient_retrying(
            max_attempts=self.max_attempts,
            backoff_base_seconds=self.backoff_base_seconds,
            backoff_cap_seconds=self.backoff_cap_seconds,
            max_retry_after_seconds=self.max_retry_after_seconds,
            before_sleep=lambda state: self._log_retry(chunk, state),
        )
        try:
            return retrying(self._call, chunk)
        except anthropic.APIResponseValidationError as error:
            raise InvalidSynthesisOutput(
                "malformed_response",
                f"reply did not match the Messages API shape ({error.status_code})",
            ) from None
        except anthropic.APIStatusError as error:
            if is_transient(error):
                raise self._unavailable(chunk, error) from error
            raise SynthesisRejected(
                f"http_{error.status_code}",
                f"messages API refused the request (status {error.status_code}, "
                f"request id {error.request_id})",
            ) from error
        except anthropic.APIConnectionError as error:
            raise self._unavailable(chunk, error) from error

    def _unavailable(self, chunk: SynthesisChunk, error: BaseException) -> SynthesisUnavailable:
        reason = failure_reason(error)
        log.warning(
            "synthesis.claude.unavailable",
            **_chunk_ids(chunk),
            attempts=self.max_attempts,
            reason=reason,
        )
        return SynthesisUnavailable(
            reason,
            f"messages API still failing after {self.max_attempts} attempts ({reason})",
            retry_after=retry_after_seconds(error),
        )

    def _call(self, chunk: SynthesisChunk) -> Message:
        return self._client.messages.create(
            model=self.model,
            max_tokens=self.max_output_tokens,
            system=SYSTEM_PROMPT,
            messages=[{"role": "user", "content": render_chunk(chunk)}],
            tools=[self._tool],
            tool_choice={"type": "tool", "name": TOOL_NAME},
        )

    # --- the answer ----------------------------------------------------------------------------

    def _entries(self, chunk: SynthesisChunk, message: Message) -> list[DraftEntry]:
        """Read the tool input; any shape problem is reported by code and count, never by text."""
        if message.stop_reason == "max_tokens":
            raise InvalidSynthesisOutput("output_truncated", "reply hit max_tokens")
        calls = [
            block
            for block in message.content
            if isinstance(block, ToolUseBlock) and block.name == TOOL_NAME
        ]
        if len(calls) != 1:
            raise InvalidSynthesisOutput(
                "missing_tool_use", f"expected one {TOOL_NAME} call, got {len(calls)}"
            )
        parsed, errors = _parse_tool_input(calls[0].input)
        if parsed is None:
            raise InvalidSynthesisOutput(
                "schema_invalid", f"tool input failed validation ({errors} errors)"
            )
        times = {item.id: item.occurred_at for item in chunk.evidence}
        entries: list[DraftEntry] = []
        for proposed in parsed.entries:
            # A repeated id is harmless noise; unknown ids are left for validate_entries to refuse.
            ids = list(dict.fromkeys(proposed.evidence_ids))
            known = [times[i] for i in ids if i in times]
            entry, errors = _draft(
                title=proposed.title,
                category=proposed.category,
                occurred_at=min(known) if known else chunk.window_start,
                evidence_ids=ids,
                detail=proposed.detail,
            )
            if entry is None:
                raise InvalidSynthesisOutput(
                    "schema_invalid", f"entry failed validation ({errors} errors)"
                )
            entries.append(entry)
        return entries


# pydantic's errors quote the input, which is chat text: only their count may leave these
# helpers, and the exceptions raised from the count carry no chained context to leak it.


def _parse_tool_input(raw: object) -> tuple[RecordEntriesInput | None, int]:
    try:
        return RecordEntriesInput.model_validate(raw), 0
    except ValidationError as error:
        return None, error.error_count()


def _draft(**fields: Any) -> tuple[DraftEntry | None, int]:
    try:
        return DraftEntry.model_validate(fields), 0
    except ValidationError as error:
        return None, error.error_count()
