"""Chat -> workspaces through the TTL cache: read from the database, never only at startup."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import Engine

from timeline_pipeline.receiver.bindings import BindingCache
from timeline_pipeline.store import workspaces
from timeline_pipeline_tests.receiver.conftest import add_workspace


class Ticker:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _ids(cache: BindingCache, engine: Engine, chat: str) -> list[str]:
    with engine.connect() as conn:
        return [w.id for w in cache.resolve(conn, chat)]


def test_a_new_binding_is_seen_once_the_cached_not_bound_answer_expires(engine: Engine) -> None:
    ticker = Ticker()
    cache = BindingCache(timedelta(seconds=10), clock=ticker)
    assert _ids(cache, engine, "oc_a") == []

    add_workspace(engine, "inc-1", chats=("oc_a",))

    assert cache.cached("oc_a") == ()  # "not bound" is remembered too ...
    assert _ids(cache, engine, "oc_a") == []
    ticker.now += 10
    assert _ids(cache, engine, "oc_a") == ["inc-1"]  # ... for one TTL at most


def test_cached_workspaces_carry_their_status_until_the_ttl_passes(engine: Engine) -> None:
    ticker = Ticker()
    add_workspace(engine, "inc-1", chats=("oc_a",))
    cache = BindingCache(timedelta(seconds=10), clock=ticker)
    with engine.connect() as conn:
        assert [w.status for w in cache.resolve(conn, "oc_a")] == ["firing"]
    with engine.begin() as conn:
        workspaces.set_status(conn, "inc-1", "recovered", actor="cli:test")

    cached = cache.cached("oc_a")
    ticker.now += 10.5

    assert cached is not None
    assert [w.status for w in cached] == ["firing"]
    assert cache.cached("oc_a") is None
    with engine.connect() as conn:
        assert [w.status for w in cache.resolve(conn, "oc_a")] == ["recovered"]


def test_a_zero_ttl_reads_the_database_every_time(engine: Engine) -> None:
    cache = BindingCache(timedelta(0))
    assert _ids(cache, engine, "oc_a") == []
    add_workspace(engine, "inc-1", chats=("oc_a",))

    assert _ids(cache, engine, "oc_a") == ["inc-1"]
    assert len(cache) == 0


def test_the_cache_is_bounded_and_forgets_the_least_recently_used_chat(engine: Engine) -> None:
    add_workspace(engine, "inc-1", chats=("oc_a", "oc_b", "oc_c"))
    cache = BindingCache(timedelta(minutes=1), max_entries=2, clock=Ticker())

    for chat in ("oc_a", "oc_b", "oc_a", "oc_c"):
        _ids(cache, engine, chat)

    assert len(cache) == 2
    assert cache.cached("oc_b") is None  # evicted: a and c were used after it
    assert cache.cached("oc_a") is not None
    assert cache.cached("oc_c") is not None


def test_invalidate_forces_the_next_lookup_to_read(engine: Engine) -> None:
    cache = BindingCache(timedelta(minutes=1), clock=Ticker())
    assert _ids(cache, engine, "oc_a") == []
    add_workspace(engine, "inc-1", chats=("oc_a",))

    cache.invalidate("oc_a")

    assert _ids(cache, engine, "oc_a") == ["inc-1"]
