"""What both Claude callers (synthesis and summary) are built from: one client and one retry
policy, when an Anthropic key is set (docs/configuration.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from timeline_pipeline.retry import RetryPolicy
from timeline_pipeline.settings import Settings

if TYPE_CHECKING:
    import anthropic

__all__ = ["ClaudeSetup", "claude_setup", "model_key"]


@dataclass(frozen=True)
class ClaudeSetup:
    """What both Claude callers (synthesis and summary) need: one client and one retry policy."""

    client: anthropic.Anthropic
    model: str
    retry: RetryPolicy


def model_key(settings: Settings, api_key: str | None) -> str:
    """The Anthropic key in use (the given one, else ANTHROPIC_API_KEY); empty: rules run."""
    return api_key or settings.runtime.anthropic_api_key.get_secret_value()


def claude_setup(
    settings: Settings, api_key: str | None, base_url: str | None
) -> ClaudeSetup | None:
    """Claude when an Anthropic key is set (ANTHROPIC_API_KEY unless given), else None; the
    model, timeout and retry bounds are the synthesis settings."""
    key = model_key(settings, api_key)
    if not key:
        return None
    from timeline_pipeline.llm.forced_tool import build_claude_client

    timeline = settings.timeline
    return ClaudeSetup(
        client=build_claude_client(
            key,
            base_url or settings.runtime.anthropic_base_url,
            timeline.model_timeout.total_seconds(),
        ),
        model=timeline.model,
        retry=RetryPolicy.for_model_calls(timeline),
    )
