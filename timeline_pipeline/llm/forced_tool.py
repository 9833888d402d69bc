"""One forced tool call through the Anthropic Messages API: the only way the product asks Claude.

Synthesis and the workspace summary both ask for structured output the same way, a forced
`tool_choice` whose `tool_use` input is validated into a pydantic model, so this module owns what
they share: the client (the SDK's own retries off, because its retry obeys `retry-after` without a
cap and `retry-after: 3600` would sleep an hour), the bounded retry of transient failures under
`timeline_pipeline.retry.RetryPolicy`, the parsing of the answer, and the mapping of SDK errors to
the caller's three kinds of failure: unavailable (retry later), rejected (retrying cannot help)
and invalid output (answered, but not usable).

Sampling is pinned (`SAMPLING`: temperature 0): a restarted window or an operator replay asks the
same question again, and an answer that varies only in wording must come back the same, so that
its drafts re-find the entries they made the first time instead of adding reworded copies (the
entries store also re-finds a draft by its evidence, docs/design.md §7). The SDK's `create` takes
no `temperature` argument, so it travels in the request body (`extra_body`).

pydantic's errors quote their input, which is chat or timeline text: only their count leaves
this module, and the exceptions raised from the count carry no chained context to leak it. Logs
carry the ids the caller passes, reason codes and counts.
"""

from __future__ import annotations

import email.utils
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import ClassVar, Generic, TypeVar

import anthropic
import structlog
from anthropic.types import Message, ToolParam, ToolUseBlock
from pydantic import BaseModel, ValidationError
from tenacity import RetryCallState

from timeline_pipeline.retry import RetryPolicy

__all__ = [
    "SAMPLING",
    "ForcedToolCaller",
    "ToolAnswer",
    "ToolErrors",
    "build_claude_client",
    "failure_reason",
    "is_transient",
    "retry_after_seconds",
    "retry_free_client",
]

log = structlog.get_logger(__name__)

M = TypeVar("M", bound=BaseModel)

_TRANSIENT_STATUS = frozenset({408, 429})

SAMPLING: Mapping[str, float] = {"temperature": 0.0}
"""The sampling parameters of every call; a caller's prompt version says they are in force."""


def build_claude_client(
    api_key: str | None, base_url: str | None, timeout_seconds: float
) -> anthropic.Anthropic:
    """An SDK client with its own retries off; `ForcedToolCaller` applies a bounded policy."""
    return anthropic.Anthropic(
        api_key=api_key, base_url=base_url, timeout=timeout_seconds, max_retries=0
    )


def retry_free_client(client: anthropic.Anthropic) -> anthropic.Anthropic:
    """The client with the SDK's own retries off, so that the caller's `RetryPolicy` is the only
    policy in force whatever client a caller hands in."""
    return client if client.max_retries == 0 else client.with_options(max_retries=0)


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


@dataclass(frozen=True, slots=True)
class ToolErrors:
    """The caller's own exception for each kind of failure, built from (reason, message)."""

    invalid: Callable[[str, str], Exception]
    """The service answered, but not with one valid call of the tool."""
    rejected: Callable[[str, str], Exception]
    """The service refused the request; retrying cannot help."""
    unavailable: Callable[[str, str, float | None], Exception]
    """A transient failure outlived the retries; the third argument is the last retry-after."""


@dataclass(frozen=True, slots=True)
class ToolAnswer(Generic[M]):
    """The validated tool input and what the reply says about the call."""

    value: M
    model: str
    input_tokens: int
    output_tokens: int


