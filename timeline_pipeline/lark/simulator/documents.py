"""Lark Docs (docx v1), Drive and Tasks (task v2) in the local Lark.

The incident report is written as a Lark Doc and its follow-ups as Lark tasks (lark/documents.py);
this is what the product's real client talks to in tests and the demo. What the client has to get
right is emulated on purpose, in Lark's envelope, codes and statuses (docs/design.md §11):

- Markdown is really converted into Lark's blocks, tables with the read-only `merge_info` that
  the insert then refuses, so a client that forgets to remove it fails here as it would there;
- a block write remembers its `client_token` per document and operation, so a retry after a
  lost answer returns the first result and writes nothing (`fail_next(..., after_apply=True)`
  loses an answer on purpose);
- one document takes 3 writes a second and answers HTTP 429, code 99991400, beyond;
- a folder Lark does not know, or one the app may not create in, refuses the create;
- a task's `client_token` gives back the task it first created.

Tests read the state through `DocumentsState`'s hooks (`document`, `raw_text`, `write_count`,
`rate_limited_count`, `folder_files`, `tasks`), reached as `SimulatorServer.state.documents`;
`fail_next` fails a route's next calls, `hold_next` keeps them waiting (a client can be killed
while its write is in flight) and `holding` counts the calls waiting.
"""

from __future__ import annotations

import asyncio
import copy
import math
import secrets
import string
import threading
import time
import uuid
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

# markdown-it-py arrives with rich (a Dagster dependency); the product itself never parses Markdown.
from markdown_it import MarkdownIt
from markdown_it.tree import SyntaxTreeNode

from timeline_pipeline.lark.simulator.envelope import (
    LarkError,
    json_object_body,
    lark_reply,
    rate_limited,
)

ROUTE_CREATE_DOCUMENT: Final = "POST /open-apis/docx/v1/documents"
ROUTE_CONVERT: Final = "POST /open-apis/docx/v1/documents/blocks/convert"
ROUTE_INSERT_DESCENDANTS: Final = (
    "POST /open-apis/docx/v1/documents/{document_id}/blocks/{block_id}/descendant"
)
ROUTE_GET_BLOCK: Final = "GET /open-apis/docx/v1/documents/{document_id}/blocks/{block_id}"
ROUTE_DELETE_CHILDREN: Final = (
    "DELETE /open-apis/docx/v1/documents/{document_id}/blocks/{block_id}/children/batch_delete"
)
ROUTE_RAW_CONTENT: Final = "GET /open-apis/docx/v1/documents/{document_id}/raw_content"
ROUTE_LIST_FILES: Final = "GET /open-apis/drive/v1/files"
ROUTE_DELETE_FILE: Final = "DELETE /open-apis/drive/v1/files/{file_token}"
ROUTE_CREATE_TASK: Final = "POST /open-apis/task/v2/tasks"

CODE_DOCX_INVALID_PARAM: Final = 1770001
CODE_DOCX_NOT_FOUND: Final = 1770002
CODE_DOCX_BLOCK_NOT_CREATABLE: Final = 1770029
CODE_DOCX_FORBIDDEN: Final = 1770032
CODE_DOCX_FOLDER_NOT_FOUND: Final = 1770039
CODE_DOCX_NO_FOLDER_PERMISSION: Final = 1770040
CODE_DOCX_SERVER_ERROR: Final = 1771001
CODE_DRIVE_PARAMS_ERROR: Final = 1061002
CODE_DRIVE_NOT_FOUND: Final = 1061003
CODE_DRIVE_FORBIDDEN: Final = 1061004
CODE_DRIVE_FILE_DELETED: Final = 1061007
CODE_TASK_INVALID_PARAM: Final = 1470400

DEFAULT_DOC_BASE_URL: Final = "https://example.feishu.cn"
DEFAULT_TASK_URL_BASE: Final = "https://applink.feishu.cn/client/todo/detail"
DEFAULT_FOLDER_TOKEN: Final = "fldsimreports0000000000000001"  # noqa: S105 - a folder id
DOCUMENT_WRITES_PER_SECOND: Final = 3
MAX_TITLE_CHARS: Final = 800
MAX_TASK_TEXT_CHARS: Final = 3000
DEFAULT_FOLDER_PAGE_SIZE: Final = 100
MAX_FOLDER_PAGE_SIZE: Final = 200
DEFAULT_COLUMN_WIDTH: Final = 100
FILE_TYPES: Final = frozenset(
    {"file", "docx", "bitable", "folder", "doc", "sheet", "mindnote", "shortcut", "slides"}
)

BLOCK_PAGE: Final = 1
BLOCK_TEXT: Final = 2
BLOCK_BULLET: Final = 12
BLOCK_ORDERED: Final = 13
BLOCK_CODE: Final = 14
BLOCK_QUOTE: Final = 15
BLOCK_DIVIDER: Final = 22
BLOCK_TABLE: Final = 31
BLOCK_TABLE_CELL: Final = 32

