"""Group commit: waiting writes share a transaction, one bad write cannot sink its neighbours."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future

import pytest
from sqlalchemy import Connection, Engine

from timeline_pipeline.db.engine import DatabaseUnavailable, make_engine
from timeline_pipeline.receiver.batching import WriteBatcher, WriterClosed
from timeline_pipeline.store import workspaces


def create_workspace(workspace_id: str) -> Callable[[Connection], object]:
    def work(conn: Connection) -> object:
        workspaces.create(conn, workspace_id)
        return conn.connection.dbapi_connection

    return work


def existing(engine: Engine) -> list[str]:
    with engine.connect() as conn:
        return [w.id for w in workspaces.list_all(conn)]


def test_writes_queued_behind_a_running_commit_share_the_next_transaction(engine: Engine) -> None:
    writer = WriteBatcher(engine)
    release = threading.Event()

    def slow(conn: Connection) -> None:
        assert release.wait(10)

    first = writer.submit(slow)
    queued = [writer.submit(create_workspace(f"ws-{i}")) for i in range(5)]
    release.set()

    connections = {future.result(timeout=10) for future in queued}
    first.result(timeout=10)
    writer.close()
    assert len(connections) == 1  # one transaction for the five
    assert existing(engine) == [f"ws-{i}" for i in range(5)]


def test_a_failing_write_is_isolated_and_its_neighbours_commit_once(engine: Engine) -> None:
    writer = WriteBatcher(engine)
    release = threading.Event()
    writer.submit(lambda conn: release.wait(10))

    def boom(conn: Connection) -> None:
        raise ValueError("bad event")

    futures: list[Future[object]] = [
        writer.submit(create_workspace("ws-a")),
        writer.submit(boom),
        writer.submit(create_workspace("ws-b")),
    ]
    release.set()

    assert futures[0].result(timeout=10) is not None
    with pytest.raises(ValueError, match="bad event"):
        futures[1].result(timeout=10)
    assert futures[2].result(timeout=10) is not None
    writer.close()
    # ws-a ran twice (in the failed batch, then alone) but was committed once.
    assert existing(engine) == ["ws-a", "ws-b"]


def test_an_unreachable_database_fails_every_queued_write(tmp_path: object) -> None:
    broken = make_engine(f"sqlite:///{tmp_path}")  # a directory cannot be opened
    writer = WriteBatcher(broken)
    try:
        futures = [writer.submit(create_workspace(f"ws-{i}")) for i in range(3)]
        for future in futures:
            with pytest.raises(DatabaseUnavailable):
                future.result(timeout=10)
    finally:
        writer.close()
        broken.dispose()


def test_close_writes_what_is_queued_and_refuses_new_work(engine: Engine) -> None:
    writer = WriteBatcher(engine)
    queued = [writer.submit(create_workspace(f"ws-{i}")) for i in range(3)]

    writer.close()

    assert all(future.done() and future.exception() is None for future in queued)
    late = writer.submit(create_workspace("ws-late"))
    with pytest.raises(WriterClosed):
        late.result(timeout=1)
    assert existing(engine) == ["ws-0", "ws-1", "ws-2"]


def test_queued_items_of_one_group_reach_their_writer_in_one_call(engine: Engine) -> None:
    writer = WriteBatcher(engine)
    release = threading.Event()
    calls: list[list[str]] = []

    def write_group(conn: Connection, items: Sequence[str]) -> list[str]:
        calls.append(list(items))
        return [item.upper() for item in items]

    writer.submit(lambda conn: release.wait(10))
    futures = [
        writer.submit_to_group(write_group, item, key)
        for item, key in (("a1", "chat-a"), ("b1", "chat-b"), ("a2", "chat-a"))
    ]
    release.set()

    assert [future.result(timeout=10) for future in futures] == ["A1", "B1", "A2"]
    writer.close()
    assert calls == [["a1", "a2"], ["b1"]]


def test_groups_are_written_in_key_order_whatever_order_they_arrived_in(engine: Engine) -> None:
    """Two replicas' batches holding the same chats must take their rows in one order, or each
    could hold a row the other waits for (docs/deployment-receivers.md)."""
    writer = WriteBatcher(engine)
    release = threading.Event()
    calls: list[str] = []

    def write_group(conn: Connection, items: Sequence[str]) -> list[str]:
        calls.extend(items)
        return list(items)

    def alone(conn: Connection) -> str:
        calls.append("alone")
        return "alone"

    writer.submit(lambda conn: release.wait(10))
    arrivals = (
        ("recall-a", ("recall", "chat-a")),
        ("message-c", ("message", "chat-c")),
        ("message-a", ("message", "chat-a")),
        ("message-b", ("message", "chat-b")),
    )
    futures: list[Future[str]] = [writer.submit(alone)]
    futures += [writer.submit_to_group(write_group, item, key) for item, key in arrivals]
    release.set()

    assert [future.result(timeout=10) for future in futures] == [
        "alone",
        "recall-a",
        "message-c",
        "message-a",
        "message-b",
    ]
    writer.close()
    assert calls == ["message-a", "message-b", "message-c", "recall-a", "alone"]
