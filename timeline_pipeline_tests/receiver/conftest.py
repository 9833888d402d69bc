"""A real receiver app over a real database (SQLite and PostgreSQL), driven over ASGI.

`make_receiver(...)` builds the app with settings overrides and returns a `Receiver` whose
`post` signs (and by default encrypts) a payload exactly as Lark does. The app's clock is fixed
at NOW, so workspace age, message age and timestamp skew are deterministic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from timeline_pipeline.db.engine import transaction
from timeline_pipeline.db.schema import workspace_timeline_evidence as ev
from timeline_pipeline.domain.evidence import EvidenceRow
from timeline_pipeline.http.app import create_app
from timeline_pipeline.http.resources import ServeResources
from timeline_pipeline.receiver.bindings import BindingCache
from timeline_pipeline.receiver.router import EVENTS_PATH
from timeline_pipeline.settings import LarkTimelineSettings, RuntimeEnvironment, Settings
from timeline_pipeline.store import evidence, workspaces
from timeline_pipeline_tests.receiver.lark_events import (
    APP_ID,
    CHAT,
    DEFAULT_SIGNING,
    ENCRYPT_KEY,
    NOW,
    TOKEN,
    WORKSPACE_CREATED,
    Signing,
    sign,
)


class FakeClock:
    """Wall-clock time the test controls."""

    def __init__(self, now: datetime = NOW) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, delta: timedelta) -> None:
        self.now += delta


def make_settings(
    *, encrypt_key: str = ENCRYPT_KEY, token: str = TOKEN, **timeline: Any
) -> Settings:
    flags = {"enabled": True, "event_ingestion_enabled": True, **timeline}
    runtime = RuntimeEnvironment(
        LARK_VERIFICATION_TOKEN=token, LARK_ENCRYPT_KEY=encrypt_key, LARK_APP_ID=APP_ID
    )
    return Settings(LarkTimelineSettings(**flags), runtime)


def add_workspace(
    engine: Engine,
    workspace_id: str = "inc-1",
    *,
    chats: tuple[str, ...] = (CHAT,),
    status: str = "firing",
    created_at: datetime = WORKSPACE_CREATED,
    type_: str = "incident",
) -> None:
    with transaction(engine) as conn:
        workspaces.create(conn, workspace_id, status=status, created_at=created_at, type_=type_)
        for chat in chats:
            workspaces.bind_chat(conn, workspace_id, chat)


def all_rows(engine: Engine) -> list[EvidenceRow]:
    """Every evidence row, by workspace then (occurred_at, id)."""
    with engine.connect() as conn:
        owners = conn.execute(select(ev.c.workspace_id).distinct().order_by(ev.c.workspace_id))
        return [row for wid in owners.scalars() for row in evidence.page(conn, wid, limit=10_000)]


@dataclass
class Receiver:
    client: TestClient
    engine: Engine
    state: ServeResources
    clock: FakeClock

    def post(self, payload: dict[str, Any], signing: Signing = DEFAULT_SIGNING) -> Any:
        signed = sign(payload, signing)
        return self.client.post(EVENTS_PATH, content=signed.body, headers=signed.headers)

    def post_raw(self, body: bytes, headers: dict[str, str] | None = None) -> Any:
        return self.client.post(EVENTS_PATH, content=body, headers=headers or {})

    def rows(self) -> list[EvidenceRow]:
        return all_rows(self.engine)

    def metric(self, name: str, **labels: str) -> float:
        value = self.state.metrics.registry.get_sample_value(name, labels)
        return 0.0 if value is None else value


ReceiverFactory = Callable[..., Receiver]


@pytest.fixture
def make_receiver(engine: Engine) -> Iterator[ReceiverFactory]:
    with ExitStack() as stack:

        def build(
            *,
            engine_override: Engine | None = None,
            bindings: BindingCache | None = None,
            clock: FakeClock | None = None,
            encrypt_key: str = ENCRYPT_KEY,
            **timeline: Any,
        ) -> Receiver:
            used_clock = clock or FakeClock()
            app = create_app(
                make_settings(encrypt_key=encrypt_key, **timeline),
                engine_override or engine,
                clock=used_clock,
                bindings=bindings,
            )
            client = stack.enter_context(TestClient(app))
            return Receiver(client, engine, app.state.resources, used_clock)

        yield build


@pytest.fixture
def receiver(make_receiver: ReceiverFactory, engine: Engine) -> Receiver:
    """Ingestion on, encrypted callbacks, workspace `inc-1` (firing, 1 h old) bound to CHAT."""
    add_workspace(engine)
    return make_receiver()
