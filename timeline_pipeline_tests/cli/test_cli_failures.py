"""Every mistake an operator can make at the terminal ends as one line on stderr and the
docs/cli.md's exit code (1 bad input, 2 usage, 3 the database does not answer), never a traceback,
and writes nothing: no workspace row, no schema, no file (docs/cli.md)."""

from __future__ import annotations

import json
import os
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from timeline_pipeline.cli.main import cli
from timeline_pipeline_tests.conftest import PG_ADMIN_URL

NOT_UTF8 = os.fsdecode(b"incident \xff\xfe")  # how Python hands a non-UTF-8 argv to click


@dataclass(frozen=True)
class Case:
    """A database to point at, a command to run, and what the operator must be told."""

    database: str  # "migrated" (both databases), a URL with {tmp}, "pg_empty", "sqlite_empty"
    args: tuple[str, ...]
    code: int
    fragment: str


CASES = {
    "port that is not a number": Case(
        "postgresql+psycopg://u:p@h:notaport/db", ("workspace", "list"), 1, "invalid"
    ),
    "unclosed bracket": Case(
        "postgresql+psycopg://u:p@[::1/db", ("db", "upgrade"), 1, "TIMELINE_DATABASE_URL"
    ),
    "sqlite folder under a file": Case(
        "sqlite:///{tmp}/a-file/sub/timeline.db", ("db", "upgrade"), 1, "cannot create the folder"
    ),
    "sqlite file that is not a database": Case(
        "sqlite:///{tmp}/not-a-db.txt", ("db", "upgrade"), 1, "not a SQLite database"
    ),
    "sqlite file that is not a database, status": Case(
        "sqlite:///{tmp}/not-a-db.txt", ("workspace", "list"), 1, "not a SQLite database"
    ),
    "postgresql without the schema": Case(
        "pg_empty",
        ("workspace", "create", "--id", "inc-1"),
        1,
        "run `timeline-pipeline db upgrade`",
    ),
    "postgresql without the schema, list": Case(
        "pg_empty", ("workspace", "list"), 1, "run `timeline-pipeline db upgrade`"
    ),
    "sqlite without the schema": Case(
        "sqlite_empty",
        ("workspace", "create", "--id", "inc-1", "--title", "secret title"),
        1,
        "run `timeline-pipeline db upgrade`",
    ),
    "created-at before UTC begins": Case(
        "migrated",
        ("workspace", "create", "--id", "inc-1", "--created-at", "0001-01-01T00:00:00+01:00"),
        2,
        "out of range",
    ),
    "created-at after UTC ends": Case(
        "migrated",
        ("workspace", "create", "--id", "inc-1", "--created-at", "9999-12-31T23:59:59-01:00"),
        2,
        "out of range",
    ),
    "non-UTF-8 title": Case(
        "migrated", ("workspace", "create", "--id", "inc-1", "--title", NOT_UTF8), 2, "--title"
    ),
    "non-UTF-8 type": Case(
        "migrated", ("workspace", "create", "--id", "inc-1", f"--type={NOT_UTF8}"), 2, "--type"
    ),
    "non-UTF-8 timeline title": Case(
        "migrated",
        ("timeline", "add", "inc-1", "--title", NOT_UTF8, "--category", "impact"),
        2,
        "--title",
    ),
    "title longer than its column": Case(
        "migrated",
        ("workspace", "create", "--id", "inc-1", "--title", "t" * 513),
        1,
        "at most 512 characters",
    ),
    "type longer than its column": Case(
        "migrated", ("workspace", "create", "--id", "inc-1", "--type", "t" * 65), 1, "1-64"
    ),
}


@pytest.fixture
def pg_empty() -> Iterator[str]:
    name = f"tp_empty_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    base = PG_ADMIN_URL.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://", 1)
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _pg_tables(url: str) -> list[str]:
    plain = url.replace("postgresql+psycopg://", "postgresql://", 1)
    with psycopg.connect(plain) as conn:
        rows = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchall()
    return [str(row[0]) for row in rows]


def _sqlite_tables(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return [row[0] for row in conn.execute("SELECT name FROM sqlite_master")]


def _prepare(
    case: Case, tmp_path: Path, request: pytest.FixtureRequest
) -> tuple[str, Callable[[], None]]:
    """The URL for a case, and a check that the failed command left everything as it was."""
    (tmp_path / "a-file").write_text("a file, not a folder\n")
    garbage = b"this is a text file, not SQLite " * 64
    (tmp_path / "not-a-db.txt").write_bytes(garbage)
    before = sorted(p.name for p in tmp_path.rglob("*"))

    def files_unchanged() -> None:
        assert sorted(p.name for p in tmp_path.rglob("*")) == before
        assert (tmp_path / "not-a-db.txt").read_bytes() == garbage

    if case.database == "pg_empty":
        url = request.getfixturevalue("pg_empty")

        def pg_still_empty() -> None:
            files_unchanged()
            assert _pg_tables(url) == []

        return url, pg_still_empty
    if case.database == "sqlite_empty":
        path = tmp_path / "empty.db"
        sqlite3.connect(path).close()

        def sqlite_still_empty() -> None:  # its -wal/-shm files are SQLite's journal, not data
            assert _sqlite_tables(path) == []

        return f"sqlite:///{path}", sqlite_still_empty
    return case.database.format(tmp=tmp_path), files_unchanged


def _assert_one_line(case: Case, url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIMELINE_DATABASE_URL", url)

    result = CliRunner().invoke(cli, list(case.args))

    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.exit_code == case.code, result.stderr
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    assert case.fragment in result.stderr
    for leak in ("Traceback", "[SQL", "INSERT", "SELECT", "parameters", "secret title", "tttt"):
        assert leak not in result.stderr
    assert result.stdout == ""


DATABASE_CASES = {k: v for k, v in CASES.items() if v.database != "migrated"}
INPUT_CASES = {k: v for k, v in CASES.items() if v.database == "migrated"}


@pytest.mark.parametrize("case", DATABASE_CASES.values(), ids=DATABASE_CASES.keys())
def test_an_unusable_database_is_one_line_with_its_exit_code_and_changes_nothing(
    case: Case, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, unchanged = _prepare(case, tmp_path, request)
    _assert_one_line(case, url, monkeypatch)
    unchanged()


@pytest.mark.parametrize("case", INPUT_CASES.values(), ids=INPUT_CASES.keys())
def test_a_bad_value_is_one_line_with_its_exit_code_and_writes_nothing(
    case: Case, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _assert_one_line(case, db_url, monkeypatch)
    listed = CliRunner().invoke(cli, ["workspace", "list", "--json"])
    assert listed.exit_code == 0 and json.loads(listed.stdout) == {"workspaces": []}
