"""Lark Docs (docx v1), Drive and Tasks (task v2): where an incident report and its follow-ups go.

Every call goes through lark-oapi's request builders and `LarkClient.call`, so retries, the tenant
token's refresh, the per-app rate limit and the typed errors are the ones the history calls use
(docs/design.md §9, §11). What Docs adds on top is its own limit: Lark takes about three edits a
second on one document and answers 429 beyond, so every write to a document first takes a slot
of that document's limiter, for each attempt a retry makes too. A write carries a `client_token`
so that a retry after a lost answer returns the first result instead of writing twice.

Logs carry ids and counts only, never a title, Markdown, block or task text (docs/design.md §10).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import structlog
from lark_oapi.api.docx.v1 import (
    BatchDeleteDocumentBlockChildrenRequest,
    BatchDeleteDocumentBlockChildrenRequestBody,
    Block,
    ConvertDocumentRequest,
    ConvertDocumentRequestBody,
    CreateDocumentBlockDescendantRequest,
    CreateDocumentBlockDescendantRequestBody,
    CreateDocumentRequest,
    CreateDocumentRequestBody,
    GetDocumentBlockRequest,
    RawContentDocumentRequest,
)
from lark_oapi.api.drive.v1 import DeleteFileRequest, ListFileRequest
from lark_oapi.api.task.v2 import CreateTaskRequest, Href, I18nText, InputTask, Origin

from timeline_pipeline.lark.client import LarkApiError, LarkClient
from timeline_pipeline.lark.rate_limit import RateLimiter

log = structlog.get_logger(__name__)

DOCUMENT_WRITES_PER_SECOND: Final = 3
"""Lark's edit limit on one document; beyond it Lark answers HTTP 429, code 99991400."""

LATEST_REVISION: Final = -1
"""`document_revision_id=-1`: write onto whatever the document's latest revision is."""

BLOCK_TYPE_TABLE: Final = 31
FOLDER_PAGE_SIZE: Final = 200
"""The largest page Drive's folder listing serves."""

GONE_FILE_CODES: Final = frozenset({1061003, 1061007})
"""Drive's "not found" and "file has been deleted": a purge that meets them has nothing to do."""

TASK_ORIGIN_NAME: Final = {"en_us": "Incident timeline", "zh_cn": "事件时间线"}
"""What Lark's task page names as the task's source; Lark requires it whenever a link is set."""

_MAX_TRACKED_DOCUMENTS: Final = 1024
_TRANSPORT_CODE: Final = -1


@dataclass(frozen=True)
class CreatedDocument:
    document_id: str
    revision_id: int
    title: str


@dataclass(frozen=True)
class ConvertedBlocks:
    """Lark's conversion of Markdown: the top-level block ids in order and every block as Lark
    returned it (temporary ids), ready for `insert_descendants`."""

    first_level_block_ids: list[str]
    blocks: list[dict[str, Any]]


@dataclass(frozen=True)
class FolderFile:
    token: str
    name: str
    type: str
    url: str


@dataclass(frozen=True)
class CreatedTask:
    guid: str
    url: str


_LIMITERS: OrderedDict[str, RateLimiter] = OrderedDict()
_LIMITERS_LOCK = threading.Lock()


def document_write_limiter(document_id: str) -> RateLimiter:
    """The process's one limiter for writes to `document_id`, since Lark counts edits per
    document whichever client makes them. Only recently written documents are kept: a limiter
    dropped after a second of silence has nothing left to enforce."""
    with _LIMITERS_LOCK:
        limiter = _LIMITERS.get(document_id)
        if limiter is None:
            limiter = RateLimiter([(DOCUMENT_WRITES_PER_SECOND, 1.0)])
            _LIMITERS[document_id] = limiter
            while len(_LIMITERS) > _MAX_TRACKED_DOCUMENTS:
                _LIMITERS.popitem(last=False)
        else:
            _LIMITERS.move_to_end(document_id)
        return limiter


