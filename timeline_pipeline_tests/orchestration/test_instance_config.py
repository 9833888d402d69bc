"""The production `dagster.yaml`: PostgreSQL storage through psycopg2, the queued coordinator
and the synthesis and collection concurrency limits. A materialization writes run events,
which is exactly where a bare postgresql:// URL fails (dagster-postgres's NOTIFY under
psycopg 3)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import psycopg
import pytest
import yaml

from timeline_pipeline.orchestration.collection import COLLECTION_TAG
from timeline_pipeline_tests.conftest import PG_ADMIN_URL

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def dagster_pg_url() -> Iterator[str]:
    name = f"tp_dagster_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    base = PG_ADMIN_URL.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg2://", 1)
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_production_instance_runs_on_postgresql_with_the_concurrency_limits(
    tmp_path: Path, dagster_pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_PG_URL", dagster_pg_url)
    config = yaml.safe_load((REPO / "dagster.yaml").read_text())
    # instance_for_test takes the production file as its configuration and, unlike a bare
    # from_config, scopes Dagster's process-wide state to this instance.
    with dg.instance_for_test(overrides=config, temp_dir=str(tmp_path)) as instance:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
        assert type(instance.run_coordinator).__name__ == "QueuedRunCoordinator"
        limits = {
            (limit["key"], str(limit.get("value"))): limit["limit"]
            for limit in instance.get_concurrency_config().run_queue_config.tag_concurrency_limits
        }
        assert limits[("timeline/synthesis", "None")] == 2
        assert limits[("timeline/workspace", "{'applyLimitPerUniqueValue': True}")] == 1
        # the two collection schedules' runs wait for each other instead of skipping a tick
        assert limits[(COLLECTION_TAG, "None")] == 1

        @dg.asset
        def probe() -> int:
            return 1

        assert dg.materialize([probe], instance=instance).success
        assert instance.get_latest_materialization_event(dg.AssetKey("probe")) is not None
