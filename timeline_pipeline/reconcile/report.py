"""What a reconciliation run did, per chat and in total. Pure.

The same numbers feed the Dagster materialization metadata, the CLI output and the Prometheus
counters, so an operator sees one story whichever door they look through (docs/design.md §12:
reconciliation duration, pages, messages, lag and failures; evidence inserts/updates/duplicates).
"""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from timeline_pipeline.domain.evidence import UpsertSummary


class FailureKind(enum.StrEnum):
    """Why a chat's range did not complete; also the metric label."""

    PERMISSION_DENIED = "permission_denied"
    TOKEN_REJECTED = "token_rejected"  # noqa: S105 - a reason code, not a secret
    LARK_API_ERROR = "lark_api_error"
    DATABASE_ERROR = "database_error"
    CONCURRENT_RUN = "concurrent_run"


# Counted skips that are not eligibility decisions of the write path.
THREAD_BUDGET_EXHAUSTED = "thread_budget_exhausted"


@dataclass
class ChatReport:
    workspace_id: str
    chat_id: str
    mode: str
    kind: str | None = None
    range_start: datetime | None = None
    range_end: datetime | None = None
    resumed_from: str | None = None
    chat_pages: int = 0
    thread_pages: int = 0
    threads_fetched: int = 0
    threads_skipped: int = 0
    """Known threads left out by `reconcileMaxThreads`; each holds `covered_until` back."""
    pre_floor_messages_read: int = 0
    """Messages read before the ingestion floor for the threads rooted there (ids only)."""
    pre_floor_roots_given_up: bool = False
    """The scan before the floor stopped at `reconcilePreFloorScanLimit` with the margin not
    read to its start: a thread rooted further back is not known from it (`runner`)."""
    items: int = 0
    """Raw items listed, malformed ones included."""
    messages: int = 0
    """Items that normalized into a message (each then stored or skipped for a reason)."""
    upserts: UpsertSummary = field(default_factory=UpsertSummary)
    skipped: Counter[str] = field(default_factory=Counter)
    """Eligibility decisions of the write path, keyed by `Skip` reason."""
    rejected: Counter[str] = field(default_factory=Counter)
    """Items that could not be normalized, keyed by the normalizer's reason code."""
    excluded: Counter[str] = field(default_factory=Counter)
    """Messages kept out of synthesis because a bot (`bot`) or this app (`self`) sent them."""
    newest_message_at: datetime | None = None
    lag_seconds: float | None = None
    checkpoint_advanced: bool = False
    covered_until: datetime | None = None
    """What the checkpoint now says is collected: the range end unless threads were skipped."""
    failure: FailureKind | None = None
    error: str | None = None
    duration_seconds: float = 0.0
    fetch_seconds: float = 0.0
    """Waiting on Lark: HTTP round trips, retries and the client's rate limiter."""
    normalize_seconds: float = 0.0
    write_seconds: float = 0.0
    """Eligibility, batch upserts, the checkpoint marker and commits."""

    @property
    def pages(self) -> int:
        return self.chat_pages + self.thread_pages

    @property
    def ok(self) -> bool:
        return self.failure is None

    def fail(self, kind: FailureKind, error: str) -> None:
        self.failure = kind
        self.error = error

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: times as ISO 8601, counters as plain dicts, no message content."""
        return {
            "workspace_id": self.workspace_id,
            "chat_id": self.chat_id,
            "mode": self.mode,
            "kind": self.kind,
            "range_start": _iso(self.range_start),
            "range_end": _iso(self.range_end),
            "resumed_from": self.resumed_from,
            "pages": self.pages,
            "chat_pages": self.chat_pages,
            "thread_pages": self.thread_pages,
            "threads_fetched": self.threads_fetched,
            "threads_skipped": self.threads_skipped,
            "pre_floor_messages_read": self.pre_floor_messages_read,
            "pre_floor_roots_given_up": self.pre_floor_roots_given_up,
            "items": self.items,
            "messages": self.messages,
            "inserted": self.upserts.inserted,
            "updated": self.upserts.updated,
            "duplicate": self.upserts.duplicate,
            "skipped": dict(sorted(self.skipped.items())),
            "rejected": dict(sorted(self.rejected.items())),
            "excluded": dict(sorted(self.excluded.items())),
            "newest_message_at": _iso(self.newest_message_at),
            "lag_seconds": _round(self.lag_seconds),
            "checkpoint_advanced": self.checkpoint_advanced,
            "covered_until": _iso(self.covered_until),
            "failure": self.failure.value if self.failure else None,
            "error": self.error,
            "duration_seconds": _round(self.duration_seconds),
            "fetch_seconds": _round(self.fetch_seconds),
            "normalize_seconds": _round(self.normalize_seconds),
            "write_seconds": _round(self.write_seconds),
        }


@dataclass
class RunReport:
    mode: str
    started_at: datetime
    chats: list[ChatReport] = field(default_factory=list)
    workspaces_skipped: Counter[str] = field(default_factory=Counter)
    """Workspaces an automatic scan left out, keyed by `Skip` reason (not firing, aged out...)."""
    duration_seconds: float = 0.0
    names_filled: int = 0
    """Evidence rows that got their sender's display name after the run."""
    name_lookup_failures: int = 0

    @property
    def failures(self) -> list[ChatReport]:
        return [chat for chat in self.chats if not chat.ok]

    @property
    def upserts(self) -> UpsertSummary:
        total = UpsertSummary()
        for chat in self.chats:
            total = total + chat.upserts
        return total

    def skipped(self) -> Counter[str]:
        """Every counted skip by reason: eligibility, rejected items (`malformed:<code>`)."""
        total: Counter[str] = Counter()
        for chat in self.chats:
            total.update(chat.skipped)
            total.update({f"malformed:{code}": n for code, n in chat.rejected.items()})
        return total

    def excluded(self) -> Counter[str]:
        """Messages from bots (`bot`) or this app (`self`), kept out of synthesis."""
        total: Counter[str] = Counter()
        for chat in self.chats:
            total.update(chat.excluded)
        return total

    def max_lag_seconds(self) -> float | None:
        lags = [chat.lag_seconds for chat in self.chats if chat.lag_seconds is not None]
        return max(lags) if lags else None

    def totals(self) -> dict[str, Any]:
        upserts = self.upserts
        failures: Counter[str] = Counter(
            chat.failure.value for chat in self.chats if chat.failure is not None
        )
        return {
            "mode": self.mode,
            "chats": len(self.chats),
            "pages": sum(chat.pages for chat in self.chats),
            "chat_pages": sum(chat.chat_pages for chat in self.chats),
            "thread_pages": sum(chat.thread_pages for chat in self.chats),
            "messages": sum(chat.messages for chat in self.chats),
            "threads_fetched": sum(chat.threads_fetched for chat in self.chats),
            "threads_skipped": sum(chat.threads_skipped for chat in self.chats),
            "inserted": upserts.inserted,
            "updated": upserts.updated,
            "duplicate": upserts.duplicate,
            "skipped": dict(sorted(self.skipped().items())),
            "excluded": dict(sorted(self.excluded().items())),
            "workspaces_skipped": dict(sorted(self.workspaces_skipped.items())),
            "failures": len(self.failures),
            "failures_by_kind": dict(sorted(failures.items())),
            "max_lag_seconds": _round(self.max_lag_seconds()),
            "names_filled": self.names_filled,
            "name_lookup_failures": self.name_lookup_failures,
            "duration_seconds": _round(self.duration_seconds),
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.totals(),
            "started_at": self.started_at.isoformat(),
            "per_chat": [chat.as_dict() for chat in self.chats],
        }

    def failure_summary(self) -> str:
        """One line naming every failed chat, for stderr and Dagster failure descriptions."""
        parts = [f"{chat.workspace_id}/{chat.chat_id}: {chat.error}" for chat in self.failures]
        return f"{len(parts)} chat(s) failed to reconcile: " + "; ".join(parts)


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _round(value: float | None) -> float | None:
    return round(value, 3) if value is not None else None