def without_merge_info(block: Mapping[str, Any]) -> dict[str, Any]:
    """A converted block as the insert accepts it: Lark returns a table's read-only
    `table.property.merge_info` from the conversion and refuses it on the way back in."""
    copied = dict(block)
    table = copied.get("table")
    if isinstance(table, dict) and isinstance(table.get("property"), dict):
        prop = {k: v for k, v in table["property"].items() if k != "merge_info"}
        copied["table"] = {**table, "property": prop}
    return copied


def _data(reply: Mapping[str, Any]) -> dict[str, Any]:
    data = reply.get("data")
    return data if isinstance(data, dict) else {}


def _malformed(op: str, what: str) -> LarkApiError:
    return LarkApiError(_TRANSPORT_CODE, what, http_status=200, operation=op)


def _revision(reply: Mapping[str, Any], op: str) -> int:
    revision = _data(reply).get("document_revision_id")
    if not isinstance(revision, int) or isinstance(revision, bool):
        raise _malformed(op, "answer carried no document_revision_id")
    return revision


def _str_list(value: Any) -> list[str] | None:
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return list(value)
    return None


class LarkDocuments:
    """Docs, Drive and Tasks calls over one `LarkClient`.

    `write_limiter` gives the limiter of a document's writes; the default shares one per
    document across the process (`document_write_limiter`).
    """

    def __init__(
        self,
        client: LarkClient,
        *,
        write_limiter: Callable[[str], RateLimiter] = document_write_limiter,
    ) -> None:
        self._client = client
        self._write_limiter = write_limiter

    # ---------------------------------------------------------------- documents

    def create_document(self, folder_token: str | None, title: str) -> CreatedDocument:
        """A new empty document in `folder_token` (the app's own space when None).

        A folder Lark does not know or does not let the app create in raises
        `LarkPermissionError`: a setting to fix, not a moment to wait out. Creating is not
        idempotent in Lark; a create whose answer was lost is found again with `list_folder`.
        """
        body = CreateDocumentRequestBody.builder().title(title)
        if folder_token:
            body = body.folder_token(folder_token)
        request = CreateDocumentRequest.builder().request_body(body.build()).build()
        reply = self._client.call(
            "create_document",
            lambda: self._client.sdk.docx.v1.document.create(request),
            {"folder_token": folder_token or ""},
            idempotent=False,
        )
        document = _data(reply).get("document")
        document = document if isinstance(document, dict) else {}
        document_id = document.get("document_id")
        revision = document.get("revision_id")
        if not isinstance(document_id, str) or not document_id or not isinstance(revision, int):
            raise _malformed("create_document", "answer carried no document")
        log.info("lark.document.created", document_id=document_id, revision_id=revision)
        return CreatedDocument(document_id, revision, str(document.get("title") or title))

    def convert_markdown(self, markdown: str) -> ConvertedBlocks:
        """Lark's own Markdown conversion, so the document reads as Lark renders Markdown; table
        blocks come back without their read-only `merge_info` (`without_merge_info`)."""
        body = ConvertDocumentRequestBody.builder().content_type("markdown").content(markdown)
        request = ConvertDocumentRequest.builder().request_body(body.build()).build()
        reply = self._client.call(
            "convert_markdown",
            lambda: self._client.sdk.docx.v1.document.convert(request),
            {"chars": str(len(markdown))},
        )
        data = _data(reply)
        first = _str_list(data.get("first_level_block_ids"))
        raw_blocks = data.get("blocks")
        if first is None or not isinstance(raw_blocks, list):
            raise _malformed("convert_markdown", "answer carried no blocks")
        blocks = [without_merge_info(b) for b in raw_blocks if isinstance(b, dict)]
        if len(blocks) != len(raw_blocks):
            raise _malformed("convert_markdown", "answer carried a block that is not an object")
        return ConvertedBlocks(first, blocks)

    def insert_descendants(
        self,
        document_id: str,
        block_id: str,
        children_id: list[str],
        descendants: list[dict[str, Any]],
        *,
        index: int,
        client_token: str,
    ) -> int:
        """Insert a block tree under `block_id` (the document id for the page itself) at
        `index`, in one write; return the document's new revision id.

        `client_token` (a UUID, as Lark's examples use) makes a retried insert land once: Lark
        answers a repeat with the first insert's result.
        """
        body = (
            CreateDocumentBlockDescendantRequestBody.builder()
            .children_id(list(children_id))
            .index(index)
            .descendants([Block(without_merge_info(block)) for block in descendants])
            .build()
        )
        return self._write_blocks(
            "insert_descendants",
            CreateDocumentBlockDescendantRequest.builder(),
            body,
            lambda request: self._client.sdk.docx.v1.document_block_descendant.create(request),
            document_id=document_id,
            block_id=block_id,
            client_token=client_token,
            ids={"blocks": str(len(descendants))},
            logged=("lark.document.blocks_inserted", "blocks", len(descendants)),
        )

    def root_children(self, document_id: str) -> list[str]:
        """The ids of the page's top-level blocks, in order: what a rewrite of the document
        deletes (`delete_children` on the page) before inserting the new report."""
        request = (
            GetDocumentBlockRequest.builder()
            .document_id(document_id)
            .block_id(document_id)
            .document_revision_id(LATEST_REVISION)
            .build()
        )
        reply = self._client.call(
            "root_children",
            lambda: self._client.sdk.docx.v1.document_block.get(request),
            {"document_id": document_id},
        )
        block = _data(reply).get("block")
        children = _str_list(block.get("children", [])) if isinstance(block, dict) else None
        if children is None:
            raise _malformed("root_children", "answer carried no page block")
        return children

    def delete_children(
        self,
        document_id: str,
        block_id: str,
        start_index: int,
        end_index: int,
        *,
        client_token: str,
    ) -> int:
        """Delete the children of `block_id` in [start_index, end_index) with their subtrees;
        return the new revision id. The `client_token` keeps a retry from deleting the next
        blocks that moved into the same positions."""
        body = (
            BatchDeleteDocumentBlockChildrenRequestBody.builder()
            .start_index(start_index)
            .end_index(end_index)
            .build()
        )
        return self._write_blocks(
            "delete_children",
            BatchDeleteDocumentBlockChildrenRequest.builder(),
            body,
            lambda request: self._client.sdk.docx.v1.document_block_children.batch_delete(request),
            document_id=document_id,
            block_id=block_id,
            client_token=client_token,
            ids={"start": str(start_index), "end": str(end_index)},
            logged=("lark.document.blocks_deleted", "count", end_index - start_index),
        )

    def raw_content(self, document_id: str) -> str:
        """The document as plain text, as Lark renders it: how a check reads back what a write
        left, without walking the block tree."""
        request = RawContentDocumentRequest.builder().document_id(document_id).build()
        reply = self._client.call(
            "raw_content",
            lambda: self._client.sdk.docx.v1.document.raw_content(request),
            {"document_id": document_id},
        )
        content = _data(reply).get("content")
        if not isinstance(content, str):
            raise _malformed("raw_content", "answer carried no content")
        return content

    # -------------------------------------------------------------------- drive

    def list_folder(self, folder_token: str) -> list[FolderFile]:
        """Every file of a folder, all pages followed: how a document whose create answer was
        lost in a crash is found again instead of created twice."""
        files: list[FolderFile] = []
        page_token: str | None = None
        seen: set[str] = set()
        page = 0
        while True:
            page += 1
            builder = ListFileRequest.builder().folder_token(folder_token)
            builder = builder.page_size(FOLDER_PAGE_SIZE)
            if page_token:
                builder = builder.page_token(page_token)
            request = builder.build()

            def send(request: ListFileRequest = request) -> Any:
                return self._client.sdk.drive.v1.file.list(request)

            reply = self._client.call(
                "list_folder", send, {"folder_token": folder_token, "page": str(page)}
            )
            data = _data(reply)
            for item in data.get("files") or []:
                if isinstance(item, dict) and isinstance(item.get("token"), str):
                    files.append(
                        FolderFile(
                            token=item["token"],
                            name=str(item.get("name") or ""),
                            type=str(item.get("type") or ""),
                            url=str(item.get("url") or ""),
                        )
                    )
            next_token = data.get("next_page_token") or None
            if not data.get("has_more"):
                break
            if not isinstance(next_token, str) or next_token in seen:
                raise _malformed("list_folder", "has_more without a fresh page_token")
            seen.add(next_token)
            page_token = next_token
        log.info("lark.folder.listed", folder_token=folder_token, files=len(files), pages=page)
        return files

    def delete_file(self, file_token: str, file_type: str = "docx") -> bool:
        """Delete a Drive file (the retention purge of a report document); False when Lark
        says it is already gone, so a purge retried after a lost answer still completes."""
        request = DeleteFileRequest.builder().file_token(file_token).type(file_type).build()
        try:
            self._client.call(
                "delete_file",
                lambda: self._client.sdk.drive.v1.file.delete(request),
                {"file_token": file_token, "type": file_type},
            )
        except LarkApiError as exc:
            if exc.code in GONE_FILE_CODES:
                log.info("lark.file.already_gone", file_token=file_token, lark_code=exc.code)
                return False
            raise
        log.info("lark.file.deleted", file_token=file_token, type=file_type)
        return True

    # -------------------------------------------------------------------- tasks

    def create_task(
        self, summary: str, description: str, *, client_token: str, link_url: str | None
    ) -> CreatedTask:
        """A Lark task, once per `client_token`: Lark answers a repeat with the task the token
        first created. The link goes both into the task's origin, which Lark shows as the
        task's source, and at the end of the description, which every Lark client shows."""
        builder = InputTask.builder().summary(summary).client_token(client_token)
        if link_url:
            if link_url not in description:
                description = f"{description}\n\n{link_url}" if description else link_url
            name = I18nText.builder().en_us(TASK_ORIGIN_NAME["en_us"])
            name = name.zh_cn(TASK_ORIGIN_NAME["zh_cn"])
            origin = (
                Origin.builder()
                .platform_i18n_name(name.build())
                .href(Href.builder().url(link_url).build())
                .build()
            )
            builder = builder.origin(origin)
        if description:
            builder = builder.description(description)
        request = CreateTaskRequest.builder().request_body(builder.build()).build()
        reply = self._client.call(
            "create_task",
            lambda: self._client.sdk.task.v2.task.create(request),
            {"client_token": client_token},
        )
        task = _data(reply).get("task")
        task = task if isinstance(task, dict) else {}
        guid, url = task.get("guid"), task.get("url")
        if not isinstance(guid, str) or not guid:
            raise _malformed("create_task", "answer carried no task guid")
        log.info("lark.task.created", task_guid=guid)
        return CreatedTask(guid, url if isinstance(url, str) else "")

    # ----------------------------------------------------------------- plumbing

    def _write_blocks(
        self,
        op: str,
        request_builder: Any,
        body: Any,
        send: Callable[[Any], Any],
        *,
        document_id: str,
        block_id: str,
        client_token: str,
        ids: dict[str, str],
        logged: tuple[str, str, int],
    ) -> int:
        """A write to the blocks under `block_id`: its request (onto the latest revision, with
        the retry's `client_token`), sent through `_write`; log `logged` (event, count's name,
        count) with the new revision id and return it."""
        request = (
            request_builder.document_id(document_id)
            .block_id(block_id)
            .document_revision_id(LATEST_REVISION)
            .client_token(client_token)
            .request_body(body)
            .build()
        )
        reply = self._write(op, document_id, lambda: send(request), {"block_id": block_id, **ids})
        revision = _revision(reply, op)
        event, count_name, count = logged
        log.info(
            event,
            document_id=document_id,
            block_id=block_id,
            **{count_name: count},
            revision_id=revision,
        )
        return revision

    def _write(
        self, op: str, document_id: str, send: Callable[[], Any], ids: dict[str, str]
    ) -> dict[str, Any]:
        """A write to one document: each attempt holds a slot of the document's limiter from
        its send until its answer plus a second, so no second of Lark's sees a fourth edit."""
        limiter = self._write_limiter(document_id)

        def limited() -> Any:
            with limiter.hold():
                return send()

        return self._client.call(op, limited, {"document_id": document_id, **ids})
