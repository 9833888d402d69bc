"""The lifecycle assets in Dagster: the purge retires purged windows' partitions and their
runs, and its checks fail on a held row gone or an archive that does not verify."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from sqlalchemy import Engine

from timeline_pipeline.domain.window_keys import WindowRef
from timeline_pipeline.lifecycle.archive import LocalDirectoryArchive
from timeline_pipeline.orchestration.lifecycle import (
    HELD_CHECK,
    MANIFEST_CHECK,
    held_rows_check,
    lifecycle_dry_run,
    lifecycle_purge,
    manifest_check,
)
from timeline_pipeline.orchestration.resources import DatabaseResource
from timeline_pipeline.orchestration.windows import WINDOW_PARTITIONS, window_partitions
from timeline_pipeline_tests.lifecycle.support import window, workspace
from timeline_pipeline_tests.support.windows import WINDOW

WINDOWS_KEY = "sync_states.workspace_timeline_sync_states"
NOW = datetime.now(UTC).replace(second=0, microsecond=0)
OLD = (NOW - timedelta(days=200)).replace(minute=0)


@pytest.fixture(scope="module")
def instance() -> Iterator[dg.DagsterInstance]:
    with dg.instance_for_test() as made:
        yield made


@dg.asset(partitions_def=window_partitions)
def window_stand_in() -> None:
    """Gives a window partition a finished run, as a synthesis run would."""


def key(start: datetime) -> str:
    return WindowRef("inc-1", "oc_1", start).partition_key


def runs_of(instance: dg.DagsterInstance, partition: str) -> int:
    return len(instance.get_run_records(dg.RunsFilter(tags={"dagster/partition": partition})))


def test_a_purge_removes_the_purged_windows_partitions_and_their_runs(
    db_url: str, engine: Engine, instance: dg.DagsterInstance
) -> None:
    workspace(engine, "inc-1")
    old = [OLD + i * WINDOW for i in range(3)]
    young = NOW - timedelta(days=1, minutes=NOW.minute % 10)
    for start in old:
        window(engine, "inc-1", start, "completed")
    window(engine, "inc-1", young, "completed")
    keys = [key(s) for s in [*old, young]]
    instance.add_dynamic_partitions(WINDOW_PARTITIONS, keys)
    dg.materialize([window_stand_in], instance=instance, partition_key=keys[0])
    assert runs_of(instance, keys[0]) == 1

    result = dg.materialize(
        [lifecycle_dry_run, lifecycle_purge],
        instance=instance,
        resources={"database": DatabaseResource(url=db_url)},
    )
    assert result.success
    remaining = set(instance.get_dynamic_partitions(WINDOW_PARTITIONS))
    assert key(young) in remaining
    assert not remaining & set(keys[:3])
    assert runs_of(instance, keys[0]) == 0
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks == {HELD_CHECK: True, MANIFEST_CHECK: True}
    meta = result.asset_materializations_for_node("lifecycle_purge")[0].metadata
    assert meta["purged"].value == 3
    assert meta["window_partitions_removed"].value == 3
    for name in ("scanned", "held", "archived", "batches", "duration_seconds", "per_descriptor"):
        assert name in meta
    instance.delete_dynamic_partition(WINDOW_PARTITIONS, key(young))


def test_the_held_rows_check_fails_when_a_held_row_is_gone() -> None:
    kept = held_rows_check({("evidence.x", "inc-1"): 3}, {("evidence.x", "inc-1"): 3})
    lost = held_rows_check({("evidence.x", "inc-1"): 3}, {("evidence.x", "inc-1"): 2})
    assert kept.passed
    assert not lost.passed
    assert lost.severity == dg.AssetCheckSeverity.ERROR


def test_the_manifest_check_fails_when_a_part_was_altered(tmp_path: Path) -> None:
    archive = LocalDirectoryArchive(tmp_path)
    archive.open_run("run_1", NOW)
    rows: list[dict[str, Any]] = [{"id": 1, "occurred_at": NOW}, {"id": 2, "occurred_at": NOW}]
    part = archive.write_part("evidence.x", rows, "occurred_at")
    manifest = archive.manifest_location()
    assert manifest_check(manifest).passed
    (tmp_path / "run_1" / part.file).write_bytes(gzip.compress(b'{"id": 1}\n'))
    failed = manifest_check(manifest)
    assert not failed.passed
    assert "sha256 does not match" in (failed.description or "")


def test_a_cli_purge_retires_partitions_that_the_sensor_forgets_once(
    db_url: str, engine: Engine, instance: dg.DagsterInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whichever path purged the window states, their keys are durable in the purge's own
    transaction and the sensor forgets them in Dagster, idempotently."""
    from click.testing import CliRunner
    from sqlalchemy import select

    from timeline_pipeline.cli.main import cli
    from timeline_pipeline.db.schema import lifecycle_retired_partitions
    from timeline_pipeline.orchestration.lifecycle import lifecycle_partitions_sensor

    monkeypatch.setenv("TIMELINE_DATABASE_URL", db_url)
    workspace(engine, "inc-1")
    starts = [OLD + i * WINDOW for i in range(2)]
    for start in starts:
        window(engine, "inc-1", start, "completed")
    keys = [key(s) for s in starts]
    instance.add_dynamic_partitions(WINDOW_PARTITIONS, keys)
    result = CliRunner().invoke(cli, ["lifecycle", "run", "--descriptor", WINDOWS_KEY])
    assert result.exit_code == 0, result.output
    assert set(keys) <= set(instance.get_dynamic_partitions(WINDOW_PARTITIONS))
    database = DatabaseResource(url=db_url)
    for _ in range(2):  # a second tick finds nothing left and changes nothing
        with dg.build_sensor_context(
            instance=instance, resources={"database": database}
        ) as context:
            lifecycle_partitions_sensor(context)
    assert not set(keys) & set(instance.get_dynamic_partitions(WINDOW_PARTITIONS))
    rp = lifecycle_retired_partitions
    with engine.connect() as conn:
        rows = conn.execute(select(rp.c.partition_key, rp.c.status)).all()
    assert sorted(rows) == sorted((k, "done") for k in keys)


def test_a_released_hold_requests_a_purge_run(db_url: str, engine: Engine) -> None:
    from timeline_pipeline.lifecycle.holds import create_hold, release_hold
    from timeline_pipeline.lifecycle.registry import load_registry
    from timeline_pipeline.orchestration.lifecycle import lifecycle_hold_released_sensor

    workspace(engine, "inc-1")
    database = DatabaseResource(url=db_url)

    def tick(cursor: str | None) -> dg.SensorResult:
        with (
            dg.instance_for_test() as scratch,
            dg.build_sensor_context(
                instance=scratch, cursor=cursor, resources={"database": database}
            ) as context,
        ):
            made = lifecycle_hold_released_sensor(context)
        assert isinstance(made, dg.SensorResult)
        return made

    with engine.begin() as conn:
        held = create_hold(
            conn,
            load_registry(),
            workspace_id="inc-1",
            descriptor_key=None,
            reason="preservation notice 21",
            idempotency_key="n-21",
            actor="cli:counsel",
        ).hold
    assert not tick("").run_requests
    with engine.begin() as conn:
        release_hold(
            conn,
            hold_id=held.id,
            reason="matter closed, counsel approved",
            idempotency_key="r-21",
            actor="cli:counsel",
        )
    asked = tick("")
    assert len(asked.run_requests or []) == 1
    assert not tick(asked.cursor).run_requests
