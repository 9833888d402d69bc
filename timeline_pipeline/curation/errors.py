"""What a curation request can be refused for; HTTP and the CLI map each to one answer.

Every refusal is raised before anything is written (or inside the transaction that it rolls
back), so a refused request leaves the timeline exactly as it was.
"""

from __future__ import annotations

__all__ = [
    "CurationError",
    "EntryNotFound",
    "InvalidInput",
    "InvalidTransition",
    "StaleRevision",
    "SummaryNotFound",
]


class CurationError(Exception):
    """Base of curation refusals; `code` is short and stable for clients to branch on."""

    code = "curation_error"


class EntryNotFound(CurationError):
    """No such entry in this workspace (an entry of another workspace is not found either)."""

    code = "entry_not_found"


class SummaryNotFound(CurationError):
    code = "summary_not_found"


class StaleRevision(CurationError):
    """The caller edited a revision that is no longer current: re-read, then decide again."""

    code = "stale_revision"

    def __init__(self, message: str, current_revision: int | None) -> None:
        super().__init__(message)
        self.current_revision = current_revision


class InvalidTransition(CurationError):
    """The action does not apply to the entry's current status (e.g. confirming a hidden one)."""

    code = "invalid_transition"


class InvalidInput(CurationError):
    """Text too long or blank, an unknown category, evidence of another workspace, ..."""

    code = "invalid_input"
