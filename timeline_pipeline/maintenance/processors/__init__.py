"""The registered processors, and the registry a job service uses."""

from __future__ import annotations

from timeline_pipeline.maintenance.processor import Registry
from timeline_pipeline.maintenance.processors.content_hash_backfill import ContentHashBackfill
from timeline_pipeline.maintenance.processors.evidence_redaction import EvidenceRedaction
from timeline_pipeline.maintenance.processors.window_rerun import WindowRerun
from timeline_pipeline.settings import LarkTimelineSettings


def default_registry(settings: LarkTimelineSettings) -> Registry:
    registry = Registry()
    registry.register(WindowRerun(settings))
    registry.register(EvidenceRedaction())
    registry.register(ContentHashBackfill())
    return registry
