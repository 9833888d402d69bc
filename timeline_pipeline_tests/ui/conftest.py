"""What the page's HTTP tests share: one real `serve` app per test module, on each database."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.migrate import upgrade
from timeline_pipeline.http.app import create_app
from timeline_pipeline.settings import LarkTimelineSettings, RuntimeEnvironment, Settings
from timeline_pipeline_tests.conftest import _drop_pg_database, _fresh_pg_database, _pg_url


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[TestClient, Engine]]:
    """One database and one app per module: each test makes workspaces of its own."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('ui') / 'timeline.db'}"
        upgrade(make_engine(url, null_pool=True))
        name = None
    else:
        name = _fresh_pg_database(request.getfixturevalue("pg_template"))
        url = _pg_url(name)
    engine = make_engine(url)
    settings = Settings(LarkTimelineSettings(), RuntimeEnvironment(LARK_VERIFICATION_TOKEN="vt"))
    try:
        with TestClient(create_app(settings, engine), raise_server_exceptions=False) as client:
            yield client, engine
    finally:
        engine.dispose()
        if name is not None:
            _drop_pg_database(name)
