"""An incident the way the pipeline leaves it in the database: chat messages stored as
evidence, windows synthesized by the real window runner with the real rule synthesizer.

Times are recent (two hours ago), so the windows are inside every lookback the summary and
the sensors apply.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine, func, select

from timeline_pipeline.db.schema import audit_events
from timeline_pipeline.db.schema import workspace_timeline_entries as en
from timeline_pipeline.db.schema import workspace_timeline_summaries as su
from timeline_pipeline.domain.entries import EntryRow
from timeline_pipeline.domain.sync_states import SyncState
from timeline_pipeline.domain.window_keys import WindowRef, window_start_of
from timeline_pipeline.store import entries, sync_states
from timeline_pipeline.synthesis.rules import RuleSynthesizer
from timeline_pipeline.synthesis_run.runner import WindowRunner, WindowRunReport
from timeline_pipeline_tests.support.windows import WINDOW
from timeline_pipeline_tests.windows.support import post, settings, workspace

NOW = datetime.now(UTC)
W1 = window_start_of(NOW - timedelta(hours=2), WINDOW)
W2 = W1 + WINDOW
W3 = W2 + WINDOW
CHAT = "oc_chat"

IMPACT = "checkout latency is above 2s for all EU customers"
ROLLBACK = "we rolled back the deploy of payments-api to v41"
ROOT_CAUSE = "root cause: connection pool exhausted after the config change"
RECOVERED = "error rate back to normal on all shards, recovered"
NEXT_STEP = "next step: add alerting on pool saturation"
CHATTER = ("ok", "thanks!", "+1")


def incident(engine: Engine, workspace_id: str = "inc-1", chat: str = CHAT) -> None:
    workspace(engine, workspace_id, (chat,), created_at=NOW - timedelta(hours=3))


def say(
    engine: Engine,
    window_start: datetime,
    texts: Sequence[str],
    *,
    workspace_id: str = "inc-1",
    chat: str = CHAT,
    offset: timedelta = timedelta(minutes=1),
) -> list[int]:
    """Post each text a second apart inside the window; returns the evidence ids."""
    ids: list[int] = []
    for i, text in enumerate(texts):
        at = window_start + offset + timedelta(seconds=i)
        ids += post(
            engine,
            [at],
            workspace_id=workspace_id,
            chat_id=chat,
            text=text,
            prefix=f"m{i}{int(offset.total_seconds())}",
        )
    return ids


def synthesize(
    engine: Engine,
    window_start: datetime,
    *,
    workspace_id: str = "inc-1",
    chat: str = CHAT,
    replay: bool = False,
) -> WindowRunReport:
    """Run the window the way its Dagster partition does (the real runner and rules)."""
    runner = WindowRunner(engine, settings(), RuleSynthesizer())
    return runner.run(WindowRef(workspace_id, chat, window_start), owner="test", replay=replay)


def window_state(
    engine: Engine, window_start: datetime, workspace_id: str = "inc-1", chat: str = CHAT
) -> SyncState:
    ref = WindowRef(workspace_id, chat, window_start)
    with engine.connect() as conn:
        state = sync_states.get_by_key(
            conn, workspace_id, "system", "lark_timeline_window", ref.source_key
        )
    assert state is not None
    return state


def all_entries(engine: Engine, workspace_id: str = "inc-1") -> list[EntryRow]:
    with engine.connect() as conn:
        return entries.list_for_workspace(
            conn, workspace_id, statuses=("draft", "confirmed", "hidden"), limit=1000
        )


def entry_titled(engine: Engine, fragment: str, workspace_id: str = "inc-1") -> EntryRow:
    (found,) = [e for e in all_entries(engine, workspace_id) if fragment.lower() in e.title.lower()]
    return found


def snapshot(engine: Engine) -> tuple[object, ...]:
    """Everything a curation request could change: entries, summaries and the audit count."""
    with engine.connect() as conn:
        rows = conn.execute(select(en).order_by(en.c.id)).all()
        summaries = conn.execute(select(su).order_by(su.c.id)).all()
        audits = conn.execute(select(func.count()).select_from(audit_events)).scalar_one()
    return (tuple(tuple(r) for r in rows), tuple(tuple(s) for s in summaries), audits)
