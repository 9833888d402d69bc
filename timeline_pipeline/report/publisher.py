"""Writes a workspace's report into its Lark document and posts the link once into the chat
(docs/report.md, "The Lark document").

The document's row (`store/report_documents.py`) is the durable plan, and every step that Lark
cannot undo is made safe to repeat, so a retry, a restart or a `kill -9` at any point leaves one
document showing the newest revision:

* **create**: `create_started_at` is recorded (committed) before Lark is asked; a publisher that
  finds it set without a document id lists the folder for the document's title (titles carry
  the workspace id) and adopts what it finds instead of creating a second one;
* **empty**: the document's top-level blocks are deleted with a client token of the revision,
  and `cleared_for_revision` is recorded, so a retry after the insert never empties it again;
* **write**: Lark's own converter turns the Markdown into blocks, inserted in one descendant call
  with a client token of the revision (a retry returns the first insert), then
  `written_revision` is recorded;
* **reply**: the uuid is recorded before the message is sent (Lark dedupes a uuid for an hour),
  then the message id.

Each step is a compare-and-set on the row's revision: of two publishers one moves on.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Final

import structlog
from sqlalchemy import Engine

from timeline_pipeline.curation.presentation import presentation_of
from timeline_pipeline.db.engine import connection, transaction
from timeline_pipeline.i18n.catalogs import Domain, translations
from timeline_pipeline.lark.client import LarkClient
from timeline_pipeline.lark.documents import LarkDocuments
from timeline_pipeline.lifecycle import hold_gate
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import incident_reports, report_documents
from timeline_pipeline.store import workspaces as workspace_store
from timeline_pipeline.store.report_documents import ReportDocument

__all__ = ["DocumentPublisher", "PublishOutcome", "document_title"]

log = structlog.get_logger(__name__)

_REPLY_NAMESPACE: Final = uuid.UUID("0f6c1f9e-2f7d-4e53-8c51-6a4d2b3b9e07")
MAX_STEPS: Final = 8
"""Steps one `publish` takes at most (create, empty, write, reply, and a few lost races)."""


def _utcnow() -> datetime:
    return datetime.now(UTC)


def document_title(workspace_title: str | None, workspace_id: str, prefix: str) -> str:
    """The document's title: the report's name, the incident's title and the workspace id, which
    makes the title unique in its folder (a lost create is found again by it)."""
    name = workspace_title or workspace_id
    return f"{prefix}: {name} [{workspace_id}]"[:500]


@dataclass(frozen=True, slots=True)
class PublishOutcome:
    workspace_id: str
    document_id: str | None
    document_url: str | None
    written_revision: int | None
    created: bool = False
    adopted: bool = False
    wrote: bool = False
    replied: bool = False


class DocumentPublisher:
    """Moves one workspace's document plan forward (docs/report.md)."""

    def __init__(
        self,
        engine: Engine,
        settings: LarkTimelineSettings,
        client: LarkClient,
        *,
        documents: LarkDocuments | None = None,
        clock: Callable[[], datetime] = _utcnow,
    ) -> None:
        self.engine = engine
        self.settings = settings
        self.client = client
        self.documents = documents or LarkDocuments(client)
        self.clock = clock

    def plan(self, workspace_id: str, revision: int) -> ReportDocument:
        """Ask for `revision` to be shown by the workspace's document (made on the first)."""
        now = self.clock()
        with transaction(self.engine) as conn:
            workspace = workspace_store.require(conn, workspace_id)
            presentation = presentation_of(conn, workspace_id, self.settings)
            prefix = translations(Domain.CHAT, presentation.locale).gettext("Incident report")
            chats = workspace_store.chats_of(conn, workspace_id)
            return report_documents.plan(
                conn,
                workspace_id=workspace_id,
                folder_token=self.settings.report_folder_token,
                title=document_title(workspace.title, workspace_id, prefix),
                chat_id=chats[0] if chats else None,
                target_revision=revision,
                now=now,
            )

    def publish(self, workspace_id: str) -> PublishOutcome:
        """Create, empty, write and announce as far as needed; Lark's errors propagate (the
        caller's retry policy and the next sensor tick try again from the recorded step)."""
        outcome = PublishOutcome(workspace_id, None, None, None)
        for _ in range(MAX_STEPS):
            with connection(self.engine) as conn:
                row = report_documents.get(conn, workspace_id)
            if row is None:
                return outcome
            outcome = replace(
                outcome,
                document_id=row.document_id,
                document_url=row.document_url,
                written_revision=row.written_revision,
            )
            if row.document_id is None:
                outcome = self._create(row, outcome)
            elif not row.up_to_date and row.cleared_for_revision != row.target_revision:
                self._empty(row)
            elif not row.up_to_date:
                outcome = self._write(row, outcome)
            elif row.reply_pending:
                outcome = self._reply(row, outcome)
            else:
                return outcome
        return outcome

    def retire(self, document: ReportDocument) -> bool:
        """Delete in Lark the document of a workspace whose reports aged out, then mark its row
        deleted (the lifecycle purges it later). A document already gone in Lark is fine; a
        legal hold reaching the documents' descriptor keeps it (docs/report.md, "Retention and
        holds")."""
        with connection(self.engine) as conn:
            if hold_gate.holds_on(conn, report_documents.DESCRIPTOR.key, document.workspace_id):
                return False
        if document.document_id is not None:
            self.documents.delete_file(document.document_id)
        moved = self._move(document, state="deleted", deleted_at=self.clock())
        if moved is not None:
            log.info("report.document.retired", workspace_id=document.workspace_id)
        return moved is not None

    def retire_orphans(self, *, limit: int = 100) -> int:
        with connection(self.engine) as conn:
            found = report_documents.orphaned(conn, limit=limit)
        return sum(self.retire(document) for document in found)

    # --- steps ---------------------------------------------------------------------------------

    def _move(self, row: ReportDocument, **values: object) -> ReportDocument | None:
        with transaction(self.engine) as conn:
            return report_documents.move(conn, row, updated_at=self.clock(), **values)

    def _create(self, row: ReportDocument, outcome: PublishOutcome) -> PublishOutcome:
        if row.create_started_at is not None:
            for found in self.documents.list_folder(row.folder_token):
                if found.name == row.title and found.type == "docx":
                    url = found.url or self._url(found.token)
                    if self._move(row, document_id=found.token, document_url=url):
                        log.info("report.document.adopted", workspace_id=row.workspace_id)
                        return replace(outcome, adopted=True)
                    return outcome
        started = self._move(row, create_started_at=self.clock())
        if started is None:
            return outcome
        created = self.documents.create_document(row.folder_token, row.title)
        moved = self._move(
            started, document_id=created.document_id, document_url=self._url(created.document_id)
        )
        if moved is not None:
            log.info(
                "report.document.created",
                workspace_id=row.workspace_id,
                document_id=created.document_id,
            )
        return replace(outcome, created=True)

    def _empty(self, row: ReportDocument) -> None:
        assert row.document_id is not None
        children = self.documents.root_children(row.document_id)
        if children:
            self.documents.delete_children(
                row.document_id,
                row.document_id,
                0,
                len(children),
                client_token=_token("clear", row.document_id, row.target_revision),
            )
        self._move(row, cleared_for_revision=row.target_revision)

    def _write(self, row: ReportDocument, outcome: PublishOutcome) -> PublishOutcome:
        assert row.document_id is not None
        with connection(self.engine) as conn:
            report = incident_reports.get(conn, row.workspace_id, row.target_revision)
        if report is None:  # purged under the plan: nothing left to show
            self._move(row, written_revision=row.target_revision)
            return outcome
        converted = self.documents.convert_markdown(report.markdown)
        self.documents.insert_descendants(
            row.document_id,
            row.document_id,
            converted.first_level_block_ids,
            converted.blocks,
            index=0,
            client_token=_token("write", row.document_id, row.target_revision),
        )
        moved = self._move(
            row, written_revision=row.target_revision, attempt_count=0, last_error=None
        )
        if moved is not None:
            log.info(
                "report.document.written",
                workspace_id=row.workspace_id,
                document_id=row.document_id,
                revision=row.target_revision,
            )
        return replace(outcome, wrote=True, written_revision=row.target_revision)

    def _reply(self, row: ReportDocument, outcome: PublishOutcome) -> PublishOutcome:
        assert row.chat_id is not None
        assert row.document_id is not None
        if row.reply_uuid is None:
            reply_uuid = str(uuid.uuid5(_REPLY_NAMESPACE, f"{row.workspace_id}:{row.document_id}"))
            moved = self._move(row, reply_uuid=reply_uuid)
            if moved is None:
                return outcome
            row = moved
        assert row.reply_uuid is not None
        assert row.chat_id is not None
        with connection(self.engine) as conn:
            presentation = presentation_of(conn, row.workspace_id, self.settings)
        text = (
            translations(Domain.CHAT, presentation.locale)
            .gettext("The incident report is ready: {url}")
            .format(url=row.document_url or row.document_id)
        )
        message_id = self.client.send_message(
            row.chat_id, msg_type="text", content={"text": text}, idempotency_uuid=row.reply_uuid
        )
        if self._move(row, reply_message_id=message_id) is not None:
            log.info("report.document.announced", workspace_id=row.workspace_id)
        return replace(outcome, replied=True)

    def _url(self, document_id: str) -> str:
        return f"{self.settings.report_document_url_base}{document_id}"


def _token(step: str, document_id: str, revision: int) -> str:
    """A write's client token: the same step of the same revision of the same document asks
    Lark for the same write."""
    return str(uuid.uuid5(_REPLY_NAMESPACE, f"{step}:{document_id}:{revision}"))
