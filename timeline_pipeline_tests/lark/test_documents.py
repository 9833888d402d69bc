"""Docs, Drive and Tasks: the real client (lark-oapi underneath) against the local Lark."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import structlog.testing

from timeline_pipeline.lark import documents as documents_module
from timeline_pipeline.lark.client import (
    LarkApiError,
    LarkClient,
    LarkClientConfig,
    LarkPermissionError,
)
from timeline_pipeline.lark.documents import LarkDocuments
from timeline_pipeline.lark.rate_limit import RateLimiter
from timeline_pipeline.lark.simulator import SimulatorServer
from timeline_pipeline.lark.simulator.documents import (
    DEFAULT_FOLDER_TOKEN,
    ROUTE_CREATE_DOCUMENT,
    ROUTE_DELETE_CHILDREN,
    ROUTE_INSERT_DESCENDANTS,
    ROUTE_LIST_FILES,
    ROUTE_RAW_CONTENT,
    DocumentsState,
)
from timeline_pipeline.retry import RetryPolicy

SECRET = "docs-secret"
FOLDER = DEFAULT_FOLDER_TOKEN
TITLE = "INC-42 database failover report"
REPORT = """# INC-42 database failover

The primary went read-only at 09:12; see the [runbook](https://wiki.example.com/rb?db=main).

- failover to replica **done**
- cache flushed

| step | owner |
|---|---|
| rollback | alice |
| verify | bob |
"""
REPORT_LINES = [
    "INC-42 database failover",
    "The primary went read-only at 09:12; see the runbook.",
    "failover to replica done",
    "cache flushed",
    "step",
    "owner",
    "rollback",
    "alice",
    "verify",
    "bob",
]


class SleepRecorder:
    """Stands in for time.sleep in the retry loop: records the waits instead of taking them."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


@pytest.fixture
def sim() -> Iterator[SimulatorServer]:
    # lark-oapi caches tenant tokens process-wide by app_id: a fresh id per test isolates them.
    app_id = f"cli_docs_{uuid.uuid4().hex[:12]}"
    with SimulatorServer(app_id=app_id, app_secret=SECRET) as server:
        yield server


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()


def make_docs(
    server: SimulatorServer,
    sleep: Callable[[float], None],
    *,
    write_limiter: Callable[[str], RateLimiter] | None = None,
) -> LarkDocuments:
    config = LarkClientConfig(
        app_id=server.app_id,
        app_secret=server.app_secret,
        base_url=server.base_url,
        retry=RetryPolicy(attempts=5, backoff_base=0.001, backoff_cap=0.01, max_retry_after=5),
        timeout_seconds=5.0,
    )
    client = LarkClient(config, sleep=sleep)
    if write_limiter is None:
        return LarkDocuments(client)
    return LarkDocuments(client, write_limiter=write_limiter)


def sim_docs(server: SimulatorServer) -> DocumentsState:
    return server.state.documents


def paragraph(text: str) -> dict[str, Any]:
    return {
        "block_id": f"tmp_{uuid.uuid4().hex}",
        "block_type": 2,
        "text": {"elements": [{"text_run": {"content": text}}], "style": {}},
    }


def insert_paragraph(docs: LarkDocuments, document_id: str, text: str) -> int:
    block = paragraph(text)
    return docs.insert_descendants(
        document_id,
        document_id,
        [block["block_id"]],
        [block],
        index=-1,
        client_token=str(uuid.uuid4()),
    )


# ------------------------------------------------------------------ the report round trip


def test_a_markdown_report_written_into_a_new_document_reads_back_as_its_text(
    sim: SimulatorServer, sleeps: SleepRecorder
) -> None:
    docs = make_docs(sim, sleeps)

    created = docs.create_document(FOLDER, TITLE)
    converted = docs.convert_markdown(REPORT)
    revision = docs.insert_descendants(
        created.document_id,
        created.document_id,
        converted.first_level_block_ids,
        converted.blocks,
        index=0,
        client_token=str(uuid.uuid4()),
    )
    text = docs.raw_content(created.document_id)
    top = docs.root_children(created.document_id)

    assert created.title == TITLE
    assert revision == created.revision_id + 1
    assert text.splitlines() == [TITLE, *REPORT_LINES]
    # heading, paragraph, two bullets, the table: the page's children in the report's order.
    stored = {b["block_id"]: b for b in sim_docs(sim).blocks(created.document_id)}
    assert [stored[b]["block_type"] for b in top] == [3, 2, 12, 12, 31]
    runs = [e["text_run"] for e in stored[top[1]]["text"]["elements"]]
    linked = [r for r in runs if r["text_element_style"].get("link")]
    assert [(r["content"], r["text_element_style"]["link"]["url"]) for r in linked] == [
        ("runbook", "https://wiki.example.com/rb?db=main")
    ]
    bullet_runs = [e["text_run"] for e in stored[top[2]]["bullet"]["elements"]]
    assert [r["content"] for r in bullet_runs if r["text_element_style"]["bold"]] == ["done"]
    assert sim_docs(sim).document(created.document_id) == {
        "document_id": created.document_id,
        "title": TITLE,
        "folder_token": FOLDER,
        "revision_id": revision,
        "deleted": False,
    }
    assert sleeps.calls == []


def test_a_table_converted_by_the_client_has_no_merge_info_and_inserts(
    sim: SimulatorServer, sleeps: SleepRecorder
) -> None:
    docs = make_docs(sim, sleeps)
    document_id = docs.create_document(FOLDER, TITLE).document_id
    raw = sim_docs(sim).convert({"content_type": "markdown", "content": REPORT})

    converted = docs.convert_markdown(REPORT)
    docs.insert_descendants(
        document_id,
        document_id,
        converted.first_level_block_ids,
        converted.blocks,
        index=0,
        client_token=str(uuid.uuid4()),
    )

    raw_tables = [b for b in raw["blocks"] if b["block_type"] == 31]
    tables = [b for b in converted.blocks if b["block_type"] == 31]
    assert len(raw_tables) == len(tables) == 1
    assert len(raw_tables[0]["table"]["property"]["merge_info"]) == 6
    assert "merge_info" not in tables[0]["table"]["property"]
    assert tables[0]["table"]["property"]["row_size"] == 3
    assert tables[0]["table"]["property"]["column_size"] == 2
    assert sim_docs(sim).write_count(document_id) == 1


# ------------------------------------------------------------------ idempotent writes


def test_an_insert_whose_answer_was_lost_is_retried_with_its_token_and_writes_once(
    sim: SimulatorServer, sleeps: SleepRecorder
) -> None:
    docs = make_docs(sim, sleeps)
    document_id = docs.create_document(FOLDER, TITLE).document_id
    converted = docs.convert_markdown(REPORT)
    token = str(uuid.uuid4())
    sim_docs(sim).fail_next(ROUTE_INSERT_DESCENDANTS, after_apply=True)

    first = docs.insert_descendants(
        document_id,
        document_id,
        converted.first_level_block_ids,
        converted.blocks,
        index=0,
        client_token=token,
    )
    again = docs.insert_descendants(
        document_id,
        document_id,
        converted.first_level_block_ids,
        converted.blocks,
        index=0,
        client_token=token,
    )

    assert sim.request_counts[ROUTE_INSERT_DESCENDANTS] == 3
    assert len(sleeps.calls) == 1
    assert first == again == 2
    assert sim_docs(sim).write_count(document_id) == 1
    assert docs.raw_content(document_id).splitlines() == [TITLE, *REPORT_LINES]


def test_a_delete_whose_answer_was_lost_is_retried_with_its_token_and_deletes_once(
    sim: SimulatorServer, sleeps: SleepRecorder
) -> None:
    docs = make_docs(sim, sleeps)
    document_id = docs.create_document(FOLDER, TITLE).document_id
    for text in ("one", "two", "three"):
        insert_paragraph(docs, document_id, text)
    sim_docs(sim).fail_next(ROUTE_DELETE_CHILDREN, after_apply=True)

    docs.delete_children(document_id, document_id, 0, 1, client_token=str(uuid.uuid4()))

    assert sim.request_counts[ROUTE_DELETE_CHILDREN] == 2
    assert docs.raw_content(document_id).splitlines() == [TITLE, "two", "three"]
    assert len(docs.root_children(document_id)) == 2


# ------------------------------------------------------------------ the per-document limit


def test_a_burst_of_writes_to_one_document_is_kept_within_three_a_second(
    sim: SimulatorServer, sleeps: SleepRecorder
) -> None:
    docs = make_docs(sim, sleeps)
    document_id = docs.create_document(FOLDER, TITLE).document_id

    started = time.monotonic()
    for n in range(7):
        insert_paragraph(docs, document_id, f"line {n}")
    elapsed = time.monotonic() - started

    assert sim_docs(sim).rate_limited_count(document_id) == 0
    assert sim_docs(sim).write_count(document_id) == 7
    assert sleeps.calls == []
    # Writes 4-6 wait for the first three to age a second, the 7th for the next three.
    assert elapsed >= 1.9
    assert docs.raw_content(document_id).splitlines()[1:] == [f"line {n}" for n in range(7)]


def test_a_client_without_the_document_limiter_meets_429_and_is_retried(
    sim: SimulatorServer,
) -> None:
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        time.sleep(seconds)

    docs = make_docs(sim, sleep, write_limiter=lambda _: RateLimiter([(1000, 1.0)]))
    document_id = docs.create_document(FOLDER, TITLE).document_id

    for n in range(5):
        insert_paragraph(docs, document_id, f"line {n}")

    assert sim_docs(sim).rate_limited_count(document_id) >= 1
    assert sim_docs(sim).write_count(document_id) == 5
    assert waits and all(w == 1.0 for w in waits)
    assert docs.raw_content(document_id).splitlines()[1:] == [f"line {n}" for n in range(5)]


# ------------------------------------------------------------------ folders


@pytest.mark.parametrize(
    ("folder", "writable", "code"),
    [
        ("fldrefused000000000000000001", False, 1770040),
        ("fldunknown000000000000000001", None, 1770039),
    ],
)
def test_a_folder_lark_refuses_is_a_permission_error_and_creates_nothing(
    sim: SimulatorServer, sleeps: SleepRecorder, folder: str, writable: bool | None, code: int
) -> None:
    if writable is not None:
        sim_docs(sim).add_folder(folder, writable=writable)
    docs = make_docs(sim, sleeps)

    with pytest.raises(LarkPermissionError) as caught:
        docs.create_document(folder, TITLE)

    assert caught.value.code == code
    assert caught.value.operation == "create_document"
    assert caught.value.retryable is False
    assert sim.request_counts[ROUTE_CREATE_DOCUMENT] == 1
    assert sleeps.calls == []
    assert sim_docs(sim).document_ids() == []


def test_a_deleted_document_leaves_the_folder_listing_and_deleting_it_again_is_a_no_op(
    sim: SimulatorServer, sleeps: SleepRecorder
) -> None:
    sim_docs(sim).doc_base_url = "https://acme.feishu.cn"
    docs = make_docs(sim, sleeps)
    kept = docs.create_document(FOLDER, "INC-1 report").document_id
    purged = docs.create_document(FOLDER, "INC-2 report").document_id
    listed_before = docs.list_folder(FOLDER)

    assert docs.delete_file(purged) is True
    assert docs.delete_file(purged) is False
    listed_after = docs.list_folder(FOLDER)
    with pytest.raises(LarkApiError) as caught:
        docs.raw_content(purged)

    assert [(f.token, f.name, f.type) for f in listed_before] == [
        (kept, "INC-1 report", "docx"),
        (purged, "INC-2 report", "docx"),
    ]
    assert [f.token for f in listed_after] == [kept]
    assert listed_after[0].url == f"https://acme.feishu.cn/docx/{kept}"
    assert caught.value.code == 1770002
    assert caught.value.retryable is False
    assert sim.request_counts[ROUTE_RAW_CONTENT] == 1


def test_the_folder_listing_follows_every_page(
    sim: SimulatorServer, sleeps: SleepRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(documents_module, "FOLDER_PAGE_SIZE", 2)
    docs = make_docs(sim, sleeps)
    made = [docs.create_document(FOLDER, f"INC-{n}").document_id for n in range(5)]

    listed = docs.list_folder(FOLDER)

    assert [f.token for f in listed] == made
    assert sim.request_counts[ROUTE_LIST_FILES] == 3


# ------------------------------------------------------------------ tasks


def test_a_task_is_created_once_per_client_token(
    sim: SimulatorServer, sleeps: SleepRecorder
) -> None:
    docs = make_docs(sim, sleeps)
    link = "https://example.feishu.cn/docx/doxsimReport"

    first = docs.create_task(
        "Add a replica lag alert", "From INC-42.", client_token="t-1", link_url=link
    )
    again = docs.create_task(
        "Add a replica lag alert", "From INC-42.", client_token="t-1", link_url=link
    )
    other = docs.create_task("Rotate the db password", "", client_token="t-2", link_url=None)

    tasks = sim_docs(sim).tasks()
    assert first == again
    assert other.guid != first.guid
    assert [t["guid"] for t in tasks] == [first.guid, other.guid]
    assert first.url.endswith(first.guid)
    assert tasks[0]["origin"]["href"]["url"] == link
    assert tasks[0]["origin"]["platform_i18n_name"]["en_us"]
    assert tasks[0]["description"] == f"From INC-42.\n\n{link}"
    assert "origin" not in tasks[1]


# ------------------------------------------------------------------ logs


def test_logs_carry_ids_but_never_titles_or_report_text(
    sim: SimulatorServer, sleeps: SleepRecorder
) -> None:
    docs = make_docs(sim, sleeps)
    sim_docs(sim).fail_next(ROUTE_INSERT_DESCENDANTS, after_apply=True)

    with structlog.testing.capture_logs() as logged:
        document_id = docs.create_document(FOLDER, TITLE).document_id
        converted = docs.convert_markdown(REPORT)
        docs.insert_descendants(
            document_id,
            document_id,
            converted.first_level_block_ids,
            converted.blocks,
            index=0,
            client_token=str(uuid.uuid4()),
        )
        docs.create_task(
            "Add a replica lag alert", "secret words", client_token="t-9", link_url=None
        )

    text = "\n".join(repr(entry) for entry in logged)
    assert any(
        e["event"] == "lark.call.retry" and e.get("document_id") == document_id for e in logged
    )
    assert any(e["event"] == "lark.document.blocks_inserted" for e in logged)
    for secret in ("INC-42", "failover", "alice", "replica lag", "secret words", "runbook"):
        assert secret not in text


def test_a_create_whose_answer_was_lost_is_not_retried_into_a_second_document(
    sim: SimulatorServer, sleeps: SleepRecorder
) -> None:
    docs = make_docs(sim, sleeps)
    sim_docs(sim).fail_next(ROUTE_CREATE_DOCUMENT, after_apply=True)

    with pytest.raises(LarkApiError, match="create_document"):
        docs.create_document(FOLDER, TITLE)

    # Lark made it but its answer was lost: a retry would have made a second one.
    assert len(sim_docs(sim).document_ids()) == 1
    assert [f.name for f in docs.list_folder(FOLDER)] == [TITLE]


def test_a_create_refused_by_the_rate_limit_is_retried(
    sim: SimulatorServer, sleeps: SleepRecorder
) -> None:
    docs = make_docs(sim, sleeps)
    sim_docs(sim).fail_next(ROUTE_CREATE_DOCUMENT, code=99991400, status=429)

    created = docs.create_document(FOLDER, TITLE)

    assert sim_docs(sim).document_ids() == [created.document_id]
    assert sleeps.calls
