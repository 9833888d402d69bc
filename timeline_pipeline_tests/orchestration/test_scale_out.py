"""The scale-out configuration (docs/deployment.md): the executor choice in definitions.py, the
Celery workers' file, the two deploy/ instance files, and the workers' status asset.

The instance files are loaded through Dagster's own instance config loader and, for the
Kubernetes run launcher, validated against the launcher's schema (it cannot be instantiated
without a cluster). The system test `system/test_scale_out.py` runs the Celery deployment.
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml
from dagster._config import process_config
from dagster._core.instance.config import dagster_instance_config
from kombu import Connection, Exchange, Producer, Queue

from timeline_pipeline.orchestration import scale_out
from timeline_pipeline.orchestration.resources import DatabaseResource, TimelineSettingsResource
from timeline_pipeline.orchestration.scale_out import (
    BROKER_ENV,
    QUEUE_CAPACITY_CHECK,
    RESULT_BACKEND,
    WORKER_SETTINGS,
    WORKERS_ONLINE_CHECK,
    QueueState,
    WorkerState,
    celery_config,
    celery_synthesis_executor,
    executor_choice,
    measure_queue,
    workers_outcome,
)
from timeline_pipeline.orchestration.windows import SYNTHESIS_JOB, window_defs
from timeline_pipeline.windows.run_queue import TAG_SYNTHESIS

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
BROKER = "pyamqp://guest:guest@127.0.0.1:5672//"
WORKERS = 2
"""deploy/celery/dagster.yaml is sized for two workers (its header says so)."""


def _load(path: Path) -> dict[str, Any]:
    config = yaml.safe_load(path.read_text())
    assert isinstance(config, dict)
    return config


def _loaded_by_dagster(path: Path, tmp_path: Path) -> dict[str, Any]:
    """The file as `$DAGSTER_HOME/dagster.yaml`, through Dagster's instance config loader."""
    home = tmp_path / uuid.uuid4().hex[:8]
    home.mkdir()
    shutil.copy(path, home / "dagster.yaml")
    config, _ = dagster_instance_config(str(home))
    return dict(config)


def _limits(config: dict[str, Any]) -> dict[str, int]:
    return {i["key"]: i["limit"] for i in config["concurrency"]["runs"]["tag_concurrency_limits"]}


# --- the instance files ----------------------------------------------------------------------


def test_the_celery_instance_is_production_with_the_synthesis_limits_of_its_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_PG_URL", "postgresql+psycopg2://dagster@db:5432/dagster")
    loaded = _loaded_by_dagster(DEPLOY / "celery" / "dagster.yaml", tmp_path)
    assert loaded["run_coordinator"]["class"] == "QueuedRunCoordinator"
    per_worker = _load(DEPLOY / "celery.yaml")["execution"]["config"]["config_source"][
        "worker_concurrency"
    ]
    celery, production = _load(DEPLOY / "celery" / "dagster.yaml"), _load(DEPLOY / "dagster.yaml")
    assert _limits(celery)[TAG_SYNTHESIS] == WORKERS * per_worker
    assert celery["concurrency"]["pools"]["default_limit"] == WORKERS * per_worker
    # Everything else is the production file's: the per-workspace limit above all.
    for config in (celery, production):
        config["concurrency"]["pools"].pop("default_limit")
        for limit in config["concurrency"]["runs"]["tag_concurrency_limits"]:
            if limit["key"] == TAG_SYNTHESIS:
                limit.pop("limit")
    assert celery == production


def test_the_kubernetes_example_is_accepted_by_the_loader_and_the_launchers_schema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_PG_URL", "postgresql+psycopg2://dagster@db:5432/dagster")
    monkeypatch.setenv("TIMELINE_JOB_IMAGE", "registry.example.com/timeline-pipeline:0.1.0")
    loaded = _loaded_by_dagster(DEPLOY / "k8s" / "dagster.yaml", tmp_path)
    launcher = loaded["run_launcher"]
    assert (launcher["module"], launcher["class"]) == ("dagster_k8s", "K8sRunLauncher")
    klass = getattr(importlib.import_module(launcher["module"]), launcher["class"])
    checked = process_config(klass.config_type(), launcher["config"])
    assert checked.success, checked.errors
    assert checked.value["job_image"] == "registry.example.com/timeline-pipeline:0.1.0"
    # A misspelt key is refused by the same validation, so the check above means something.
    wrong = process_config(klass.config_type(), {**launcher["config"], "job_imagee": "x"})
    assert not wrong.success
    # Everything but the launcher is the production file.
    example = _load(DEPLOY / "k8s" / "dagster.yaml")
    example.pop("run_launcher")
    assert example == _load(DEPLOY / "dagster.yaml")


