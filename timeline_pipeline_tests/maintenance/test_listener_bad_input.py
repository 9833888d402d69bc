"""Bad input on the maintenance listener (docs/maintenance.md, "Pause, tune, resume, cancel":
the refusal table): a time that cannot be brought to UTC and an oversized body are answered
400 and 413 with a one-line reason, and nothing is created."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import Engine, func, select

from timeline_pipeline.db.schema import maintenance_jobs as mj
from timeline_pipeline.maintenance.routes import MAX_BODY_BYTES
from timeline_pipeline_tests.maintenance.conftest import Running
from timeline_pipeline_tests.maintenance.support import seed_evidence

OPTIONS = {"batch_size": 10, "delay_ms": 1, "lock_timeout_ms": 200, "statement_timeout_ms": 2000}


def _jobs(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(mj)).scalar_one())


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("since", "0001-01-01T00:00:00+14:00"),
        ("until", "9999-12-31T23:59:59-14:00"),
        ("since", "0001-01-01T00:00:00Z"),
        ("until", "9999-12-31T23:59:59Z"),
    ],
)
def test_a_rerun_time_out_of_range_is_refused_400(
    lite_running: Running, lite_engine: Engine, name: str, value: str
) -> None:
    seed_evidence(lite_engine, 1)
    body = {
        "type": "window_rerun",
        "idempotency_key": f"far-{name}",
        "parameters": {"workspace_id": "inc-1", "processor_version": "rules-v9", name: value},
        "options": OPTIONS,
    }
    with httpx.Client(base_url=f"http://127.0.0.1:{lite_running.port}", trust_env=False) as c:
        reply = c.post("/maintenance/jobs", json=body)
    assert reply.status_code == 400, reply.text
    detail = reply.json()["detail"]
    assert detail["code"] == "invalid_input"
    assert f"parameters.{name}" in detail["message"] and "\n" not in detail["message"]
    assert _jobs(lite_engine) == 0


def test_an_oversized_body_is_refused_413_before_it_is_read(
    lite_running: Running, lite_engine: Engine
) -> None:
    padding = "x" * (20 * 1024 * 1024)
    body = (
        '{"type": "content_hash_backfill", "idempotency_key": "big", '
        '"parameters": {"workspace_id": "inc-1", "pad": "' + padding + '"}}'
    ).encode()
    with httpx.Client(base_url=f"http://127.0.0.1:{lite_running.port}", trust_env=False) as c:
        declared = c.post("/maintenance/jobs", content=body)
        chunked = c.post("/maintenance/jobs", content=iter([body[:1024], body[1024:]]))
    for reply in (declared, chunked):
        assert reply.status_code == 413, reply.text
        detail = reply.json()["detail"]
        assert detail["code"] == "body_too_large"
        assert str(MAX_BODY_BYTES) in detail["message"]
    assert _jobs(lite_engine) == 0