BODY_KEYS: Final[Mapping[int, str]] = {
    BLOCK_PAGE: "page",
    BLOCK_TEXT: "text",
    **{2 + level: f"heading{level}" for level in range(1, 10)},
    BLOCK_BULLET: "bullet",
    BLOCK_ORDERED: "ordered",
    BLOCK_CODE: "code",
    BLOCK_QUOTE: "quote",
    17: "todo",
    BLOCK_DIVIDER: "divider",
    BLOCK_TABLE: "table",
    BLOCK_TABLE_CELL: "table_cell",
    34: "quote_container",
}
"""Block type -> the key of its body, for the types the simulator writes and reads."""

TEXT_TYPES: Final = frozenset({BLOCK_PAGE, BLOCK_TEXT, *range(3, 12), 12, 13, 14, 15, 17})
"""Types whose body is `{elements, style}`: the ones `raw_content` reads text from."""

CODE_LANGUAGE_PLAIN_TEXT: Final = 1

_ID_ALPHABET: Final = string.ascii_letters + string.digits
_MARKDOWN: Final = MarkdownIt("commonmark").enable("table").enable("strikethrough")


def _invalid(msg: str) -> LarkError:
    return LarkError(CODE_DOCX_INVALID_PARAM, msg)


def _lark_id(prefix: str) -> str:
    return prefix + "".join(secrets.choice(_ID_ALPHABET) for _ in range(22))


# ------------------------------------------------------------------------ Markdown -> blocks


@dataclass(frozen=True)
class _Style:
    bold: bool = False
    italic: bool = False
    strikethrough: bool = False
    inline_code: bool = False
    link: str | None = None


def text_run(content: str, style: _Style = _Style()) -> dict[str, Any]:
    """One text element as Lark writes it: every style flag spelled out, a link only if set."""
    element_style: dict[str, Any] = {
        "bold": style.bold,
        "inline_code": style.inline_code,
        "italic": style.italic,
        "strikethrough": style.strikethrough,
        "underline": False,
    }
    if style.link:
        element_style["link"] = {"url": style.link}
    return {"text_run": {"content": content, "text_element_style": element_style}}


class _MarkdownBlocks:
    """CommonMark plus pipe tables (markdown-it-py) to Lark blocks, parents before children."""

    def __init__(self, new_id: Callable[[], str]) -> None:
        self._new_id = new_id
        self.blocks: list[dict[str, Any]] = []

    def convert(self, markdown: str) -> list[str]:
        return self._nodes(SyntaxTreeNode(_MARKDOWN.parse(markdown)).children)

    def _nodes(self, nodes: Iterable[SyntaxTreeNode]) -> list[str]:
        ids: list[str] = []
        for node in nodes:
            ids.extend(self._node(node))
        return ids

    def _add(self, block_type: int, body: dict[str, Any]) -> dict[str, Any]:
        block = {"block_id": self._new_id(), "block_type": block_type, BODY_KEYS[block_type]: body}
        self.blocks.append(block)
        return block

    def _text_block(self, block_type: int, inline: SyntaxTreeNode | None) -> dict[str, Any]:
        elements = self._elements(inline) if inline is not None else []
        return self._add(block_type, {"elements": elements, "style": {}})

    def _node(self, node: SyntaxTreeNode) -> list[str]:
        kind = node.type
        if kind == "heading":
            level = int(node.tag[1:])
            return [self._text_block(2 + level, _inline_of(node))["block_id"]]
        if kind == "paragraph":
            return [self._text_block(BLOCK_TEXT, _inline_of(node))["block_id"]]
        if kind in ("bullet_list", "ordered_list"):
            block_type = BLOCK_BULLET if kind == "bullet_list" else BLOCK_ORDERED
            return [self._list_item(block_type, item) for item in node.children]
        if kind == "blockquote":
            ids: list[str] = []
            for child in node.children:
                if child.type == "paragraph":
                    ids.append(self._text_block(BLOCK_QUOTE, _inline_of(child))["block_id"])
                else:
                    ids.extend(self._node(child))
            return ids
        if kind in ("fence", "code_block"):
            body = {
                "elements": [text_run(node.content.rstrip("\n"))],
                "style": {"language": CODE_LANGUAGE_PLAIN_TEXT, "wrap": False},
            }
            return [self._add(BLOCK_CODE, body)["block_id"]]
        if kind == "hr":
            return [self._add(BLOCK_DIVIDER, {})["block_id"]]
        if kind == "table":
            return [self._table(node)]
        if kind == "html_block" and node.content.strip():
            body = {"elements": [text_run(node.content.strip())], "style": {}}
            return [self._add(BLOCK_TEXT, body)["block_id"]]
        return []

    def _list_item(self, block_type: int, item: SyntaxTreeNode) -> str:
        children = list(item.children)
        first = children.pop(0) if children and children[0].type == "paragraph" else None
        block = self._text_block(block_type, _inline_of(first) if first is not None else None)
        nested = self._nodes(children)
        if nested:
            block["children"] = nested
        return str(block["block_id"])

    def _table(self, node: SyntaxTreeNode) -> str:
        rows = [
            row
            for section in node.children
            for row in section.children
            if section.type in ("thead", "tbody") and row.type == "tr"
        ]
        columns = max((len(row.children) for row in rows), default=0)
        table = self._add(BLOCK_TABLE, {})
        cells: list[str] = []
        for row in rows:
            row_cells = list(row.children)
            for column in range(columns):
                cell = self._add(BLOCK_TABLE_CELL, {})
                source = row_cells[column] if column < len(row_cells) else None
                text = self._text_block(BLOCK_TEXT, _inline_of(source) if source else None)
                cell["children"] = [text["block_id"]]
                cells.append(cell["block_id"])
        table["children"] = cells
        table["table"] = {
            "cells": list(cells),
            "property": {
                "row_size": len(rows),
                "column_size": columns,
                "column_width": [DEFAULT_COLUMN_WIDTH] * columns,
                "header_row": any(section.type == "thead" for section in node.children),
                # Read-only: Lark returns it from the conversion and refuses it on insert.
                "merge_info": [{"row_span": 1, "col_span": 1} for _ in cells],
            },
        }
        return str(table["block_id"])

    def _elements(self, inline: SyntaxTreeNode) -> list[dict[str, Any]]:
        runs: list[tuple[str, _Style]] = []
        _collect_runs(inline, _Style(), runs)
        merged: list[tuple[str, _Style]] = []
        for content, style in runs:
            if not content:
                continue
            if merged and merged[-1][1] == style:
                merged[-1] = (merged[-1][0] + content, style)
            else:
                merged.append((content, style))
        return [text_run(content, style) for content, style in merged]


