"""A running maintenance listener (real uvicorn on 127.0.0.1, port 0) over a migrated
database, for the listener, driver and CLI tests."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import Engine

from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.migrate import upgrade
from timeline_pipeline.maintenance.listener import (
    MaintenanceListener,
    create_maintenance_app,
    loopback_socket,
)
from timeline_pipeline.maintenance.service import JobService
from timeline_pipeline_tests.maintenance.support import service


@dataclass
class Running:
    service: JobService
    listener: MaintenanceListener

    @property
    def port(self) -> int:
        return self.listener.port


def run_listener(svc: JobService) -> MaintenanceListener:
    listener = MaintenanceListener(
        create_maintenance_app(svc), loopback_socket(0), graceful_timeout=5
    )
    listener.start()
    return listener


@pytest.fixture
def lite_engine(tmp_path: Path) -> Iterator[Engine]:
    """SQLite only: for the HTTP and driver behaviour that does not depend on the database
    (the store and service tests run on both)."""
    made = make_engine(f"sqlite:///{tmp_path / 'timeline.db'}")
    upgrade(made)
    try:
        yield made
    finally:
        made.dispose()


def _running(engine: Engine) -> Iterator[Running]:
    svc = service(engine)
    listener = run_listener(svc)
    try:
        yield Running(svc, listener)
    finally:
        listener.stop()


@pytest.fixture
def running(engine: Engine) -> Iterator[Running]:
    """A listener over each database in turn."""
    yield from _running(engine)


@pytest.fixture
def lite_running(lite_engine: Engine) -> Iterator[Running]:
    yield from _running(lite_engine)