class ForcedToolCaller:
    """Base of a Claude caller (the synthesizer, the summarizer): one model, one forced tool
    per call, one retry policy.

    A subclass names its exception types (`errors`) and the prefix of its log events (`event`,
    e.g. `synthesis.claude` for `synthesis.claude.retry` and `.unavailable`), builds its prompt
    and calls `call`.
    """

    name = "claude"
    errors: ClassVar[ToolErrors]
    event: ClassVar[str]

    def __init__(
        self,
        client: anthropic.Anthropic,
        *,
        model: str,
        max_output_tokens: int,
        retry: RetryPolicy,
    ) -> None:
        self.client = retry_free_client(client)
        self.model = model
        self.max_output_tokens = max_output_tokens
        self.retry = retry

    def call(
        self,
        *,
        system: str,
        prompt: str,
        tool: ToolParam,
        schema: type[M],
        ids: Mapping[str, object],
    ) -> ToolAnswer[M]:
        """Send `prompt`, force `tool`, and return its input validated as `schema`."""
        message = self._call_with_retries(system, prompt, tool, ids)
        value = self._tool_input(message, tool["name"], schema)
        return ToolAnswer(
            value=value,
            model=message.model or self.model,
            input_tokens=message.usage.input_tokens,
            output_tokens=message.usage.output_tokens,
        )

    # --- the call ------------------------------------------------------------------------------

    def _call_with_retries(
        self, system: str, prompt: str, tool: ToolParam, ids: Mapping[str, object]
    ) -> Message:
        def send() -> Message:
            return self.client.messages.create(
                model=self.model,
                max_tokens=self.max_output_tokens,
                system=system,
                messages=[{"role": "user", "content": prompt}],
                tools=[tool],
                tool_choice={"type": "tool", "name": tool["name"]},
                extra_body=dict(SAMPLING),
            )

        try:
            return self.retry.call(
                send,
                retry_on=is_transient,
                retry_after=retry_after_seconds,
                before_sleep=lambda state: self._log_retry(ids, state),
            )
        except anthropic.APIResponseValidationError as error:
            raise self.errors.invalid(
                "malformed_response",
                f"reply did not match the Messages API shape ({error.status_code})",
            ) from None
        except anthropic.APIStatusError as error:
            if is_transient(error):
                raise self._unavailable(ids, error) from error
            raise self.errors.rejected(
                f"http_{error.status_code}",
                f"messages API refused the request (status {error.status_code}, "
                f"request id {error.request_id})",
            ) from error
        except anthropic.APIConnectionError as error:
            raise self._unavailable(ids, error) from error

    def _log_retry(self, ids: Mapping[str, object], state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        log.warning(
            f"{self.event}.retry",  # noqa: G004 - structlog event name, not a format string
            **ids,
            attempt=state.attempt_number,
            reason=failure_reason(error) if error is not None else "unknown",
            status=getattr(error, "status_code", None),
            request_id=getattr(error, "request_id", None),
            wait_seconds=round(state.upcoming_sleep, 3),
        )

    def _unavailable(self, ids: Mapping[str, object], error: BaseException) -> Exception:
        reason = failure_reason(error)
        attempts = self.retry.attempts
        log.warning(
            f"{self.event}.unavailable",  # noqa: G004 - structlog event name, not a format string
            **ids,
            attempts=attempts,
            reason=reason,
        )
        return self.errors.unavailable(
            reason,
            f"messages API still failing after {attempts} attempts ({reason})",
            retry_after_seconds(error),
        )

    # --- the answer ----------------------------------------------------------------------------

    def _tool_input(self, message: Message, tool_name: str, schema: type[M]) -> M:
        """Read the tool input; any shape problem is reported by code and count, never by text."""
        if message.stop_reason == "max_tokens":
            raise self.errors.invalid("output_truncated", "reply hit max_tokens")
        calls = [
            block
            for block in message.content
            if isinstance(block, ToolUseBlock) and block.name == tool_name
        ]
        if len(calls) != 1:
            raise self.errors.invalid(
                "missing_tool_use", f"expected one {tool_name} call, got {len(calls)}"
            )
        parsed, errors = validated(schema, calls[0].input)
        if parsed is None:
            raise self.errors.invalid(
                "schema_invalid", f"tool input failed validation ({errors} errors)"
            )
        return parsed


def validated(schema: type[M], raw: object) -> tuple[M | None, int]:
    """`raw` as `schema`, or None and the number of errors: pydantic's error text quotes the
    input, so only the count may leave here (raise outside the `except`, unchained)."""
    try:
        return schema.model_validate(raw), 0
    except ValidationError as error:
        return None, error.error_count()
