"""Each reply in a chunk has its thread root and replied-to parent in the chunk's context,
whatever the number of threads in the window (docs/design.md §7, `select_context`): the
window's context candidates hold every root and parent its replies reference, and each chunk
spends its context budget on its own replies' anchors first. On SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from sqlalchemy import Connection, Engine

from timeline_pipeline.domain.window_keys import WindowRef
from timeline_pipeline.i18n.locales import Locale
from timeline_pipeline.store import evidence, sync_states
from timeline_pipeline.synthesis.contract import SynthesisChunk, SynthesisResult
from timeline_pipeline.synthesis.rules import RuleSynthesizer
from timeline_pipeline.synthesis.token_estimate import estimate_total_tokens
from timeline_pipeline.synthesis_run.bounds import chunk_limits
from timeline_pipeline.synthesis_run.core import context_candidates, read_window, window_chunks
from timeline_pipeline.synthesis_run.drafts import evidence_item
from timeline_pipeline.synthesis_run.runner import RunStatus, WindowRunner
from timeline_pipeline_tests.store.factories import message
from timeline_pipeline_tests.support.windows import WINDOW
from timeline_pipeline_tests.windows.support import T0, settings, workspace

REF = WindowRef("inc-1", "oc_chat", T0)
THREADS = 60
"""More threads than the old whole-window cap of 50 referenced ids."""
CONFIG = settings(evidence_batch_limit=20, synthesis_max_prompt_tokens=12000)
"""Three chunks of 20 replies, each with context room for its replies' 40 roots and parents."""


def _store(conn: Connection, text: str, message_id: str, at: datetime, **conversation: str) -> None:
    record = message(text, message_id=message_id, at=at)
    if conversation:
        record = replace(record, metadata={**record.metadata, **conversation})
    evidence.upsert(conn, record, now=at)


def _store_threads(engine: Engine, threads: int = THREADS) -> None:
    """`threads` threads rooted an hour before the window (far before the 5-minute lookback),
    each with a first reply half an hour later and a reply to that reply inside the window."""
    with engine.begin() as conn:
        for n in range(threads):
            root, first, thread = f"om_root_{n:03d}", f"om_first_{n:03d}", f"omt_{n:03d}"
            at = T0 - timedelta(hours=1) + timedelta(seconds=n)
            _store(conn, f"is shard {n} of payments-api down?", root, at)
            _store(
                conn,
                f"failing shard {n} over",
                first,
                at + timedelta(minutes=30),
                thread_id=thread,
                root_id=root,
                parent_id=root,
            )
            _store(
                conn,
                f"shard {n} recovered after the failover",
                f"om_reply_{n:03d}",
                T0 + timedelta(seconds=4 * n),
                thread_id=thread,
                root_id=root,
                parent_id=first,
            )


def _missing(chunks: list[SynthesisChunk]) -> list[tuple[str, str | None]]:
    return [
        (reply.message_id, anchor)
        for chunk in chunks
        for reply in chunk.evidence
        for anchor in (reply.root_id, reply.parent_id)
        if anchor not in {c.message_id for c in chunk.context}
    ]


def test_every_reply_of_a_busy_window_has_its_root_and_parent_in_its_chunks_context(
    engine: Engine,
) -> None:
    workspace(engine)
    _store_threads(engine)
    with engine.connect() as conn:
        items = [evidence_item(row) for row in read_window(conn, REF, WINDOW)]
        assert len(items) == THREADS
        candidates = context_candidates(conn, REF, items, CONFIG)
    chunks = window_chunks(REF, items, candidates, CONFIG, WINDOW, locale=Locale.EN)
    assert len(chunks) == 3
    assert _missing(chunks) == []


SMALL = settings(evidence_batch_limit=40, synthesis_max_prompt_tokens=2000)
"""A context quarter of 500 tokens: the roots and parents of a handful of replies, not 40."""


def test_with_a_small_budget_120_threads_get_smaller_chunks_and_every_root_and_parent(
    engine: Engine,
) -> None:
    """120 threads rooted before the window and a context budget for a few replies' roots and
    parents: the window is cut into more, smaller chunks, and each reply's chunk has both."""
    workspace(engine)
    _store_threads(engine, 120)
    with engine.connect() as conn:
        items = [evidence_item(row) for row in read_window(conn, REF, WINDOW)]
        assert len(items) == 120
        candidates = context_candidates(conn, REF, items, SMALL)
    chunks = window_chunks(REF, items, candidates, SMALL, WINDOW, locale=Locale.EN)
    limits = chunk_limits(SMALL)
    assert _missing(chunks) == []
    assert [item.id for chunk in chunks for item in chunk.evidence] == [i.id for i in items]
    assert len(chunks) > 3  # 40 replies a chunk would have fit the evidence budget
    for chunk in chunks:
        assert estimate_total_tokens(chunk.context) <= limits.max_context_tokens
        assert chunk.context_truncated_ids == []


def test_a_replys_oversized_root_and_parent_are_truncated_and_the_window_reports_it(
    engine: Engine,
) -> None:
    """One reply's root and parent alone outgrow the context budget: the window still runs
    with both in context, shortened visibly, and its metadata counts them."""
    workspace(engine)
    long = "connection pool exhausted at payments.pool.acquire(timeout=30) " * 50
    root_at = T0 - timedelta(hours=1)
    seen: list[SynthesisChunk] = []

    class Seeing(RuleSynthesizer):
        def synthesize(self, chunk: SynthesisChunk) -> SynthesisResult:
            seen.append(chunk)
            return super().synthesize(chunk)

    with engine.begin() as conn:
        _store(conn, long, "om_root", root_at)
        _store(
            conn,
            long,
            "om_first",
            root_at + timedelta(minutes=30),
            thread_id="omt_1",
            root_id="om_root",
            parent_id="om_root",
        )
        _store(
            conn,
            "rolled back the pool change, error rate back to normal",
            "om_reply",
            T0 + timedelta(seconds=30),
            thread_id="omt_1",
            root_id="om_root",
            parent_id="om_first",
        )
    config = settings(synthesis_max_prompt_tokens=1000)
    report = WindowRunner(engine, config, Seeing()).run(REF, owner="run-1")

    assert report.status in (RunStatus.COMPLETED, RunStatus.IGNORED)
    [chunk] = seen
    assert _missing(seen) == []
    assert len(chunk.context_truncated_ids) == 2
    assert all("[truncated" in item.text for item in chunk.context)
    assert estimate_total_tokens(chunk.context) <= chunk_limits(config).max_context_tokens
    assert report.metadata()["context_truncated"] == 2
    with engine.connect() as conn:
        state = sync_states.get(conn, report.state_id or 0)
    assert state is not None and state.metadata["context_truncated"] == 2
