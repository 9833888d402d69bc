"""Imported by each `dagster-celery worker` (deploy/celery.yaml, `imports`): what a worker says
about the synthesis steps it executes (docs/deployment.md, "What to watch").

* Before a step runs, the run gets the tags `timeline/celery_worker` (this worker's node name)
  and `timeline/celery_queue`, so the Dagster UI's run list shows where each window ran.
* One JSON log line when a step starts and one when it ends (`celery.step.started`,
  `celery.step.finished`), with the worker, its process, the task and the run ids and the time:
  the worker's own record of how many steps it ran at once.

Only ids, names and times are logged, never a task's arguments (docs/http.md, "Logs").
"""

from __future__ import annotations

import json
import logging
import os
import time
from typing import Any

from celery.signals import task_postrun, task_prerun
from dagster import DagsterInstance
from dagster._grpc.types import ExecuteStepArgs
from dagster._serdes import unpack_value

from timeline_pipeline.orchestration.scale_out import QUEUE_TAG, WORKER_TAG

STEP_TASK = "execute_plan"
"""dagster-celery's task name for one step of a run."""
STARTED = "celery.step.started"
FINISHED = "celery.step.finished"

log = logging.getLogger(__name__)
_instance: DagsterInstance | None = None


def _dagster() -> DagsterInstance:
    """The worker's instance ($DAGSTER_HOME, which `dagster-celery worker start` requires)."""
    global _instance
    if _instance is None:
        _instance = DagsterInstance.get()
    return _instance


def _run_id(kwargs: dict[str, Any] | None) -> str | None:
    packed = (kwargs or {}).get("execute_step_args_packed")
    if not isinstance(packed, dict):
        return None
    args = unpack_value(packed, as_type=ExecuteStepArgs)
    return str(args.run_id)


def _record(event: str, task: Any, task_id: str, run_id: str, **fields: Any) -> None:
    line = {
        "event": event,
        "worker": task.request.hostname,
        "pid": os.getpid(),
        "task_id": task_id,
        "run_id": run_id,
        "at": time.time(),
        **fields,
    }
    log.info(json.dumps(line, sort_keys=True))


def step_started(
    sender: Any = None,
    task_id: str = "",
    task: Any = None,
    kwargs: dict[str, Any] | None = None,
    **_: Any,
) -> None:
    if task is None or task.name != STEP_TASK:
        return
    run_id = _run_id(kwargs)
    if run_id is None:
        return
    queue = (task.request.delivery_info or {}).get("routing_key", "")
    _dagster().add_run_tags(
        run_id, {WORKER_TAG: str(task.request.hostname), QUEUE_TAG: str(queue).split(".")[0]}
    )
    _record(
        STARTED,
        task,
        task_id,
        run_id,
        redelivered=bool((task.request.delivery_info or {}).get("redelivered")),
    )


def step_finished(
    sender: Any = None,
    task_id: str = "",
    task: Any = None,
    kwargs: dict[str, Any] | None = None,
    state: str | None = None,
    **_: Any,
) -> None:
    if task is None or task.name != STEP_TASK:
        return
    run_id = _run_id(kwargs)
    if run_id is not None:
        _record(FINISHED, task, task_id, run_id, state=state)


# Connected weakly by default: the functions are module globals, so they live as long as the worker.
task_prerun.connect(step_started)
task_postrun.connect(step_finished)