def _inline_of(node: SyntaxTreeNode | None) -> SyntaxTreeNode | None:
    if node is None:
        return None
    for child in node.children:
        if child.type == "inline":
            return child
    return None


def _collect_runs(node: SyntaxTreeNode, style: _Style, out: list[tuple[str, _Style]]) -> None:
    for child in node.children:
        kind = child.type
        if kind in ("text", "html_inline"):
            out.append((child.content, style))
        elif kind == "code_inline":
            out.append((child.content, replace(style, inline_code=True)))
        elif kind == "softbreak":
            out.append((" ", style))
        elif kind == "hardbreak":
            out.append(("\n", style))
        elif kind == "strong":
            _collect_runs(child, replace(style, bold=True), out)
        elif kind == "em":
            _collect_runs(child, replace(style, italic=True), out)
        elif kind == "s":
            _collect_runs(child, replace(style, strikethrough=True), out)
        elif kind == "link":
            _collect_runs(child, replace(style, link=str(child.attrs.get("href", ""))), out)
        else:
            # An image's alt text, or anything else that nests inline content.
            _collect_runs(child, style, out)


def markdown_to_blocks(
    markdown: str, new_id: Callable[[], str] = lambda: str(uuid.uuid4())
) -> tuple[list[str], list[dict[str, Any]]]:
    """Lark's `convert` answer for Markdown: the top-level block ids and every block, parents
    before their children, ids temporary (the insert assigns the real ones)."""
    converter = _MarkdownBlocks(new_id)
    first = converter.convert(markdown)
    return first, converter.blocks


# ---------------------------------------------------------------------------------- state


@dataclass
class _Document:
    document_id: str
    title: str
    folder_token: str
    revision_id: int
    created_time: int
    modified_time: int
    blocks: dict[str, dict[str, Any]]
    deleted: bool = False


@dataclass
class _Fault:
    remaining: int
    code: int
    status: int
    after_apply: bool


@dataclass
class _Hold:
    remaining: int
    seconds: float


@dataclass
class _Page:
    folder_token: str
    offset: int


@dataclass
class _Counters:
    writes: int = 0
    rate_limited: int = 0
    arrivals: deque[float] = field(default_factory=deque)


