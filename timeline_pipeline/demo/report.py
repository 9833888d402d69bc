"""The demo's last step: the incident closes and its report goes to Lark Docs (docs/report.md).

The commander sets the workspace `recovered`; the report is built from the timeline as it now
stands (`ReportService`, a new revision), and the document publisher writes it into a Lark Doc in
the local Lark's report folder (create, Lark's own Markdown conversion, one descendant insert)
and posts its link once into the chat. The document is then read back through Lark's
`raw_content`, as a reader would see it, and the chat's reply is looked up in the local Lark.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from timeline_pipeline.db.engine import transaction
from timeline_pipeline.demo.live import ChatStep, local_lark
from timeline_pipeline.lark.client_factory import build_client
from timeline_pipeline.lark.documents import LarkDocuments
from timeline_pipeline.lark.simulator.store import ChatStore
from timeline_pipeline.report.publisher import DocumentPublisher
from timeline_pipeline.report.service import ReportService, Trigger
from timeline_pipeline.store import workspaces

CLOSED_STATUS = "recovered"


@dataclass
class ReportDemoResult:
    revision: int | None = None
    new_revision: bool = False
    document_id: str | None = None
    document_url: str | None = None
    document_created: bool = False
    documents_in_folder: int = 0
    """Documents in the report folder of the local Lark after the publish: one."""
    document_text: str = ""
    """The document as Lark's `raw_content` answers it."""
    replies: int = 0
    """The app's messages in the chat that carry the document's link: one."""
    reply: str = ""


def _text_of(message: dict[str, object]) -> str:
    body = message.get("body")
    content = body.get("content") if isinstance(body, dict) else None
    try:
        parsed = json.loads(content) if isinstance(content, str) else {}
    except ValueError:
        return ""
    text = parsed.get("text") if isinstance(parsed, dict) else None
    return text if isinstance(text, str) else ""


def _replies_with(store: ChatStore, chat_id: str, url: str) -> list[str]:
    """The texts of the app's text messages in the chat that carry `url`."""
    found: list[str] = []
    for message in store.messages(chat_id):
        sender = message.get("sender") or {}
        if sender.get("sender_type") != "app" or message.get("msg_type") != "text":
            continue
        text = _text_of(message)
        if url in text:
            found.append(text)
    return found


def report_from_chat(step: ChatStep, chat_id: str, *, actor: str) -> ReportDemoResult:
    engine, settings, store, workspace_id, progress = step
    result = ReportDemoResult()
    with transaction(engine) as conn:
        workspaces.set_status(conn, workspace_id, CLOSED_STATUS, actor=actor)
    progress(f"report: the commander sets workspace {workspace_id} {CLOSED_STATUS}")
    built = ReportService(engine, settings.timeline).build(
        workspace_id, actor=actor, trigger=Trigger.MANUAL
    )
    result.revision = built.report.revision
    result.new_revision = built.created
    durations = built.report.content.get("durations") or {}
    progress(
        f"report: revision {built.report.revision} built "
        f"({'new' if built.created else 'unchanged'}; time to resolve "
        f"{durations.get('time_to_resolve')} s)"
    )
    folder = settings.timeline.report_folder_token
    with local_lark(store, settings.runtime) as (lark, live):
        client = build_client(settings.timeline, live)
        publisher = DocumentPublisher(engine, settings.timeline, client)
        publisher.plan(workspace_id, built.report.revision)
        outcome = publisher.publish(workspace_id)
        result.document_id = outcome.document_id
        result.document_url = outcome.document_url
        result.document_created = outcome.created
        result.documents_in_folder = len(lark.state.documents.folder_files(folder))
        if outcome.document_id is not None:
            result.document_text = LarkDocuments(client).raw_content(outcome.document_id)
    if result.document_url:
        replies = _replies_with(store, chat_id, result.document_url)
        result.replies = len(replies)
        result.reply = replies[0] if replies else ""
    progress(
        f"report: Lark document {result.document_id} in folder {folder} shows revision "
        f"{outcome.written_revision}; {result.replies} reply with its link in the chat"
    )
    return result
