"""A database that does not answer: 503 so that Lark redelivers, and nothing half-written."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, text

from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.http.app import create_app
from timeline_pipeline.receiver.router import EVENTS_PATH
from timeline_pipeline_tests.receiver.conftest import (
    FakeClock,
    ReceiverFactory,
    add_workspace,
    make_settings,
)
from timeline_pipeline_tests.receiver.lark_events import recall, receive, sign


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def unreachable(db_url: str, tmp_path: Path) -> Iterator[Engine]:
    """The same kind of database, but one that cannot be reached."""
    if db_url.startswith("sqlite"):
        url = f"sqlite:///{tmp_path}"  # a directory: "unable to open database file"
    else:
        url = f"postgresql+psycopg://postgres@127.0.0.1:{_closed_port()}/gone"
    broken = make_engine(url)
    yield broken
    broken.dispose()


def test_an_unreachable_database_answers_503_and_stores_nothing(
    make_receiver: ReceiverFactory, engine: Engine, unreachable: Engine
) -> None:
    add_workspace(engine)
    receiver = make_receiver(engine_override=unreachable)

    message = receiver.post(receive("om_1"))
    recalled = receiver.post(recall("om_1"))
    health = receiver.client.get("/healthz")

    for response in (message, recalled):
        assert response.status_code == 503
        assert response.json() == {"status": "retry", "reason": "database_unavailable"}
    assert health.status_code == 503
    assert receiver.metric("timeline_lark_events_failed_total", reason="database_unavailable") == 2
    assert receiver.rows() == []


@pytest.mark.postgres_only
def test_a_failure_in_the_middle_of_a_fan_out_leaves_no_row_at_all(pg_url: str) -> None:
    """The second workspace's insert fails as a server shutdown would; the first is rolled back."""
    engine = make_engine(pg_url)
    try:
        add_workspace(engine, "inc-1")
        add_workspace(engine, "inc-2")
        with engine.begin() as conn:
            conn.execute(
                text(
                    """
                    CREATE FUNCTION refuse_inc_2() RETURNS trigger AS $$
                    BEGIN
                        IF NEW.workspace_id = 'inc-2' THEN
                            RAISE EXCEPTION 'terminating connection' USING ERRCODE = '57P01';
                        END IF;
                        RETURN NEW;
                    END $$ LANGUAGE plpgsql;
                    CREATE TRIGGER refuse_inc_2 BEFORE INSERT ON workspace_timeline_evidence
                        FOR EACH ROW EXECUTE FUNCTION refuse_inc_2();
                    """
                )
            )
        app = create_app(make_settings(), engine, clock=FakeClock())
        signed = sign(receive("om_1"))
        with TestClient(app) as client:
            response = client.post(EVENTS_PATH, content=signed.body, headers=signed.headers)

        assert response.status_code == 503
        with engine.connect() as conn:
            count = conn.execute(text("SELECT count(*) FROM workspace_timeline_evidence"))
            assert count.scalar_one() == 0
    finally:
        engine.dispose()
