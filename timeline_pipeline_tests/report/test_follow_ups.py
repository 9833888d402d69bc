"""Follow-ups as Lark tasks against the local Lark: a confirmed next step becomes one task,
whatever fails where, and hiding the entry leaves the task alone (docs/report.md, "Follow-ups
as Lark tasks")."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine

from timeline_pipeline.curation.rules import Action
from timeline_pipeline.curation.service import CurationService
from timeline_pipeline.lark.client import LarkClient, LarkClientConfig
from timeline_pipeline.lark.documents import LarkDocuments
from timeline_pipeline.lark.simulator import SimulatorServer
from timeline_pipeline.lark.simulator.documents import ROUTE_CREATE_TASK
from timeline_pipeline.report.follow_ups import FollowUpWorker
from timeline_pipeline.retry import RetryPolicy
from timeline_pipeline.store import follow_up_tasks
from timeline_pipeline_tests.report.support import (
    ACTOR,
    closed_incident,
    entry_of,
    report_settings,
)

SECRET = "tasks-secret"


@pytest.fixture
def lark() -> Iterator[tuple[SimulatorServer, LarkDocuments]]:
    app_id = f"cli_tasks_{uuid.uuid4().hex[:12]}"
    with SimulatorServer(app_id=app_id, app_secret=SECRET) as server:
        client = LarkClient(
            LarkClientConfig(
                app_id=app_id,
                app_secret=SECRET,
                base_url=server.base_url,
                retry=RetryPolicy(
                    attempts=1, backoff_base=0.001, backoff_cap=0.01, max_retry_after=1.0
                ),
            )
        )
        yield server, LarkDocuments(client)


def confirm_next_step(engine: Engine, *, enabled: bool = True) -> int:
    entry = entry_of(engine, "next_step")
    CurationService(engine, follow_up_tasks=enabled).transition(
        "inc-1", entry.id, Action.CONFIRM, expected_revision=None, actor=ACTOR
    )
    return entry.id


def test_a_confirmed_next_step_becomes_one_task_that_outlives_hiding_it(
    engine: Engine, lark: tuple[SimulatorServer, LarkDocuments]
) -> None:
    server, documents = lark
    closed_incident(engine)
    entry_id = confirm_next_step(engine)
    worker = FollowUpWorker(engine, report_settings(), documents)

    first = worker.run()
    again = worker.run()
    CurationService(engine).transition(
        "inc-1", entry_id, Action.HIDE, expected_revision=None, actor=ACTOR
    )

    assert (first.created, again.created) == (1, 0)
    (task,) = server.state.documents.tasks()
    assert "pool saturation" in str(task)
    with engine.connect() as conn:
        (row,) = follow_up_tasks.for_workspace(conn, "inc-1")
    assert (row.state, row.task_guid, row.requested_by) == ("created", task["guid"], ACTOR)


def test_a_task_whose_answer_was_lost_is_not_created_twice(
    engine: Engine, lark: tuple[SimulatorServer, LarkDocuments]
) -> None:
    server, documents = lark
    closed_incident(engine)
    confirm_next_step(engine)
    server.state.documents.fail_next(ROUTE_CREATE_TASK, after_apply=True)
    worker = FollowUpWorker(engine, report_settings(), documents)

    first = worker.run()
    second = worker.run()

    assert (first.deferred, second.created) == (1, 1)
    assert len(server.state.documents.tasks()) == 1


def test_confirming_a_next_step_queues_nothing_when_tasks_are_off(engine: Engine) -> None:
    closed_incident(engine)
    confirm_next_step(engine, enabled=False)
    with engine.connect() as conn:
        assert follow_up_tasks.for_workspace(conn, "inc-1") == []


def test_confirming_twice_queues_one_task(engine: Engine) -> None:
    closed_incident(engine)
    entry_id = confirm_next_step(engine)
    service = CurationService(engine, follow_up_tasks=True)
    service.transition("inc-1", entry_id, Action.HIDE, expected_revision=None, actor=ACTOR)
    service.transition("inc-1", entry_id, Action.RESTORE, expected_revision=None, actor=ACTOR)
    service.transition("inc-1", entry_id, Action.CONFIRM, expected_revision=None, actor=ACTOR)
    with engine.connect() as conn:
        assert len(follow_up_tasks.for_workspace(conn, "inc-1")) == 1
