"""The demo's incident as the pipeline leaves it, without the demo's servers: the bundled chat
stored as evidence (display names filled as the contact lookup fills them), every window
synthesized by the real window runner with the rule synthesizer, and the summary written by the
deterministic summarizer. A Chinese incident of a `zh-CN` workspace in Asia/Shanghai whose
entries cross local midnight on one UTC day. Plus what a signed-in browser holds: a session
cookie and its CSRF token, minted the way `ui link` and the sign-in route mint them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine

from timeline_pipeline import demo_data
from timeline_pipeline.curation.service import CurationService, NewEntry
from timeline_pipeline.demo.scenario import demo_end, shifted
from timeline_pipeline.domain.entries import DraftWrite, EntrySource, EvidenceRef
from timeline_pipeline.domain.window_keys import WindowRef, window_start_of
from timeline_pipeline.ingest.records import evidence_record
from timeline_pipeline.lark.normalize import normalize_list_item
from timeline_pipeline.security.credentials import csrf_token
from timeline_pipeline.store import evidence, ui_sessions, workspaces
from timeline_pipeline.summary.deterministic import DeterministicSummarizer
from timeline_pipeline.summary.runner import SummaryRunner
from timeline_pipeline.synthesis.rules import RuleSynthesizer
from timeline_pipeline.synthesis_run.draft_writes import upsert_draft
from timeline_pipeline.synthesis_run.runner import WindowRunner
from timeline_pipeline_tests.support.windows import WINDOW
from timeline_pipeline_tests.windows.support import post, settings

DEMO_TITLE = "Checkout latency and 5xx after a payment-gateway config change"


def demo_incident(engine: Engine, workspace_id: str = "demo-ui") -> int:
    """Stores and synthesizes the demo chat in a new workspace; returns the message count."""
    now = datetime.now(UTC)
    timeline = settings(summary_enabled=True)
    end = demo_end(now, timeline.synthesis_window, timeline.synthesis_window_close_grace)
    scenario = shifted(demo_data.load_messages(), end)
    with engine.begin() as conn:
        workspaces.create(
            conn, workspace_id, created_at=scenario.workspace_created_at, title=DEMO_TITLE
        )
        workspaces.bind_chat(conn, workspace_id, demo_data.CHAT_ID)
        records = [
            evidence_record(normalize_list_item(item, max_text_chars=4000), workspace_id)
            for item in scenario.messages
        ]
        evidence.upsert_many(conn, records, now=now)
        evidence.fill_display_names(conn, workspace_id, demo_data.load_users())
    runner = WindowRunner(engine, timeline, RuleSynthesizer())
    for start in sorted({window_start_of(r.occurred_at, WINDOW) for r in records}):
        runner.run(WindowRef(workspace_id, demo_data.CHAT_ID, start), owner="test")
    SummaryRunner(engine, DeterministicSummarizer(), enabled=True).run(workspace_id)
    return len(records)


SPIKE_AT = datetime(2026, 12, 4, 15, 40, 5, tzinfo=UTC)
"""23:40:05 on 4 December in Shanghai (UTC+8)."""
ROLLED_BACK_AT = datetime(2026, 12, 4, 16, 12, 30, tzinfo=UTC)
"""00:12:30 on 5 December in Shanghai: the same UTC day, the next local one."""
SPIKE = "支付网关 p99 飙到 3s，订单失败率 12%"
ROLLED_BACK = "rollback 已经完成了，成功率回到 99.9%"


@dataclass(frozen=True, slots=True)
class ChineseIncident:
    workspace_id: str
    draft_id: int
    """An AI draft at SPIKE_AT (impact), bound to the SPIKE message."""
    human_id: int
    """A curator's confirmed entry at ROLLED_BACK_AT (recovery), bound to ROLLED_BACK."""
    evidence_ids: tuple[int, int]


def chinese_incident(
    engine: Engine,
    workspace_id: str,
    *,
    chat: str = "oc_zh",
    time_zone: str = "Asia/Shanghai",
    locale: str = "zh-CN",
) -> ChineseIncident:
    """A `zh-CN` workspace (or `locale`) in `time_zone` with a draft and a curator's entry that
    cross local midnight (Shanghai's) within one UTC day, each bound to its Chinese message."""
    with engine.begin() as conn:
        workspaces.create(
            conn,
            workspace_id,
            created_at=SPIKE_AT - timedelta(hours=1),
            title="支付网关超时",
            locale=locale,
            time_zone=time_zone,
        )
        workspaces.bind_chat(conn, workspace_id, chat)
    [spike] = post(engine, [SPIKE_AT], workspace_id=workspace_id, chat_id=chat, text=SPIKE)
    [rolled_back] = post(
        engine, [ROLLED_BACK_AT], workspace_id=workspace_id, chat_id=chat, text=ROLLED_BACK
    )
    with engine.begin() as conn:
        [row] = evidence.get_many(conn, workspace_id, [spike])
        draft = DraftWrite(
            workspace_id=workspace_id,
            fingerprint=f"zh-spike-{workspace_id}",
            occurred_at=SPIKE_AT,
            title="支付网关 p99 飙到 3s，订单失败率 12%",
            category="impact",
            evidence=[EvidenceRef(row.id, row.content_hash)],
            source=EntrySource.AI,
        )
        draft_id = upsert_draft(conn, draft, now=SPIKE_AT).entry_id
    assert draft_id is not None
    human = CurationService(engine).add(
        workspace_id,
        NewEntry(ROLLED_BACK_AT, "回滚完成，成功率恢复", "recovery", evidence_ids=[rolled_back]),
        actor="test",
    )
    return ChineseIncident(workspace_id, draft_id, human.id, (spike, rolled_back))


def sign_in_token(
    engine: Engine,
    workspace_id: str,
    *,
    ttl: timedelta = timedelta(minutes=10),
    now: datetime | None = None,
) -> str:
    with engine.begin() as conn:
        return ui_sessions.create_link(
            conn, workspace_id, now=now or datetime.now(UTC), ttl=ttl
        ).token


def session(engine: Engine, workspace_id: str) -> tuple[str, str]:
    """(cookie value, CSRF token) of a fresh session of the workspace."""
    with engine.begin() as conn:
        issued = ui_sessions.open_session(
            conn, workspace_id, link_id=None, now=datetime.now(UTC), ttl=timedelta(hours=1)
        )
    return issued.secret, csrf_token(issued.secret)
