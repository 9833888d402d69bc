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
from timeline_pipeline.store import evidence
from timeline_pipeline.synthesis_run.core import context_candidates, read_window, window_chunks
from timeline_pipeline.synthesis_run.drafts import evidence_item
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


def _store_threads(engine: Engine) -> None:
    """60 threads rooted an hour before the window (far before the 5-minute lookback), each
    with a first reply half an hour later and a reply to that reply inside the window."""
    with engine.begin() as conn:
        for n in range(THREADS):
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
                T0 + timedelta(seconds=5 * n),
                thread_id=thread,
                root_id=root,
                parent_id=first,
            )


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
    missing = [
        (reply.message_id, anchor)
        for chunk in chunks
        for reply in chunk.evidence
        for anchor in (reply.root_id, reply.parent_id)
        if anchor not in {c.message_id for c in chunk.context}
    ]
    assert missing == []
