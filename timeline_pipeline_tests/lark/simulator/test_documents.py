"""The local Lark's Docs, Drive and Tasks: the Markdown conversion, and the wire contract checked
with plain HTTP and against lark-oapi's own response models."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from lark_oapi.api.docx.v1 import (
    ConvertDocumentResponse,
    CreateDocumentBlockDescendantResponse,
    CreateDocumentResponse,
    GetDocumentBlockResponse,
    RawContentDocumentResponse,
)
from lark_oapi.api.drive.v1 import ListFileResponse
from lark_oapi.api.task.v2 import CreateTaskResponse
from lark_oapi.core.json import JSON

from timeline_pipeline.lark.simulator import SimulatorServer
from timeline_pipeline.lark.simulator.documents import (
    DEFAULT_FOLDER_TOKEN,
    ROUTE_CREATE_DOCUMENT,
    ROUTE_INSERT_DESCENDANTS,
    DocumentsState,
    markdown_to_blocks,
)

APP_ID, SECRET = "cli_docs_wire", "wire-secret"
FOLDER = DEFAULT_FOLDER_TOKEN
DOCS = "/open-apis/docx/v1/documents"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def server(clock: FakeClock) -> Iterator[SimulatorServer]:
    running = SimulatorServer(app_id=APP_ID, app_secret=SECRET)
    # Before start: the app reads the documents state when it is built.
    running.state.documents = DocumentsState(clock=clock)
    with running:
        yield running


@pytest.fixture
def docs(server: SimulatorServer) -> DocumentsState:
    return server.state.documents


@pytest.fixture
def http(server: SimulatorServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.base_url, trust_env=False, timeout=5) as client:
        token = client.post(
            "/open-apis/auth/v3/tenant_access_token/internal",
            content=json.dumps({"app_id": APP_ID, "app_secret": SECRET}),
        ).json()["tenant_access_token"]
        client.headers["Authorization"] = f"Bearer {token}"
        yield client


def create(http: httpx.Client, title: str = "Report", folder: str = FOLDER) -> str:
    reply = http.post(DOCS, json={"folder_token": folder, "title": title})
    assert reply.status_code == 200, reply.text
    return str(reply.json()["data"]["document"]["document_id"])


def convert(http: httpx.Client, markdown: str) -> dict[str, Any]:
    reply = http.post(
        f"{DOCS}/blocks/convert", json={"content_type": "markdown", "content": markdown}
    )
    assert reply.status_code == 200, reply.text
    return dict(reply.json()["data"])


def insert(
    http: httpx.Client,
    document_id: str,
    body: dict[str, Any],
    *,
    token: str | None = None,
    block_id: str | None = None,
) -> httpx.Response:
    params = {"document_revision_id": "-1"}
    if token:
        params["client_token"] = token
    return http.post(
        f"{DOCS}/{document_id}/blocks/{block_id or document_id}/descendant",
        params=params,
        json=body,
    )


def paragraph(block_id: str, text: str) -> dict[str, Any]:
    return {
        "block_id": block_id,
        "block_type": 2,
        "text": {"elements": [{"text_run": {"content": text}}]},
    }


def one_paragraph(text: str) -> dict[str, Any]:
    return {"children_id": ["p"], "index": -1, "descendants": [paragraph("p", text)]}


def without_merge_info(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = json.loads(json.dumps(blocks))
    for block in out:
        if block["block_type"] == 31:
            del block["table"]["property"]["merge_info"]
    return list(out)


def text_of(block: dict[str, Any], key: str) -> str:
    return "".join(e["text_run"]["content"] for e in block[key]["elements"])


# ------------------------------------------------------------------ Markdown conversion


def test_markdown_becomes_lark_blocks_of_each_kind() -> None:
    markdown = "\n\n".join(
        [
            *(f"{'#' * n} Heading {n}" for n in range(1, 7)),
            "Plain *and* **bold** with [a link](https://example.com/x?a=1&b=2).",
            "- first\n- second\n  - nested",
            "1. one\n2. two",
            "```python\nprint('hi')\n```",
            "> quoted",
            "---",
            "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 |",
        ]
    )

    first, blocks = markdown_to_blocks(markdown)

    by_id = {b["block_id"]: b for b in blocks}
    top = [by_id[i] for i in first]
    assert [b["block_type"] for b in top] == [3, 4, 5, 6, 7, 8, 2, 12, 12, 13, 13, 14, 15, 22, 31]
    assert [text_of(top[n], f"heading{n + 1}") for n in range(6)] == [
        f"Heading {n}" for n in range(1, 7)
    ]
    runs = [e["text_run"] for e in top[6]["text"]["elements"]]
    assert [(r["content"], r["text_element_style"]["italic"]) for r in runs][1] == ("and", True)
    assert [r["content"] for r in runs if r["text_element_style"]["bold"]] == ["bold"]
    assert [
        (r["content"], r["text_element_style"]["link"]["url"])
        for r in runs
        if "link" in r["text_element_style"]
    ] == [("a link", "https://example.com/x?a=1&b=2")]
    nested = by_id[top[8]["children"][0]]
    assert (nested["block_type"], text_of(nested, "bullet")) == (12, "nested")
    assert text_of(top[11], "code") == "print('hi')"
    assert text_of(top[12], "quote") == "quoted"
    assert top[13]["divider"] == {}
    table = top[14]
    cells = [by_id[c] for c in table["children"]]
    assert table["table"]["cells"] == table["children"]
    assert table["table"]["property"] | {"column_width": None} == {
        "row_size": 3,
        "column_size": 2,
        "column_width": None,
        "header_row": True,
        "merge_info": [{"row_span": 1, "col_span": 1}] * 6,
    }
    assert {c["block_type"] for c in cells} == {32}
    texts = [by_id[c["children"][0]] for c in cells]
    assert [text_of(t, "text") for t in texts] == ["a", "b", "1", "2", "3", ""]
    # Parents come before their children, as Lark lists them.
    seen: set[str] = set()
    for block in blocks:
        assert not set(block.get("children", [])) & seen
        seen.add(block["block_id"])


# ------------------------------------------------------------------ the wire, as the SDK reads it


def test_every_answer_parses_into_the_sdk_models(http: httpx.Client) -> None:
    created = http.post(DOCS, json={"folder_token": FOLDER, "title": "INC-7"})
    document_id = JSON.unmarshal(created.text, CreateDocumentResponse).data.document.document_id
    converted = http.post(
        f"{DOCS}/blocks/convert",
        json={"content_type": "markdown", "content": "# T\n\n| a |\n|---|\n| b |"},
    )
    parsed = JSON.unmarshal(converted.text, ConvertDocumentResponse)
    data = converted.json()["data"]
    inserted = insert(
        http,
        document_id,
        {
            "children_id": data["first_level_block_ids"],
            "index": 0,
            "descendants": without_merge_info(data["blocks"]),
        },
        token=str(uuid.uuid4()),
    )
    page = http.get(f"{DOCS}/{document_id}/blocks/{document_id}")
    raw = http.get(f"{DOCS}/{document_id}/raw_content")
    listed = http.get("/open-apis/drive/v1/files", params={"folder_token": FOLDER})
    task = http.post(
        "/open-apis/task/v2/tasks", json={"summary": "Follow up", "client_token": "c1"}
    )

    assert parsed.data.blocks[0].heading1.elements[0].text_run.content == "T"
    assert parsed.data.blocks[1].table.property.merge_info[0].row_span == 1
    relations = JSON.unmarshal(inserted.text, CreateDocumentBlockDescendantResponse).data
    assert relations.document_revision_id == 2
    assert {r.temporary_block_id for r in relations.block_id_relations} == {
        b["block_id"] for b in data["blocks"]
    }
    page_block = JSON.unmarshal(page.text, GetDocumentBlockResponse).data.block
    assert page_block.block_type == 1
    assert [c.block_id for c in relations.children] == page_block.children
    assert JSON.unmarshal(raw.text, RawContentDocumentResponse).data.content == "INC-7\nT\na\nb\n"
    files = JSON.unmarshal(listed.text, ListFileResponse).data.files
    assert [(f.token, f.name, f.type) for f in files] == [(document_id, "INC-7", "docx")]
    assert files[0].url == f"https://example.feishu.cn/docx/{document_id}"
    made = JSON.unmarshal(task.text, CreateTaskResponse).data.task
    assert made.guid and made.url.endswith(made.guid)


# ------------------------------------------------------------------ inserts


def test_an_insert_with_merge_info_is_refused_and_writes_nothing(
    http: httpx.Client, docs: DocumentsState
) -> None:
    document_id = create(http)
    data = convert(http, "| a | b |\n|---|---|\n| 1 | 2 |")

    refused = insert(
        http,
        document_id,
        {"children_id": data["first_level_block_ids"], "index": 0, "descendants": data["blocks"]},
    )

    assert refused.status_code == 400
    assert refused.json()["code"] == 1770001
    assert "merge_info" in refused.json()["msg"]
    assert docs.write_count(document_id) == 0
    assert docs.raw_text(document_id) == "Report\n"


@pytest.mark.parametrize(
    "body",
    [
        {"children_id": ["missing"], "index": 0, "descendants": [paragraph("p", "x")]},
        {"children_id": ["p"], "index": 5, "descendants": [paragraph("p", "x")]},
        {
            "children_id": ["p"],
            "index": 0,
            "descendants": [paragraph("p", "x"), paragraph("orphan", "y")],
        },
        {
            "children_id": ["p"],
            "index": 0,
            "descendants": [{**paragraph("p", "x"), "children": ["ghost"]}],
        },
        {"children_id": ["p"], "index": 0, "descendants": [{"block_id": "p", "block_type": 2}]},
    ],
    ids=["child-not-a-descendant", "index-out-of-range", "unreachable", "unknown-child", "no-text"],
)
def test_an_insert_whose_tree_does_not_hold_together_is_refused(
    http: httpx.Client, docs: DocumentsState, body: dict[str, Any]
) -> None:
    document_id = create(http)

    refused = insert(http, document_id, body)

    assert (refused.status_code, refused.json()["code"]) == (400, 1770001)
    assert docs.write_count(document_id) == 0


def test_a_page_block_cannot_be_inserted(http: httpx.Client) -> None:
    document_id = create(http)
    body = {
        "children_id": ["p"],
        "index": 0,
        "descendants": [{"block_id": "p", "block_type": 1, "page": {"elements": []}}],
    }

    assert insert(http, document_id, body).json()["code"] == 1770029


def test_the_same_client_token_replays_the_first_answer(
    http: httpx.Client, docs: DocumentsState
) -> None:
    document_id = create(http)

    first = insert(http, document_id, one_paragraph("once"), token="tok-1").json()
    again = insert(http, document_id, one_paragraph("twice?"), token="tok-1").json()
    other = insert(http, document_id, one_paragraph("second"), token="tok-2").json()

    assert first == again
    assert other["data"]["document_revision_id"] == 3
    assert docs.write_count(document_id) == 2
    assert docs.raw_text(document_id) == "Report\nonce\nsecond\n"


def test_children_go_in_at_the_index_and_deleting_takes_their_subtrees(
    http: httpx.Client, docs: DocumentsState, clock: FakeClock
) -> None:
    document_id = create(http)
    insert(http, document_id, one_paragraph("last"))
    insert(http, document_id, {**one_paragraph("first"), "index": 0})
    data = convert(http, "- parent\n  - child")
    insert(
        http,
        document_id,
        {"children_id": data["first_level_block_ids"], "index": 1, "descendants": data["blocks"]},
    )
    clock.now += 1.0

    out_of_range = http.request(
        "DELETE",
        f"{DOCS}/{document_id}/blocks/{document_id}/children/batch_delete",
        json={"start_index": 2, "end_index": 9},
    )
    deleted = http.request(
        "DELETE",
        f"{DOCS}/{document_id}/blocks/{document_id}/children/batch_delete",
        json={"start_index": 1, "end_index": 2},
    )

    assert out_of_range.json()["code"] == 1770001
    assert deleted.json()["data"]["document_revision_id"] == 5
    assert docs.raw_text(document_id) == "Report\nfirst\nlast\n"
    assert len(docs.blocks(document_id)) == 3


# ------------------------------------------------------------------ the per-document limit


def test_a_fourth_write_within_a_second_is_answered_429(
    http: httpx.Client, docs: DocumentsState, clock: FakeClock
) -> None:
    document_id = create(http)
    other_id = create(http, "Other")

    answers = [insert(http, document_id, one_paragraph(f"w{n}")) for n in range(4)]
    elsewhere = insert(http, other_id, one_paragraph("fine"))
    clock.now += 1.0
    later = insert(http, document_id, one_paragraph("w4"))

    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    assert answers[3].json()["code"] == 99991400
    assert answers[3].headers["Retry-After"] == "1"
    assert elsewhere.status_code == 200
    assert later.status_code == 200
    assert docs.rate_limited_count(document_id) == 1
    assert docs.write_count(document_id) == 4


# ------------------------------------------------------------------ folders and drive


def test_a_create_in_an_unknown_or_refused_folder_is_refused(
    http: httpx.Client, docs: DocumentsState
) -> None:
    docs.add_folder("fldlocked", writable=False)

    unknown = http.post(DOCS, json={"folder_token": "fldnowhere", "title": "x"})
    locked = http.post(DOCS, json={"folder_token": "fldlocked", "title": "x"})
    root = http.post(DOCS, json={"title": "in the app's own space"})

    assert (unknown.status_code, unknown.json()["code"]) == (400, 1770039)
    assert (locked.status_code, locked.json()["code"]) == (403, 1770040)
    assert root.status_code == 200
    assert len(docs.document_ids()) == 1


def test_a_deleted_file_is_gone_from_the_listing_and_the_docs_routes(
    http: httpx.Client, docs: DocumentsState
) -> None:
    document_id = create(http)
    files = "/open-apis/drive/v1/files"

    no_type = http.delete(f"{files}/{document_id}")
    deleted = http.delete(f"{files}/{document_id}", params={"type": "docx"})
    twice = http.delete(f"{files}/{document_id}", params={"type": "docx"})
    unknown = http.delete(f"{files}/doxnothing", params={"type": "docx"})
    read = http.get(f"{DOCS}/{document_id}/raw_content")

    assert no_type.json()["code"] == 1061002
    assert deleted.json() == {"code": 0, "msg": "success", "data": {}}
    assert (twice.status_code, twice.json()["code"]) == (404, 1061007)
    assert (unknown.status_code, unknown.json()["code"]) == (404, 1061003)
    assert (read.status_code, read.json()["code"]) == (404, 1770002)
    assert docs.folder_files(FOLDER) == []
    assert (docs.document(document_id) or {}).get("deleted") is True


def test_the_folder_listing_pages_with_opaque_tokens(http: httpx.Client) -> None:
    made = [create(http, f"R{n}") for n in range(5)]
    files = "/open-apis/drive/v1/files"

    first = http.get(files, params={"folder_token": FOLDER, "page_size": 2}).json()["data"]
    second = http.get(
        files,
        params={"folder_token": FOLDER, "page_size": 2, "page_token": first["next_page_token"]},
    ).json()["data"]
    forged = http.get(files, params={"folder_token": FOLDER, "page_token": "2"})
    unknown = http.get(files, params={"folder_token": "fldnowhere"})

    assert [f["token"] for f in first["files"] + second["files"]] == made[:4]
    assert first["has_more"] is True and second["has_more"] is True
    assert forged.json()["code"] == 1061002
    assert (unknown.status_code, unknown.json()["code"]) == (404, 1061003)


# ------------------------------------------------------------------ tasks and faults


def test_a_task_origin_needs_its_platform_name(http: httpx.Client, docs: DocumentsState) -> None:
    tasks = "/open-apis/task/v2/tasks"

    bare = http.post(tasks, json={"summary": "x", "origin": {"href": {"url": "https://x.y"}}})
    empty = http.post(tasks, json={"summary": "  "})

    assert bare.json()["code"] == 1470400
    assert empty.json()["code"] == 1470400
    assert docs.tasks() == []


def test_fail_next_fails_that_many_calls_before_or_after_the_work(
    server: SimulatorServer, http: httpx.Client, docs: DocumentsState
) -> None:
    docs.fail_next(ROUTE_CREATE_DOCUMENT, 2, code=1771001, status=500)
    failed = [http.post(DOCS, json={"folder_token": FOLDER}) for _ in range(2)]
    assert docs.document_ids() == []
    created = http.post(DOCS, json={"folder_token": FOLDER})

    docs.fail_next(ROUTE_CREATE_DOCUMENT, after_apply=True)
    lost = http.post(DOCS, json={"folder_token": FOLDER})

    assert [(f.status_code, f.json()["code"]) for f in failed] == [(500, 1771001)] * 2
    assert created.status_code == 200
    assert (lost.status_code, lost.json()["code"]) == (500, 1771001)
    assert len(docs.document_ids()) == 2
    assert server.request_counts[ROUTE_CREATE_DOCUMENT] == 4


def test_a_held_call_is_worked_on_after_its_wait_even_when_its_caller_gave_up(
    http: httpx.Client, docs: DocumentsState
) -> None:
    document_id = create(http)
    docs.hold_next(ROUTE_INSERT_DESCENDANTS, 2.0)
    url = f"{DOCS}/{document_id}/blocks/{document_id}/descendant"
    params = {"document_revision_id": "-1", "client_token": "tok-held"}

    with pytest.raises(httpx.ReadTimeout):
        http.post(url, params=params, json=one_paragraph("late"), timeout=0.3)
    waiting, text_meanwhile = docs.holding(ROUTE_INSERT_DESCENDANTS), docs.raw_text(document_id)
    deadline = time.monotonic() + 10
    while docs.holding(ROUTE_INSERT_DESCENDANTS) and time.monotonic() < deadline:
        time.sleep(0.05)
    applied = docs.raw_text(document_id)
    retried = http.post(url, params=params, json=one_paragraph("late"))  # the hold was for one

    assert (waiting, text_meanwhile) == (1, "Report\n")
    assert docs.holding(ROUTE_INSERT_DESCENDANTS) == 0
    assert applied == "Report\nlate\n"
    assert retried.status_code == 200
    assert docs.write_count(document_id) == 1
    assert docs.raw_text(document_id) == "Report\nlate\n"


def test_a_hold_needs_a_positive_wait() -> None:
    with pytest.raises(ValueError, match="seconds > 0"):
        DocumentsState().hold_next(ROUTE_INSERT_DESCENDANTS, 0)


def test_the_docs_routes_need_a_valid_bearer_token(server: SimulatorServer) -> None:
    reply = httpx.post(f"{server.base_url}{DOCS}", json={"title": "x"}, trust_env=False)

    assert reply.json()["code"] == 99991661
    assert server.state.documents.document_ids() == []
