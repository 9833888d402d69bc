"""The registered processors, and the registry a job service uses."""

from __future__ import annotations

from timeline_pipeline.maintenance.processor import Registry
from timeline_pipeline.maintenance.processors.content_hash_backfill import ContentHashBackfill
from timeline_pipeline.maintenance.processors.evidence_redaction import EvidenceRedaction
from timeline_pipeline.maintenance.processors.rerun_preview import SynthesizerFactory
from timeline_pipeline.maintenance.processors.window_rerun import WindowRerun
from timeline_pipeline.settings import LarkTimelineSettings


def default_registry(
    settings: LarkTimelineSettings, *, synthesizer: SynthesizerFactory | None = None
) -> Registry:
    """`synthesizer` builds the synthesizer a rerun preview runs: the one the window runs of
    this deployment use (`synthesis_run.synthesizers.build_synthesizer`); the rule synthesizer
    when not given."""
    registry = Registry()
    registry.register(WindowRerun(settings, preview=False))  # jobs stored before previews
    registry.register(WindowRerun(settings, synthesizer=synthesizer))
    registry.register(EvidenceRedaction())
    registry.register(ContentHashBackfill())
    return registry
