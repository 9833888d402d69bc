"""Shared fixtures: a migrated product database on SQLite and on PostgreSQL.

Every repository test takes `engine` and so runs twice, once per database. PostgreSQL databases
are cloned from a template migrated once per test process, so each test gets a fresh database
(dropped afterwards) at the cost of a file copy. A missing PostgreSQL fails the run: it is never
skipped, or a green run could hide untested code.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import Engine

from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.migrate import upgrade

PG_ADMIN_URL = os.environ.get(
    "TIMELINE_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)


def _admin() -> psycopg.Connection[tuple[object, ...]]:
    try:
        return psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        pytest.fail(
            f"PostgreSQL is required for the test suite and did not answer at {PG_ADMIN_URL}: "
            f"{' '.join(str(exc).split())}",
            pytrace=False,
        )


def _pg_url(database: str) -> str:
    base = PG_ADMIN_URL.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://", 1)
    return f"{base}/{database}"


@pytest.fixture(scope="session")
def pg_template() -> Iterator[str]:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    name = f"tp_template_{worker}_{os.getpid()}"
    with _admin() as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
    engine = make_engine(_pg_url(name), null_pool=True)
    upgrade(engine)
    engine.dispose()
    yield name
    with _admin() as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _fresh_pg_database(template: str) -> str:
    name = f"tp_test_{uuid.uuid4().hex[:16]}"
    with _admin() as admin:
        admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    return name


def _drop_pg_database(name: str) -> None:
    with _admin() as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A migrated, empty product database URL; one run per database."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'timeline.db'}"
        engine = make_engine(url, null_pool=True)
        upgrade(engine)
        engine.dispose()
        yield url
        return
    template = request.getfixturevalue("pg_template")
    name = _fresh_pg_database(template)
    try:
        yield _pg_url(name)
    finally:
        _drop_pg_database(name)


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    made = make_engine(db_url)
    try:
        yield made
    finally:
        made.dispose()


@pytest.fixture
def pg_url(pg_template: str) -> Iterator[str]:
    """A migrated PostgreSQL database only, for behaviour SQLite cannot give."""
    name = _fresh_pg_database(pg_template)
    try:
        yield _pg_url(name)
    finally:
        _drop_pg_database(name)


@pytest.fixture
def empty_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An unmigrated database on PostgreSQL (for migration tests)."""
    name = f"tp_empty_{uuid.uuid4().hex[:16]}"
    with _admin() as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield _pg_url(name)
    finally:
        _drop_pg_database(name)


@pytest.fixture(autouse=True)
def _loopback_without_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every server a test talks to is on loopback; lark-oapi (requests) and httpx honour proxy
    variables, so a proxy set on the machine must not see those requests."""
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


@contextmanager
def _no_defs_state_storage() -> Iterator[None]:
    from dagster._core.storage.defs_state.base import set_defs_state_storage

    with set_defs_state_storage(None):
        yield


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    """Each phase of each test starts without another test's Dagster defs-state storage.

    Dagster keeps the defs-state storage of the instance last entered in a process-wide context
    variable, which every definitions load reads. Instances a fixture enters (module-scoped ones
    are shared by tests in any order, and a schedule context enters one from its ref) set it
    and, on exit, restore whatever it held before, which can be the storage of an instance
    already disposed: the next `Definitions(...)` then fails with "undefined DagsterInstance
    weakref", in whichever test happens to come next on the worker. A fixture could not prevent
    it (module-scoped fixtures may be set up after a function-scoped one), so each phase (set-up,
    call, tear-down) runs with no storage: the product has no state-backed definitions.
    """
    with _no_defs_state_storage():
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    with _no_defs_state_storage():
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    with _no_defs_state_storage():
        return (yield)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print what each fault-suite test injected and counted (see faults/conftest.py)."""
    lines: list[str] = []
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) != "call":
                continue
            for name, value in getattr(report, "user_properties", ()):
                if name == "fault_report":
                    lines.append(f"{report.nodeid.split('::')[-1]}: {value}")
    if lines:
        terminalreporter.section("fault suite: injected and counted")
        for line in lines:
            terminalreporter.write_line(line)
