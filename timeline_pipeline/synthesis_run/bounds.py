"""How much of a window one model call may carry, from the settings."""

from __future__ import annotations

from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.synthesis.chunking import MIN_CONTEXT_TOKENS, ChunkLimits

__all__ = ["chunk_limits"]


def chunk_limits(settings: LarkTimelineSettings) -> ChunkLimits:
    """Chunk bounds from the settings; the prompt budget is shared by evidence and context.

    Three quarters of `synthesisMaxPromptTokens` go to the chunk's own evidence and one quarter
    to read-only context, so the estimated prompt never exceeds the configured budget. The
    context's quarter is spent on the roots and parents of the chunk's replies first, and a
    chunk takes fewer replies when theirs do not fit (`synthesis.chunking`); it is never less
    than one reply's root and parent need (`MIN_CONTEXT_TOKENS`, under the smallest budgets).
    """
    context_tokens = max(settings.synthesis_max_prompt_tokens // 4, MIN_CONTEXT_TOKENS)
    return ChunkLimits(
        max_count=settings.evidence_batch_limit,
        max_estimated_tokens=settings.synthesis_max_prompt_tokens - context_tokens,
        context_lookback=settings.synthesis_context_lookback,
        max_context_tokens=context_tokens,
        proximity_gap=settings.synthesis_group_gap,
    )
