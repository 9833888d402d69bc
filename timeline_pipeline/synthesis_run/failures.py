"""Why a chunk gave up, in diagnostics of bounded size and without content."""

from __future__ import annotations

from dataclasses import dataclass

from timeline_pipeline.synthesis.contract import SynthesisChunk

__all__ = ["MAX_DIAGNOSTIC_CHARS", "ChunkFailure", "bounded", "error_kind"]

MAX_DIAGNOSTIC_CHARS = 900


def bounded(text: str, limit: int = MAX_DIAGNOSTIC_CHARS) -> str:
    """One line, at most `limit` characters: diagnostics must never grow a row without bound."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def error_kind(exc: BaseException) -> str:
    """An error named by its type, and the driver's error type under a SQLAlchemy wrapper
    (`OperationalError (sqlite3.OperationalError)`): never its text, which for a database error may
    carry a statement's parameters, i.e. message-derived text."""
    kind = type(exc).__name__
    cause = getattr(exc, "orig", None)
    if isinstance(cause, BaseException):
        kind += f" ({type(cause).__module__}.{type(cause).__name__})"
    return kind


@dataclass(frozen=True, slots=True)
class ChunkFailure:
    """Why a chunk gave up: a stable reason code plus a short, content-free message."""

    reason: str
    message: str
    attempts: int
    retryable: bool

    def diagnostic(self, chunk: SynthesisChunk, chunk_number: int, chunk_total: int) -> str:
        ids = [item.id for item in chunk.evidence]
        span = f"evidence {min(ids)}..{max(ids)}" if ids else "no evidence"
        return bounded(
            f"chunk {chunk_number}/{chunk_total} ({span}, {len(ids)} rows) failed after "
            f"{self.attempts} attempt(s): {self.reason}: {self.message}"
        )