class DocumentsState:
    """Documents with their block trees, folders, tasks and the test hooks that read them.

    `doc_base_url` is the origin of the document links the folder listing serves
    (`{doc_base_url}/docx/{document_id}`). Folders are known by token; `add_folder(...,
    writable=False)` makes one the app may not create in.
    """

    def __init__(
        self,
        *,
        doc_base_url: str = DEFAULT_DOC_BASE_URL,
        task_url_base: str = DEFAULT_TASK_URL_BASE,
        folders: Iterable[str] = (DEFAULT_FOLDER_TOKEN,),
        writes_per_second: int = DOCUMENT_WRITES_PER_SECOND,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.doc_base_url = doc_base_url.rstrip("/")
        self.task_url_base = task_url_base
        self.writes_per_second = writes_per_second
        self._clock = clock
        self._wall_clock = wall_clock
        self._lock = threading.RLock()
        self._folders: dict[str, bool] = {"": True, **dict.fromkeys(folders, True)}
        self._documents: dict[str, _Document] = {}
        self._counters: defaultdict[str, _Counters] = defaultdict(_Counters)
        self._replies: dict[tuple[str, str, str], dict[str, Any]] = {}
        self._tasks: dict[str, dict[str, Any]] = {}
        self._task_by_token: dict[str, str] = {}
        self._pages: dict[str, _Page] = {}
        self._faults: dict[str, _Fault] = {}
        self._holds: dict[str, _Hold] = {}
        self._waiting: defaultdict[str, int] = defaultdict(int)

    # ----------------------------------------------------------------- test hooks

    def add_folder(self, folder_token: str, *, writable: bool = True) -> None:
        """A folder the app can see; `writable=False` refuses creates (1770040) and listings."""
        with self._lock:
            self._folders[folder_token] = writable

    def fail_next(
        self,
        route: str,
        times: int = 1,
        *,
        code: int = CODE_DOCX_SERVER_ERROR,
        status: int = 500,
        after_apply: bool = False,
    ) -> None:
        """Fail the next `times` calls of `route` (a `ROUTE_*` constant) with `code`/`status`;
        `after_apply` does the call's work first and then fails, an answer lost on the way."""
        with self._lock:
            self._faults[route] = _Fault(times, code, status, after_apply)

    def hold_next(self, route: str, seconds: float, times: int = 1) -> None:
        """Keep the next `times` calls of `route` waiting `seconds` before their work, a Lark
        slow to answer; the work is then done as usual, even when the caller has gone (a
        client killed while its write waits leaves Lark to apply it, answering no one)."""
        if seconds <= 0 or times < 1:
            raise ValueError("a hold needs seconds > 0 and times >= 1")
        with self._lock:
            self._holds[route] = _Hold(times, seconds)

    def holding(self, route: str) -> int:
        """Calls of `route` waiting in a hold now."""
        with self._lock:
            return self._waiting[route]

    def document_ids(self) -> list[str]:
        """Documents not deleted, in creation order."""
        with self._lock:
            return [d.document_id for d in self._documents.values() if not d.deleted]

    def document(self, document_id: str) -> dict[str, Any] | None:
        """`{document_id, title, folder_token, revision_id, deleted}`, or None if never made."""
        with self._lock:
            doc = self._documents.get(document_id)
            if doc is None:
                return None
            return {
                "document_id": doc.document_id,
                "title": doc.title,
                "folder_token": doc.folder_token,
                "revision_id": doc.revision_id,
                "deleted": doc.deleted,
            }

    def blocks(self, document_id: str) -> list[dict[str, Any]]:
        """Every block of a document in reading order (page first), as copies."""
        with self._lock:
            doc = self._documents[document_id]
            return [copy.deepcopy(doc.blocks[b]) for b in _walk(doc.blocks, document_id)]

    def raw_text(self, document_id: str) -> str:
        """What `raw_content` answers: each block's text on a line, the title first."""
        with self._lock:
            return _raw_text(self._documents[document_id])

    def write_count(self, document_id: str) -> int:
        """Block writes applied to a document (a replayed `client_token` applies nothing)."""
        with self._lock:
            return self._counters[document_id].writes

    def rate_limited_count(self, document_id: str) -> int:
        """Writes to a document refused with 429 for going over its writes per second."""
        with self._lock:
            return self._counters[document_id].rate_limited

    def folder_files(self, folder_token: str) -> list[dict[str, Any]]:
        """The folder listing's items, as `GET /open-apis/drive/v1/files` serves them."""
        with self._lock:
            return [self._file_item(d) for d in self._in_folder(folder_token)]

    def tasks(self) -> list[dict[str, Any]]:
        """Every task created, in creation order, as the create answered it."""
        with self._lock:
            return [copy.deepcopy(t) for t in self._tasks.values()]

    # ----------------------------------------------------------------- faults

    def take_fault(self, route: str) -> _Fault | None:
        with self._lock:
            fault = self._faults.get(route)
            if fault is None or fault.remaining <= 0:
                return None
            fault.remaining -= 1
            return fault

    async def wait_if_held(self, route: str) -> None:
        """Sleep out a hold set by `hold_next` for this call of `route`, if any."""
        with self._lock:
            hold = self._holds.get(route)
            if hold is None or hold.remaining <= 0:
                return
            hold.remaining -= 1
            self._waiting[route] += 1
        try:
            await asyncio.sleep(hold.seconds)
        finally:
            with self._lock:
                self._waiting[route] -= 1

    # ----------------------------------------------------------------- documents

    def create_document(self, body: Mapping[str, Any]) -> dict[str, Any]:
        folder_token = body.get("folder_token") or ""
        title = body.get("title") or ""
        if not isinstance(folder_token, str) or not isinstance(title, str):
            raise _invalid("folder_token and title must be strings")
        if len(title) > MAX_TITLE_CHARS:
            raise _invalid(f"title must be at most {MAX_TITLE_CHARS} characters")
        with self._lock:
            writable = self._folders.get(folder_token)
            if writable is None:
                raise LarkError(CODE_DOCX_FOLDER_NOT_FOUND, "folder not found")
            if not writable:
                raise LarkError(CODE_DOCX_NO_FOLDER_PERMISSION, "no folder permission", status=403)
            document_id = _lark_id("doxsim")
            now = int(self._wall_clock())
            page = {
                "block_id": document_id,
                "block_type": BLOCK_PAGE,
                "parent_id": "",
                "children": [],
                "page": {
                    "elements": [text_run(title)] if title else [],
                    "style": {"align": 1},
                },
            }
            doc = _Document(document_id, title, folder_token, 1, now, now, {document_id: page})
            self._documents[document_id] = doc
            return {"document": {"document_id": document_id, "revision_id": 1, "title": title}}

    def convert(self, body: Mapping[str, Any]) -> dict[str, Any]:
        content_type, content = body.get("content_type"), body.get("content")
        if content_type != "markdown":
            raise _invalid("only content_type=markdown is simulated")
        if not isinstance(content, str):
            raise _invalid("content must be a string")
        first, blocks = markdown_to_blocks(content)
        return {"first_level_block_ids": first, "blocks": blocks, "block_id_to_image_urls": []}

    def get_block(self, document_id: str, block_id: str) -> dict[str, Any]:
        with self._lock:
            doc = self._live(document_id)
            return {"block": copy.deepcopy(self._block(doc, block_id))}

    def raw_content(self, document_id: str) -> dict[str, Any]:
        with self._lock:
            return {"content": _raw_text(self._live(document_id))}

    def block_write(
        self,
        kind: str,
        document_id: str,
        block_id: str,
        body: Mapping[str, Any],
        params: Mapping[str, str],
    ) -> dict[str, Any]:
        """A write of `kind` (`descendant`, `batch_delete`) to the blocks under `block_id`, as
        Lark answers it: admitted by the document's write limit; a repeated `client_token`
        answered with the first reply; else the write on the latest revision, which it bumps,
        its reply kept for the token's repeats."""
        write = _BLOCK_WRITES[kind]
        with self._lock:
            doc = self._live(document_id)
            self._admit_write(document_id)
            token = params.get("client_token") or ""
            replay = self._replies.get((document_id, kind, token)) if token else None
            if replay is not None:
                return copy.deepcopy(replay)
            _check_revision(doc, params)
            written = write(doc, block_id, self._block(doc, block_id), body)
            reply = {
                **written,
                "document_revision_id": self._bump(doc),
                "client_token": token or str(uuid.uuid4()),
            }
            if token:
                self._replies[(document_id, kind, token)] = copy.deepcopy(reply)
            return reply

    # ----------------------------------------------------------------- drive

    def list_files(self, params: Mapping[str, str]) -> dict[str, Any]:
        raw_size = params.get("page_size") or str(DEFAULT_FOLDER_PAGE_SIZE)
        try:
            size = int(raw_size)
        except ValueError:
            raise LarkError(CODE_DRIVE_PARAMS_ERROR, "page_size must be an integer") from None
        if not 1 <= size <= MAX_FOLDER_PAGE_SIZE:
            raise LarkError(CODE_DRIVE_PARAMS_ERROR, "page_size out of limit")
        folder_token = params.get("folder_token") or ""
        with self._lock:
            writable = self._folders.get(folder_token)
            if writable is None:
                raise LarkError(CODE_DRIVE_NOT_FOUND, "not found.", status=404)
            if not writable:
                raise LarkError(CODE_DRIVE_FORBIDDEN, "forbidden.", status=403)
            offset = 0
            if page_token := params.get("page_token"):
                page = self._pages.get(page_token)
                if page is None or page.folder_token != folder_token:
                    raise LarkError(CODE_DRIVE_PARAMS_ERROR, "page_token is invalid")
                offset = page.offset
            docs = self._in_folder(folder_token)
            chunk = docs[offset : offset + size]
            has_more = offset + size < len(docs)
            data: dict[str, Any] = {
                "files": [self._file_item(d) for d in chunk],
                "has_more": has_more,
            }
            if has_more:
                next_token = secrets.token_urlsafe(12)
                self._pages[next_token] = _Page(folder_token, offset + size)
                data["next_page_token"] = next_token
            return data

    def delete_file(self, file_token: str, params: Mapping[str, str]) -> dict[str, Any]:
        file_type = params.get("type")
        if file_type not in FILE_TYPES:
            raise LarkError(CODE_DRIVE_PARAMS_ERROR, "params error.")
        with self._lock:
            doc = self._documents.get(file_token)
            if doc is None or file_type != "docx":
                raise LarkError(CODE_DRIVE_NOT_FOUND, "not found.", status=404)
            if doc.deleted:
                raise LarkError(CODE_DRIVE_FILE_DELETED, "file has been delete.", status=404)
            doc.deleted = True
            return {}

    # ----------------------------------------------------------------- tasks

    def create_task(self, app_id: str, body: Mapping[str, Any]) -> dict[str, Any]:
        summary = body.get("summary")
        description = body.get("description") or ""
        if not isinstance(summary, str) or not summary.strip():
            raise LarkError(CODE_TASK_INVALID_PARAM, "summary is required")
        if not isinstance(description, str):
            raise LarkError(CODE_TASK_INVALID_PARAM, "description must be a string")
        if max(len(summary), len(description)) > MAX_TASK_TEXT_CHARS:
            raise LarkError(CODE_TASK_INVALID_PARAM, "summary or description is too long")
        origin = body.get("origin")
        if origin is not None and not _valid_origin(origin):
            raise LarkError(
                CODE_TASK_INVALID_PARAM, "origin needs platform_i18n_name and an href url"
            )
        token = body.get("client_token")
        if token is not None and not isinstance(token, str):
            raise LarkError(CODE_TASK_INVALID_PARAM, "client_token must be a string")
        with self._lock:
            if token and token in self._task_by_token:
                return {"task": copy.deepcopy(self._tasks[self._task_by_token[token]])}
            guid = str(uuid.uuid4())
            now_ms = str(int(self._wall_clock() * 1000))
            task: dict[str, Any] = {
                "guid": guid,
                "task_id": f"t{len(self._tasks) + 100001}",
                "summary": summary,
                "description": description,
                "status": "todo",
                "completed_at": "0",
                "created_at": now_ms,
                "updated_at": now_ms,
                "creator": {"id": app_id, "type": "app", "role": "creator"},
                "members": [],
                "mode": 2,
                "is_milestone": False,
                "url": f"{self.task_url_base}?guid={guid}",
            }
            if origin is not None:
                task["origin"] = copy.deepcopy(origin)
            self._tasks[guid] = task
            if token:
                self._task_by_token[token] = guid
            return {"task": copy.deepcopy(task)}

    # ----------------------------------------------------------------- plumbing

    def _live(self, document_id: str) -> _Document:
        doc = self._documents.get(document_id)
        if doc is None or doc.deleted:
            raise LarkError(CODE_DOCX_NOT_FOUND, "not found", status=404)
        return doc

    @staticmethod
    def _block(doc: _Document, block_id: str) -> dict[str, Any]:
        block = doc.blocks.get(block_id)
        if block is None:
            raise LarkError(CODE_DOCX_NOT_FOUND, "block not found", status=404)
        return block

    def _admit_write(self, document_id: str) -> None:
        """Lark's edit limit of one document: a sliding second holds at most N writes."""
        counters = self._counters[document_id]
        now = self._clock()
        while counters.arrivals and counters.arrivals[0] <= now - 1.0:
            counters.arrivals.popleft()
        if len(counters.arrivals) >= self.writes_per_second:
            counters.rate_limited += 1
            raise rate_limited(max(1, math.ceil(counters.arrivals[0] + 1.0 - now)))
        counters.arrivals.append(now)

    def _bump(self, doc: _Document) -> int:
        doc.revision_id += 1
        doc.modified_time = int(self._wall_clock())
        self._counters[doc.document_id].writes += 1
        return doc.revision_id

    def _in_folder(self, folder_token: str) -> list[_Document]:
        return [
            d for d in self._documents.values() if d.folder_token == folder_token and not d.deleted
        ]

    def _file_item(self, doc: _Document) -> dict[str, Any]:
        return {
            "token": doc.document_id,
            "name": doc.title,
            "type": "docx",
            "parent_token": doc.folder_token,
            "url": f"{self.doc_base_url}/docx/{doc.document_id}",
            "created_time": str(doc.created_time),
            "modified_time": str(doc.modified_time),
            "owner_id": "ou_sim_app_owner",
        }


def _walk(blocks: Mapping[str, dict[str, Any]], root: str) -> list[str]:
    """Block ids under `root` (itself included) in reading order: depth first, pre-order."""
    order: list[str] = []
    stack = [root]
    while stack:
        block_id = stack.pop()
        block = blocks.get(block_id)
        if block is None:
            continue
        order.append(block_id)
        stack.extend(reversed(block.get("children") or []))
    return order


def _raw_text(doc: _Document) -> str:
    lines: list[str] = []
    for block_id in _walk(doc.blocks, doc.document_id):
        block = doc.blocks[block_id]
        block_type = block.get("block_type")
        if not isinstance(block_type, int) or block_type not in TEXT_TYPES:
            continue
        body = block.get(BODY_KEYS[block_type]) or {}
        lines.append(
            "".join(
                str((element.get("text_run") or {}).get("content", ""))
                for element in body.get("elements") or []
                if isinstance(element, dict)
            )
        )
    return "\n".join(lines) + "\n"


def _check_revision(doc: _Document, params: Mapping[str, str]) -> None:
    raw = params.get("document_revision_id", "-1")
    try:
        revision = int(raw)
    except ValueError:
        raise _invalid("document_revision_id must be an integer") from None
    if revision != -1 and not 1 <= revision <= doc.revision_id:
        raise _invalid("document_revision_id is not a revision of this document")


def _descendant_tree(
    body: Mapping[str, Any], parent: Mapping[str, Any]
) -> tuple[list[str], int, dict[str, dict[str, Any]]]:
    """Check an insert's body as Lark does; return its children ids, index and blocks by id."""
    children_id = body.get("children_id")
    descendants = body.get("descendants")
    index = body.get("index", -1)
    if not isinstance(children_id, list) or not children_id:
        raise _invalid("children_id must be a non-empty list")
    if not isinstance(descendants, list) or not descendants:
        raise _invalid("descendants must be a non-empty list")
    siblings = parent.get("children") or []
    if not isinstance(index, int) or not (index == -1 or 0 <= index <= len(siblings)):
        raise _invalid("index is out of range")
    tree: dict[str, dict[str, Any]] = {}
    for block in descendants:
        if not isinstance(block, dict) or not isinstance(block.get("block_id"), str):
            raise _invalid("every descendant needs a block_id")
        if block["block_id"] in tree:
            raise _invalid("a block_id is repeated in descendants")
        _check_block(block)
        tree[block["block_id"]] = block
    referenced: set[str] = set()
    for block in tree.values():
        for child in block.get("children") or []:
            if child not in tree or child in referenced:
                raise _invalid("a children id is not a descendant, or has two parents")
            referenced.add(child)
    if any(c not in tree or c in referenced for c in children_id) or len(set(children_id)) != len(
        children_id
    ):
        raise _invalid("children_id must name descendants that are no other block's child")
    reachable = {b for c in children_id for b in _walk(tree, c)}
    if reachable != set(tree):
        raise _invalid("every descendant must hang under children_id")
    return list(children_id), index, tree


def _check_block(block: Mapping[str, Any]) -> None:
    block_type = block.get("block_type")
    if not isinstance(block_type, int) or block_type == BLOCK_PAGE:
        raise LarkError(CODE_DOCX_BLOCK_NOT_CREATABLE, "block not support to create")
    key = BODY_KEYS.get(block_type)
    if key is None:
        raise LarkError(CODE_DOCX_BLOCK_NOT_CREATABLE, "block not support to create")
    children = block.get("children", [])
    if not isinstance(children, list) or not all(isinstance(c, str) for c in children):
        raise _invalid("children must be a list of block ids")
    body = block.get(key)
    if block_type in TEXT_TYPES and not (
        isinstance(body, dict) and isinstance(body.get("elements"), list)
    ):
        raise _invalid(f"{key} needs elements")
    if block_type == BLOCK_TABLE:
        _check_table(body, children)


def _check_table(body: Any, children: Sequence[str]) -> None:
    prop = body.get("property") if isinstance(body, dict) else None
    if not isinstance(prop, dict):
        raise _invalid("table needs a property")
    if "merge_info" in prop:
        raise _invalid("table.property.merge_info is read-only")
    rows, columns = prop.get("row_size"), prop.get("column_size")
    if not isinstance(rows, int) or not isinstance(columns, int) or rows < 1 or columns < 1:
        raise _invalid("table needs row_size and column_size")
    cells = body.get("cells", list(children))
    if list(cells) != list(children) or len(children) != rows * columns:
        raise _invalid("table cells must be its children, row_size x column_size of them")


def _renumbered(block: Mapping[str, Any], relations: Mapping[str, str]) -> dict[str, Any]:
    new = copy.deepcopy(dict(block))
    new["block_id"] = relations[block["block_id"]]
    new["children"] = [relations[c] for c in block.get("children") or []]
    table = new.get("table")
    if isinstance(table, dict):
        table["cells"] = [relations[c] for c in table.get("cells") or []]
    return new


def _valid_origin(origin: Any) -> bool:
    if not isinstance(origin, dict):
        return False
    name, href = origin.get("platform_i18n_name"), origin.get("href")
    if not isinstance(name, dict) or not any(isinstance(v, str) and v for v in name.values()):
        return False
    return href is None or (isinstance(href, dict) and isinstance(href.get("url"), str))


def _insert_descendants(
    doc: _Document, block_id: str, parent: dict[str, Any], body: Mapping[str, Any]
) -> dict[str, Any]:
    """Insert the body's block tree under `parent`, with ids of the simulator's own."""
    children_id, index, tree = _descendant_tree(body, parent)
    relations = {old: _lark_id("doxsim") for old in tree}
    for old, block in tree.items():
        new = _renumbered(block, relations)
        new["parent_id"] = block_id if old in children_id else ""
        doc.blocks[relations[old]] = new
    for old, block in tree.items():
        for child in block.get("children") or []:
            doc.blocks[relations[child]]["parent_id"] = relations[old]
    new_children = [relations[c] for c in children_id]
    siblings = parent.setdefault("children", [])
    position = len(siblings) if index == -1 else index
    siblings[position:position] = new_children
    return {
        "children": [copy.deepcopy(doc.blocks[c]) for c in new_children],
        "block_id_relations": [
            {"temporary_block_id": old, "block_id": new} for old, new in relations.items()
        ],
    }


def _delete_children(
    doc: _Document, block_id: str, parent: dict[str, Any], body: Mapping[str, Any]
) -> dict[str, Any]:
    """Delete `parent`'s children in [start_index, end_index) with their subtrees."""
    siblings = parent.get("children") or []
    start, end = body.get("start_index"), body.get("end_index")
    if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(siblings)):
        raise _invalid("start_index and end_index must satisfy 0 <= start < end <= count")
    for child in siblings[start:end]:
        for gone in _walk(doc.blocks, child):
            doc.blocks.pop(gone, None)
    parent["children"] = siblings[:start] + siblings[end:]
    return {}


