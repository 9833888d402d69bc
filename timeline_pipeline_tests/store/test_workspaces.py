from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import Engine, func, select

from timeline_pipeline.db.schema import workspaces as workspaces_table
from timeline_pipeline.domain.keys import InvalidKey
from timeline_pipeline.store import workspaces
from timeline_pipeline.store.workspaces import WorkspaceError, WorkspaceExists, WorkspaceNotFound


def test_create_and_read_back(engine: Engine) -> None:
    created_at = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
    with engine.begin() as conn:
        made = workspaces.create(conn, "inc-42", created_at=created_at, title="Checkout errors")
    assert (made.id, made.type, made.status, made.created_at) == (
        "inc-42",
        "incident",
        "firing",
        created_at,
    )


def test_a_duplicate_workspace_is_refused_and_the_first_is_kept(engine: Engine) -> None:
    with engine.begin() as conn:
        workspaces.create(conn, "inc-1", title="first")
    with pytest.raises(WorkspaceExists), engine.begin() as conn:
        workspaces.create(conn, "inc-1", title="second")
    with engine.connect() as conn:
        assert workspaces.require(conn, "inc-1").title == "first"
        assert conn.execute(select(func.count()).select_from(workspaces_table)).scalar_one() == 1


@pytest.mark.parametrize("bad", ["", "has space", "a:b", "x" * 129, "a...b", "-lead"])
def test_workspace_ids_that_cannot_be_partition_keys_are_refused(engine: Engine, bad: str) -> None:
    with pytest.raises(InvalidKey), engine.begin() as conn:
        workspaces.create(conn, bad)


def test_invalid_status_and_naive_time_are_refused(engine: Engine) -> None:
    with pytest.raises(WorkspaceError), engine.begin() as conn:
        workspaces.create(conn, "inc-1", status="resolved")
    with pytest.raises(WorkspaceError), engine.begin() as conn:
        workspaces.create(conn, "inc-1", created_at=datetime(2026, 1, 1))


def test_a_chat_can_be_bound_to_several_workspaces_once_each(engine: Engine) -> None:
    with engine.begin() as conn:
        workspaces.create(conn, "inc-1")
        workspaces.create(conn, "inc-2")
        assert workspaces.bind_chat(conn, "inc-1", "oc_war_room") is True
        assert workspaces.bind_chat(conn, "inc-1", "oc_war_room") is False
        assert workspaces.bind_chat(conn, "inc-2", "oc_war_room") is True
    with engine.connect() as conn:
        bound = workspaces.bindings_for_chat(conn, "oc_war_room")
        assert [b.workspace.id for b in bound] == ["inc-1", "inc-2"]
        assert workspaces.chats_of(conn, "inc-1") == ["oc_war_room"]
        assert workspaces.bindings_for_chat(conn, "oc_unknown") == []


def test_binding_to_a_missing_workspace_writes_nothing(engine: Engine) -> None:
    with pytest.raises(WorkspaceNotFound), engine.begin() as conn:
        workspaces.bind_chat(conn, "ghost", "oc_war_room")
    with engine.connect() as conn:
        assert workspaces.bindings_for_chat(conn, "oc_war_room") == []


def test_status_changes_and_curators(engine: Engine) -> None:
    with engine.begin() as conn:
        workspaces.create(conn, "inc-1")
        assert (
            workspaces.set_status(conn, "inc-1", "recovered", actor="cli:test").status
            == "recovered"
        )
        assert workspaces.add_curator(conn, "inc-1", "ou_lead") is True
        assert workspaces.add_curator(conn, "inc-1", "ou_lead") is False
        assert workspaces.curators_of(conn, "inc-1") == ["ou_lead"]
        assert [b.workspace.id for b in workspaces.all_bindings(conn, statuses=["firing"])] == []
