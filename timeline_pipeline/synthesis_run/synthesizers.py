"""The synthesizer a deployment's window runs use: Claude when an Anthropic key is set, the
rule-based one otherwise (docs/configuration.md). Built here once for every caller:
the synthesis asset's resource, the maintenance listener and the rerun job, so that a rerun
preview runs exactly the synthesizer its apply will."""

from __future__ import annotations

from timeline_pipeline.llm.setup import claude_setup
from timeline_pipeline.settings import Settings
from timeline_pipeline.synthesis.contract import Synthesizer
from timeline_pipeline.synthesis.rules import RuleSynthesizer

__all__ = ["build_synthesizer"]


def build_synthesizer(
    settings: Settings, api_key: str | None = None, base_url: str | None = None
) -> Synthesizer:
    """Claude (model, timeouts and retry bounds from the settings) when a key is set (given,
    or ANTHROPIC_API_KEY), else the rule synthesizer."""
    setup = claude_setup(settings, api_key, base_url)
    if setup is None:
        return RuleSynthesizer()
    from timeline_pipeline.synthesis.claude import ClaudeSynthesizer

    return ClaudeSynthesizer(
        setup.client,
        model=setup.model,
        max_output_tokens=settings.timeline.synthesis_max_output_tokens,
        retry=setup.retry,
    )
