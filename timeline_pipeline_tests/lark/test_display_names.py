"""Display names are filled after the fact, in batches, via a bounded cache (docs/design.md §2)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta

import pytest
from sqlalchemy import Engine

from timeline_pipeline.lark.client import LarkClient, LarkClientConfig
from timeline_pipeline.lark.display_names import DisplayNameCache, fill_missing_display_names
from timeline_pipeline.lark.simulator import ChatStore, SimulatorServer
from timeline_pipeline.store import evidence
from timeline_pipeline_tests.receiver.conftest import all_rows
from timeline_pipeline_tests.store.factories import make_workspace, message


class ContactDirectory:
    """Stands in for Lark's contact batch API; records each batch it is asked."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = names
        self.calls: list[list[str]] = []

    def __call__(self, open_ids: Sequence[str]) -> dict[str, str]:
        self.calls.append(list(open_ids))
        return {i: self.names[i] for i in open_ids if i in self.names}


class Ticker:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def store_messages(engine: Engine, actors: list[str], workspace_id: str = "inc-1") -> None:
    with engine.begin() as conn:
        for index, actor in enumerate(actors):
            record = message(f"line {index}", workspace_id=workspace_id, message_id=f"om_{index}")
            evidence.upsert(conn, replace(record, actor_id=actor))


def names_by_actor(engine: Engine) -> dict[str | None, set[str | None]]:
    found: dict[str | None, set[str | None]] = {}
    for row in all_rows(engine):
        found.setdefault(row.actor_id, set()).add(row.actor_display_name)
    return found


def test_names_are_looked_up_in_batches_and_written_to_every_row_of_the_actor(
    engine: Engine,
) -> None:
    make_workspace(engine)
    actors = [f"ou_{i:02d}" for i in range(7)]
    store_messages(engine, actors + actors[:3])  # three actors wrote twice
    directory = ContactDirectory({a: f"Person {a[-2:]}" for a in actors})

    fill = fill_missing_display_names(
        engine,
        "inc-1",
        directory,
        cache=DisplayNameCache(100, timedelta(hours=1)),
        batch_size=3,
    )

    assert [len(batch) for batch in directory.calls] == [3, 3, 1]
    assert sorted(i for batch in directory.calls for i in batch) == actors  # each asked once
    assert (fill.actors, fill.looked_up, fill.lookup_calls, fill.rows_updated) == (7, 7, 3, 10)
    assert names_by_actor(engine) == {a: {f"Person {a[-2:]}"} for a in actors}


def test_known_and_unknown_ids_come_from_the_cache_until_they_expire(engine: Engine) -> None:
    make_workspace(engine)
    make_workspace(engine, "inc-2")
    store_messages(engine, ["ou_known", "ou_gone"])
    store_messages(engine, ["ou_known", "ou_gone"], workspace_id="inc-2")
    directory = ContactDirectory({"ou_known": "Known Person"})
    ticker = Ticker()
    cache = DisplayNameCache(100, timedelta(minutes=10), clock=ticker)

    fill_missing_display_names(engine, "inc-1", directory, cache=cache, batch_size=50)
    second = fill_missing_display_names(engine, "inc-2", directory, cache=cache, batch_size=50)

    assert directory.calls == [["ou_gone", "ou_known"]]  # inc-2 was served from the cache
    assert second.rows_updated == 1
    ticker.now += 601
    fill_missing_display_names(engine, "inc-2", directory, cache=cache, batch_size=50)
    assert directory.calls[1:] == [["ou_gone"]]  # only the still-unnamed id, after expiry
    assert names_by_actor(engine) == {"ou_known": {"Known Person"}, "ou_gone": {None}}


def test_the_cache_is_bounded_least_recently_used_first() -> None:
    ticker = Ticker()
    cache = DisplayNameCache(2, timedelta(hours=1), clock=ticker)
    cache.remember(["a", "b"], {"a": "A", "b": "B"})
    cache.lookup(["a"])
    cache.remember(["c"], {"c": "C"})

    known, unknown = cache.lookup(["a", "b", "c"])

    assert len(cache) == 2
    assert known == {"a": "A", "c": "C"}
    assert unknown == ["b"]


def test_a_zero_size_cache_remembers_nothing() -> None:
    cache = DisplayNameCache(0, timedelta(hours=1))
    cache.remember(["a"], {"a": "A"})
    assert cache.lookup(["a"]) == ({}, ["a"])


def test_a_failing_lookup_keeps_the_batches_already_written(engine: Engine) -> None:
    make_workspace(engine)
    store_messages(engine, ["ou_1", "ou_2", "ou_3"])
    calls: list[Sequence[str]] = []

    def flaky(open_ids: Sequence[str]) -> dict[str, str]:
        calls.append(open_ids)
        if len(calls) == 2:
            raise TimeoutError("contact API timed out")
        return {i: i.upper() for i in open_ids}

    with pytest.raises(TimeoutError):
        fill_missing_display_names(
            engine, "inc-1", flaky, cache=DisplayNameCache(10, timedelta(hours=1)), batch_size=2
        )

    assert names_by_actor(engine) == {"ou_1": {"OU_1"}, "ou_2": {"OU_2"}, "ou_3": {None}}


def test_with_the_real_lark_client_against_the_local_lark(engine: Engine) -> None:
    make_workspace(engine)
    store_messages(engine, ["ou_alice", "ou_bob"])
    store = ChatStore()
    store.add_user("ou_alice", "Alice Chen")
    app_id = f"cli_names_{uuid.uuid4().hex[:10]}"
    with SimulatorServer(store, app_id=app_id, app_secret="s3cret") as lark:
        client = LarkClient(LarkClientConfig(app_id, "s3cret", lark.base_url))
        fill = fill_missing_display_names(
            engine,
            "inc-1",
            client.batch_user_names,
            cache=DisplayNameCache(10, timedelta(hours=1)),
            batch_size=50,
        )

    assert fill.lookup_calls == 1
    assert names_by_actor(engine) == {"ou_alice": {"Alice Chen"}, "ou_bob": {None}}