_BLOCK_WRITES: Final[
    Mapping[str, Callable[[_Document, str, dict[str, Any], Mapping[str, Any]], dict[str, Any]]]
] = {"descendant": _insert_descendants, "batch_delete": _delete_children}
"""The block writes of `DocumentsState.block_write`, by the kind their replies are kept under."""


# ---------------------------------------------------------------------------------- routes


def register_document_routes(
    app: FastAPI, docs: DocumentsState, authorize: Callable[[Request], str]
) -> None:
    """Add the Docs, Drive and Tasks routes to the local Lark's app; `authorize` is the app's
    own bearer-token check (and its global faults). The app renders their `LarkError`s
    (`handle_lark_errors`)."""

    async def run(route: str, work: Callable[[], dict[str, Any]]) -> JSONResponse:
        await docs.wait_if_held(route)
        fault = docs.take_fault(route)
        if fault is not None and not fault.after_apply:
            raise LarkError(fault.code, "simulated failure", status=fault.status)
        data = work()
        if fault is not None:
            raise LarkError(fault.code, "simulated failure after the work", status=fault.status)
        return lark_reply(data)

    async def block_write(
        route: str, request: Request, kind: str, document_id: str, block_id: str
    ) -> JSONResponse:
        """A write of `kind` to the blocks under `block_id`, given the request's JSON body and
        its query parameters (the client_token, the revision)."""
        authorize(request)
        body = await json_object_body(request, CODE_DOCX_INVALID_PARAM)
        params = dict(request.query_params)
        return await run(route, lambda: docs.block_write(kind, document_id, block_id, body, params))

    @app.post("/open-apis/docx/v1/documents")
    async def create_document(request: Request) -> JSONResponse:
        authorize(request)
        body = await json_object_body(request, CODE_DOCX_INVALID_PARAM)
        return await run(ROUTE_CREATE_DOCUMENT, lambda: docs.create_document(body))

    @app.post("/open-apis/docx/v1/documents/blocks/convert")
    async def convert(request: Request) -> JSONResponse:
        authorize(request)
        body = await json_object_body(request, CODE_DOCX_INVALID_PARAM)
        return await run(ROUTE_CONVERT, lambda: docs.convert(body))

    @app.post("/open-apis/docx/v1/documents/{document_id}/blocks/{block_id}/descendant")
    async def insert_descendants(document_id: str, block_id: str, request: Request) -> JSONResponse:
        return await block_write(
            ROUTE_INSERT_DESCENDANTS, request, "descendant", document_id, block_id
        )

    @app.get("/open-apis/docx/v1/documents/{document_id}/blocks/{block_id}")
    async def get_block(document_id: str, block_id: str, request: Request) -> JSONResponse:
        authorize(request)
        return await run(ROUTE_GET_BLOCK, lambda: docs.get_block(document_id, block_id))

    @app.delete(
        "/open-apis/docx/v1/documents/{document_id}/blocks/{block_id}/children/batch_delete"
    )
    async def delete_children(document_id: str, block_id: str, request: Request) -> JSONResponse:
        return await block_write(
            ROUTE_DELETE_CHILDREN, request, "batch_delete", document_id, block_id
        )

    @app.get("/open-apis/docx/v1/documents/{document_id}/raw_content")
    async def raw_content(document_id: str, request: Request) -> JSONResponse:
        authorize(request)
        return await run(ROUTE_RAW_CONTENT, lambda: docs.raw_content(document_id))

    @app.get("/open-apis/drive/v1/files")
    async def list_files(request: Request) -> JSONResponse:
        authorize(request)
        params = dict(request.query_params)
        return await run(ROUTE_LIST_FILES, lambda: docs.list_files(params))

    @app.delete("/open-apis/drive/v1/files/{file_token}")
    async def delete_file(file_token: str, request: Request) -> JSONResponse:
        authorize(request)
        params = dict(request.query_params)
        return await run(ROUTE_DELETE_FILE, lambda: docs.delete_file(file_token, params))

    @app.post("/open-apis/task/v2/tasks")
    async def create_task(request: Request) -> JSONResponse:
        app_id = authorize(request)
        body = await json_object_body(request, CODE_DOCX_INVALID_PARAM)
        return await run(ROUTE_CREATE_TASK, lambda: docs.create_task(app_id, body))
