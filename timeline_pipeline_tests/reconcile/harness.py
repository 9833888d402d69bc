"""Real parts for reconciliation tests: the local Lark on loopback, the real LarkClient, the
product database of the `engine` fixture, and the runner. No mocks.

Times are anchored on the real clock (the receiver and Dagster runs use it), rounded to the
minute so that the tables of expected ranges stay readable.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, func, select

from timeline_pipeline.db.schema import workspace_timeline_evidence as ev
from timeline_pipeline.domain.evidence import EvidenceCursor, EvidenceRow
from timeline_pipeline.domain.keys import (
    SOURCE_LARK,
    SOURCE_TYPE_LARK_MESSAGES,
    chat_checkpoint_key,
)
from timeline_pipeline.domain.sync_states import SyncState
from timeline_pipeline.domain.workspaces import Workspace
from timeline_pipeline.ingest.eligibility import AUTOMATIC, Scope
from timeline_pipeline.lark.client import LarkClient
from timeline_pipeline.lark.client_factory import client_config
from timeline_pipeline.lark.simulator import ChatStore, SimulatorServer, make_chat_messages
from timeline_pipeline.reconcile.planning import Mode
from timeline_pipeline.reconcile.report import RunReport
from timeline_pipeline.reconcile.runner import Reconciler
from timeline_pipeline.reconcile.targets import Target, automatic_targets
from timeline_pipeline.settings import LarkTimelineSettings, load_timeline_settings
from timeline_pipeline.store import evidence, sync_states, workspaces

NOW = datetime.now(UTC).replace(second=0, microsecond=0)
CHAT = "oc_incident_main"
SECRET = "reconcile-test-secret"
PAGE = 50


def reconcile_settings(**overrides: Any) -> LarkTimelineSettings:
    """Feature on, short backoffs, two attempts per call: failures surface in milliseconds."""
    values: dict[str, Any] = {
        "enabled": True,
        "reconciliation_enabled": True,
        "lark_max_attempts": 2,
        "retry_backoff_base": "1ms",
        "retry_backoff_cap": "5ms",
        "max_retry_after": "5ms",
        **overrides,
    }
    return load_timeline_settings(**values)


def messages(
    count: int,
    *,
    start: datetime,
    chat_id: str = CHAT,
    seed: int = 1,
    thread_every: int = 0,
    interval_seconds: float = 20.0,
) -> list[dict[str, Any]]:
    return make_chat_messages(
        chat_id,
        start,
        count,
        seed=seed,
        thread_every=thread_every,
        interval_seconds=interval_seconds,
    )


def chat_listed(items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a chat listing shows: everything but replies inside threads."""
    return [i for i in items if not (i.get("root_id") and i.get("thread_id"))]


def reply_to(root: dict[str, Any], message_id: str, at_ms: int) -> dict[str, Any]:
    """A reply inside `root`'s thread, hidden from the chat listing like Lark hides it."""
    return {
        **messages(2, start=NOW, seed=9)[1],
        "message_id": message_id,
        "create_time": str(at_ms),
        "update_time": str(at_ms),
        "thread_id": root["thread_id"],
        "root_id": root["message_id"],
        "parent_id": root["message_id"],
    }


@dataclass
class Harness:
    engine: Engine
    sim: SimulatorServer
    settings: LarkTimelineSettings
    exits: ExitStack = field(default_factory=ExitStack)

    # ---------------------------------------------------------------- setup

    def workspace(
        self,
        workspace_id: str = "inc-1",
        *,
        created_at: datetime | None = None,
        status: str = "firing",
        chats: Sequence[str] = (CHAT,),
    ) -> Workspace:
        with self.engine.begin() as conn:
            made = workspaces.create(
                conn, workspace_id, status=status, created_at=created_at or NOW - timedelta(hours=6)
            )
            for chat_id in chats:
                workspaces.bind_chat(conn, workspace_id, chat_id)
        return made

    def client(self, *, app_secret: str | None = None) -> LarkClient:
        return LarkClient(
            client_config(
                self.settings,
                app_id=self.sim.app_id,
                app_secret=app_secret or self.sim.app_secret,
                base_url=self.sim.base_url,
            )
        )

    def reconciler(self, *, app_secret: str | None = None) -> Reconciler:
        return Reconciler(
            self.engine,
            self.client(app_secret=app_secret),
            self.settings,
            app_id=self.sim.app_id,
        )

    # ---------------------------------------------------------------- running

    def run(
        self,
        targets: Sequence[Target] | None = None,
        *,
        mode: Mode = Mode.INCREMENTAL,
        scope: Scope = AUTOMATIC,
        now: datetime = NOW,
        reconciler: Reconciler | None = None,
    ) -> RunReport:
        """Reconcile the given targets, or what an automatic scan would pick at `now`."""
        skipped = None
        if targets is None:
            with self.engine.connect() as conn:
                targets, skipped = automatic_targets(conn, self.settings, now)
        return (reconciler or self.reconciler()).run(
            targets, mode=mode, scope=scope, now=now, workspaces_skipped=skipped
        )

    def target(self, workspace_id: str = "inc-1", chat_id: str = CHAT) -> Target:
        with self.engine.connect() as conn:
            return Target(workspaces.require(conn, workspace_id), chat_id)

    # ---------------------------------------------------------------- reading

    def evidence(self, workspace_id: str = "inc-1") -> list[EvidenceRow]:
        """Every evidence row of the workspace, in (occurred_at, id) order."""
        rows: list[EvidenceRow] = []
        with self.engine.connect() as conn:
            while True:
                after = EvidenceCursor(rows[-1].occurred_at, rows[-1].id) if rows else None
                batch = evidence.page(conn, workspace_id, after=after, limit=1000)
                rows.extend(batch)
                if len(batch) < 1000:
                    return rows

    def message_ids(self, workspace_id: str = "inc-1") -> set[str]:
        return {row.source_key.rsplit("/", 1)[1] for row in self.evidence(workspace_id)}

    def evidence_count(self, workspace_id: str = "inc-1") -> int:
        with self.engine.connect() as conn:
            return int(
                conn.execute(
                    select(func.count()).where(ev.c.workspace_id == workspace_id)
                ).scalar_one()
            )

    def checkpoint(self, workspace_id: str = "inc-1", chat_id: str = CHAT) -> SyncState:
        with self.engine.connect() as conn:
            state = sync_states.get_by_key(
                conn,
                workspace_id,
                SOURCE_LARK,
                SOURCE_TYPE_LARK_MESSAGES,
                chat_checkpoint_key(chat_id),
            )
        assert state is not None
        return state

    @property
    def page_requests(self) -> int:
        return self.sim.page_requests


def start_simulator(
    store: ChatStore, exits: ExitStack, *, app_id: str | None = None
) -> SimulatorServer:
    """A fresh app id per simulator: lark-oapi caches tenant tokens per app id, process-wide."""
    return exits.enter_context(
        SimulatorServer(
            store, app_id=app_id or f"cli_rec_{uuid.uuid4().hex[:12]}", app_secret=SECRET
        )
    )
