"""The real `serve` app (receiver plus the timeline API) over a real database, through
FastAPI's TestClient; tokens minted as `timeline-pipeline token create` mints them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from timeline_pipeline.http.app import create_app
from timeline_pipeline.settings import LarkTimelineSettings, RuntimeEnvironment, Settings
from timeline_pipeline.store import api_tokens
from timeline_pipeline_tests.curation.support import incident

CURSOR_SECRET = b"test-cursor-secret-0123456789"


def mint(engine: Engine, workspace_id: str) -> str:
    with engine.begin() as conn:
        return api_tokens.create(conn, workspace_id).token


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@dataclass
class Served:
    client: TestClient
    engine: Engine
    token: str
    """A token of workspace inc-1."""
    other_token: str
    """A token of workspace inc-2 (which has its own chat)."""

    @property
    def auth(self) -> dict[str, str]:
        return bearer(self.token)


@pytest.fixture
def served(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> Iterator[Served]:
    monkeypatch.setenv("TIMELINE_API_CURSOR_SECRET", CURSOR_SECRET.decode())
    incident(engine, "inc-1", "oc_chat")
    incident(engine, "inc-2", "oc_other")
    settings = Settings(
        LarkTimelineSettings(), RuntimeEnvironment(LARK_VERIFICATION_TOKEN="vt-test")
    )
    app = create_app(settings, engine)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield Served(client, engine, mint(engine, "inc-1"), mint(engine, "inc-2"))
