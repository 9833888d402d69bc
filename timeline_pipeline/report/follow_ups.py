"""Creates the Lark tasks of confirmed next steps (docs/report.md, "Follow-ups as Lark tasks").

A confirmation queues the task in its own transaction (`curation/service.py`,
`store/follow_up_tasks.py`); this worker, run by the report sensor's job, asks Lark for each
queued task with the row's client token, so a retry or a restart gets the first task back,
never a second. A task names the next step (its title, then its detail), links to the report's
document when there is one (else to the entry on the timeline page) and is left alone when the
entry is hidden later: the team owns it once it exists.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

import structlog
from sqlalchemy import Engine

from timeline_pipeline.db.engine import connection, transaction
from timeline_pipeline.lark.client import LarkApiError, LarkPermissionError
from timeline_pipeline.lark.documents import LarkDocuments
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import entries, follow_up_tasks, report_documents
from timeline_pipeline.store.follow_up_tasks import FollowUpTask

__all__ = ["MAX_ATTEMPTS", "FollowUpOutcome", "FollowUpWorker"]

log = structlog.get_logger(__name__)

MAX_ATTEMPTS: Final = 5
"""Attempts a task gets across runs before it is marked failed (each attempt retries Lark's
transient errors itself, `RetryPolicy`)."""
SUMMARY_MAX_CHARS: Final = 256


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class FollowUpOutcome:
    created: int = 0
    failed: int = 0
    deferred: int = 0


class FollowUpWorker:
    def __init__(
        self,
        engine: Engine,
        settings: LarkTimelineSettings,
        documents: LarkDocuments,
        *,
        clock: Callable[[], datetime] = _utcnow,
    ) -> None:
        self.engine = engine
        self.settings = settings
        self.documents = documents
        self.clock = clock

    def run(self, *, limit: int = 50) -> FollowUpOutcome:
        """Every queued task, oldest first, up to `limit`."""
        with connection(self.engine) as conn:
            queued = follow_up_tasks.pending(conn, limit=limit)
        created = failed = deferred = 0
        for task in queued:
            result = self._one(task)
            created += result == "created"
            failed += result == "failed"
            deferred += result == "deferred"
        return FollowUpOutcome(created, failed, deferred)

    def _one(self, task: FollowUpTask) -> str:
        with connection(self.engine) as conn:
            entry = entries.get(conn, task.entry_id)
            document = report_documents.get(conn, task.workspace_id)
        if entry is None:  # purged before its task was made: nothing to name
            return self._finish(task, state="failed", last_error="entry_gone")
        summary = entry.title[:SUMMARY_MAX_CHARS]
        description = entry.detail or ""
        link = document.document_url if document is not None else None
        if link is None and self.settings.review_card_link_base_url:
            base = self.settings.review_card_link_base_url.rstrip("/")
            link = f"{base}/ui/workspaces/{task.workspace_id}#entry-{task.entry_id}"
        try:
            made = self.documents.create_task(
                summary, description, client_token=task.client_token, link_url=link
            )
        except LarkPermissionError as exc:
            log.warning("report.follow_up.refused", task_id=task.id, code=exc.code)
            return self._finish(task, state="failed", last_error=f"lark:{exc.code}")
        except LarkApiError as exc:
            log.warning("report.follow_up.deferred", task_id=task.id, code=exc.code)
            if task.attempt_count + 1 >= MAX_ATTEMPTS:
                return self._finish(task, state="failed", last_error=f"lark:{exc.code}")
            with transaction(self.engine) as conn:
                follow_up_tasks.move(
                    conn,
                    task,
                    attempt_count=task.attempt_count + 1,
                    last_error=f"lark:{exc.code}",
                    updated_at=self.clock(),
                )
            return "deferred"
        log.info("report.follow_up.created", task_id=task.id, entry_id=task.entry_id)
        return self._finish(task, state="created", task_guid=made.guid, task_url=made.url or None)

    def _finish(self, task: FollowUpTask, **values: object) -> str:
        with transaction(self.engine) as conn:
            moved = follow_up_tasks.move(conn, task, updated_at=self.clock(), **values)
        return str(values["state"]) if moved is not None else "deferred"