@pytest.mark.slow
@pytest.mark.parametrize(("home", "executor"), [("k8s", "in_process"), ("celery", "celery")])
def test_dagster_definitions_validate_accepts_each_deployment(
    home: str, executor: str, tmp_path: Path, empty_db_url: str
) -> None:
    """`dagster definitions validate` opens the instance, so its storage is a real (empty)
    PostgreSQL database here, through the psycopg2 driver the instance files name."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DAGSTER_", "TIMELINE_"))}
    env.update(
        DAGSTER_HOME=str(tmp_path),
        DAGSTER_PG_URL=empty_db_url.replace("postgresql+psycopg://", "postgresql+psycopg2://"),
        TIMELINE_JOB_IMAGE="registry.example.com/timeline-pipeline:0.1.0",
        TIMELINE_EXECUTOR=executor,
        TIMELINE_CELERY_BROKER_URL=BROKER,
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    shutil.copy(DEPLOY / home / "dagster.yaml", tmp_path / "dagster.yaml")
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


# --- the workers' file and the executor ------------------------------------------------------


def test_the_workers_file_passes_the_worker_clis_validation_and_matches_the_executor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dagster_celery.cli import get_validated_config

    monkeypatch.setenv(BROKER_ENV, BROKER)
    validated = get_validated_config(str(DEPLOY / "celery.yaml"))
    assert validated["broker"] == BROKER
    raw = _load(DEPLOY / "celery.yaml")["execution"]["config"]
    executor = celery_config("timeline-synthesis")
    assert raw["broker"] == executor["broker"] == {"env": BROKER_ENV}
    assert raw["backend"] == executor["backend"] == RESULT_BACKEND
    source = raw["config_source"]
    assert {key: source[key] for key in WORKER_SETTINGS} == dict(WORKER_SETTINGS)
    assert source["worker_concurrency"] >= 1
    for module in source["imports"]:
        importlib.import_module(module)
    assert "timeline_pipeline.orchestration.celery_worker" in source["imports"]


def test_the_celery_executors_configuration_is_valid_for_dagster_celery(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dagster_celery import celery_executor

    monkeypatch.setenv(BROKER_ENV, BROKER)
    checked = process_config(celery_executor.config_schema.config_type, celery_config("q-1"))
    assert checked.success, checked.errors
    assert checked.value["broker"] == BROKER
    assert checked.value["config_source"]["task_default_queue"] == "q-1"


def test_the_executor_name_is_checked() -> None:
    assert executor_choice(None) == "in_process"
    assert executor_choice("") == "in_process"
    assert executor_choice("celery") == "celery"
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="TIMELINE_EXECUTOR='k8s'"):
        executor_choice("k8s")


def _with_resources(defs: dg.Definitions) -> dg.Definitions:
    resources = {
        "database": DatabaseResource(url="sqlite://"),
        "timeline_settings": TimelineSettingsResource(),
    }
    return dg.Definitions.merge(dg.Definitions(resources=resources), defs)


def test_window_defs_put_the_synthesis_job_on_the_executor_given() -> None:
    default = _with_resources(window_defs()).resolve_job_def(SYNTHESIS_JOB)
    assert default.executor_def.name == "in_process"
    on_celery = _with_resources(window_defs(synthesis_executor=celery_synthesis_executor("q-1")))
    assert on_celery.resolve_job_def(SYNTHESIS_JOB).executor_def.name == "timeline_celery"
    sensor = on_celery.resolve_sensor_def("timeline_window_sensor")
    assert sensor.job_name == SYNTHESIS_JOB


@pytest.fixture
def definitions_module() -> Iterator[Any]:
    import timeline_pipeline.definitions as module

    try:
        yield module
    finally:
        os.environ.pop("TIMELINE_EXECUTOR", None)
        importlib.reload(module)


def test_definitions_choose_the_executor_from_the_environment(
    definitions_module: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TIMELINE_EXECUTOR", raising=False)
    defs = importlib.reload(definitions_module).defs
    assert defs.resolve_job_def(SYNTHESIS_JOB).executor_def.name == "in_process"
    assert scale_out.WORKERS_JOB not in {job.name for job in defs.resolve_all_job_defs()}
    monkeypatch.setenv("TIMELINE_EXECUTOR", "celery")
    monkeypatch.setenv("TIMELINE_CELERY_QUEUE", "q-2")
    defs = importlib.reload(definitions_module).defs
    job = defs.resolve_job_def(SYNTHESIS_JOB)
    assert job.executor_def.name == "timeline_celery"
    assert scale_out.WORKERS_JOB in {job.name for job in defs.resolve_all_job_defs()}
    # Every other job stays in-process: only synthesis steps travel to the workers.
    others = [j for j in defs.resolve_all_job_defs() if j.name != SYNTHESIS_JOB]
    assert {j.executor_def.name for j in others if not j.name.startswith("__")} == {"in_process"}


# --- the workers' state ----------------------------------------------------------------------


def test_the_checks_fail_without_workers_and_warn_on_more_waiting_than_slots() -> None:
    healthy = QueueState("q", waiting=3, consumers=2, workers=[WorkerState("w1@h", 2, 2)] * 2)
    metadata, checks = workers_outcome(healthy, queued_runs=5, started_runs=4)
    assert {c.check_name: c.passed for c in checks} == {
        WORKERS_ONLINE_CHECK: True,
        QUEUE_CAPACITY_CHECK: True,
    }
    assert (metadata["worker_capacity"], metadata["worker_active_steps"]) == (4, 4)
    assert metadata["dagster_queued_synthesis_runs"] == 5

    _, checks = workers_outcome(QueueState("q", waiting=1, consumers=0), 1, 0)
    online, capacity = checks
    assert not online.passed and online.severity is dg.AssetCheckSeverity.ERROR
    assert not capacity.passed and capacity.severity is dg.AssetCheckSeverity.WARN


def test_the_queue_depth_is_read_from_the_broker() -> None:
    queue = f"timeline-synthesis-test-{uuid.uuid4().hex[:8]}"
    with Connection(BROKER) as connection:
        declared = Queue(queue, Exchange(queue, type="direct"), routing_key=queue)
        producer = Producer(connection.default_channel)
        try:
            for n in range(3):
                producer.publish(
                    {"n": n}, exchange=declared.exchange, routing_key=queue, declare=[declared]
                )
            state = measure_queue(BROKER, queue)
            assert (state.waiting, state.consumers, state.workers) == (3, 0, [])
        finally:
            connection.default_channel.queue_delete(queue)
            connection.default_channel.exchange_delete(queue)
    assert measure_queue(BROKER, queue).waiting == 0  # gone: reads as empty, not as an error
