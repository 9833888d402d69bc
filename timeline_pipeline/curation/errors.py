"""What only curation refuses; the refusals every package shares (invalid input, a stale
revision, an invalid transition) are the family in `domain/errors.py` (docs/glossary.md,
"Refusal"). HTTP and the CLI map each to one answer.

Every refusal is raised before anything is written (or inside the transaction that it rolls
back), so a refused request leaves the timeline exactly as it was.
"""

from __future__ import annotations

from timeline_pipeline.domain.errors import Refused

__all__ = [
    "CurationError",
    "EntryNotFound",
    "SummaryNotFound",
]


class CurationError(Refused, code="curation_error"):
    """Base of the refusals only curation makes; `code` is short and stable for clients."""


class EntryNotFound(CurationError, code="entry_not_found", status=404):
    """No such entry in this workspace (an entry of another workspace is not found either)."""


class SummaryNotFound(CurationError, code="summary_not_found", status=404): ...
