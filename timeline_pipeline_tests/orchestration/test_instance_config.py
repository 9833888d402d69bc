"""Dagster's two instance configurations (docs/dagster.md).

The repository root's `dagster.yaml` is what a bare `dagster dev` reads: Dagster's embedded
storage, no variable needed. `deploy/dagster.yaml` is production: PostgreSQL storage through
psycopg2 (a materialization writes run events, which is exactly where a bare postgresql:// URL
fails: dagster-postgres's NOTIFY under psycopg 3). Both carry the same run queue, pools and
limits, so a run behaves the same under either.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import psycopg
import pytest
import yaml

from timeline_pipeline.windows.run_queue import TAG_COLLECTION
from timeline_pipeline_tests.conftest import PG_ADMIN_URL

REPO = Path(__file__).resolve().parents[2]
EMBEDDED = REPO / "dagster.yaml"
PRODUCTION = REPO / "deploy" / "dagster.yaml"


def _load(path: Path) -> dict[str, Any]:
    config = yaml.safe_load(path.read_text())
    assert isinstance(config, dict)
    return config


def _tag_limits(instance: dg.DagsterInstance) -> dict[tuple[str, str], int]:
    return {
        (limit["key"], str(limit.get("value"))): limit["limit"]
        for limit in instance.get_concurrency_config().run_queue_config.tag_concurrency_limits
    }


def _materializes(instance: dg.DagsterInstance) -> bool:
    @dg.asset
    def probe() -> int:
        return 1

    result = dg.materialize([probe], instance=instance)
    return result.success and instance.get_latest_materialization_event(probe.key) is not None


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
    # instance_for_test takes the production file as its configuration and, unlike a bare
    # from_config, scopes Dagster's process-wide state to this instance.
    with dg.instance_for_test(overrides=_load(PRODUCTION), temp_dir=str(tmp_path)) as instance:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
        assert type(instance.run_coordinator).__name__ == "QueuedRunCoordinator"
        limits = _tag_limits(instance)
        assert limits[("timeline/synthesis", "None")] == 2
        assert limits[("timeline/workspace", "{'applyLimitPerUniqueValue': True}")] == 1
        # the two collection schedules' runs wait for each other instead of skipping a tick
        assert limits[(TAG_COLLECTION, "None")] == 1
        assert _materializes(instance)
        # The storage holds its connections open (PooledPostgresStorage) instead of opening
        # one per event: after a run, this process still has connections to the database.
        assert _connections_to(dagster_pg_url) >= 1


def _connections_to(url: str) -> int:
    name = url.rsplit("/", 1)[1]
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        row = admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_the_embedded_default_loads_without_any_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DAGSTER_PG_URL", raising=False)
    with dg.instance_for_test(overrides=_load(EMBEDDED), temp_dir=str(tmp_path)) as instance:
        assert type(instance.run_storage).__name__ == "SqliteRunStorage"
        assert type(instance.run_coordinator).__name__ == "QueuedRunCoordinator"
        assert instance.get_concurrency_config().pool_config.default_pool_limit == 2
        assert _tag_limits(instance)[("timeline/synthesis", "None")] == 2
        assert _materializes(instance)


def test_both_configurations_carry_the_same_queue_pools_and_limits() -> None:
    embedded, production = _load(EMBEDDED), _load(PRODUCTION)
    assert "storage" not in embedded  # Dagster's default: SQLite in the instance's home
    storage = production.pop("storage")["custom"]
    assert storage["class"] == "PooledPostgresStorage"
    assert storage["config"]["postgres_url"] == {"env": "DAGSTER_PG_URL"}
    assert embedded == production
    assert {"run_coordinator", "concurrency", "run_monitoring"} <= embedded.keys()


def test_a_bare_dagster_definitions_validate_works_in_the_repository_root() -> None:
    """A newcomer's first command: no DAGSTER_HOME, no DAGSTER_PG_URL, no -w."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DAGSTER_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    result = subprocess.run(
        [str(Path(sys.executable).parent / "dagster"), "definitions", "validate"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "All code locations passed validation" in result.stderr + result.stdout
