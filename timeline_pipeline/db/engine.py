"""Engines for the product database: SQLite (embedded default) or PostgreSQL (psycopg 3)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import (
    ArgumentError,
    DBAPIError,
    InterfaceError,
    NoSuchModuleError,
    OperationalError,
)
from sqlalchemy.pool import NullPool

SUPPORTED_DRIVERS = {"sqlite", "sqlite+pysqlite", "postgresql+psycopg"}


class DatabaseConfigError(Exception):
    """The database URL cannot be used; the message is one line for the operator."""


class DatabaseUnavailable(Exception):
    """The database did not answer; callers turn this into a 503 or a non-zero exit."""


class SchemaMissing(DatabaseUnavailable):
    """The database answers but lacks this product's tables or columns.

    A DatabaseUnavailable for the server (503, so Lark redelivers once the schema exists); the
    CLI tells the operator what to run instead. The message never carries SQL or parameters.
    """

    def __init__(self) -> None:
        super().__init__(
            "the database has no timeline-pipeline schema, or an older one: "
            "run `timeline-pipeline db upgrade`"
        )


class NotADatabase(DatabaseUnavailable):
    """The SQLite URL names a file that is not a SQLite database (a wrong path, a damaged file)."""

    def __init__(self) -> None:
        super().__init__("TIMELINE_DATABASE_URL names a file that is not a SQLite database")


_SCHEMA_SQLSTATES = {"42P01", "42703"}  # undefined_table, undefined_column
_SQLITE_SCHEMA_MESSAGES = ("no such table", "no such column")


def classify(exc: DBAPIError | psycopg.Error) -> DatabaseUnavailable | None:
    """The operator-facing meaning of a driver error, or None for one that is not theirs to fix.

    Only the driver's error class and SQLSTATE are read: the SQLAlchemy wrapper's text holds the
    statement and its parameters, which must not reach a terminal or a log.
    """
    orig = getattr(exc, "orig", None) or exc
    if isinstance(orig, psycopg.Error) and orig.sqlstate in _SCHEMA_SQLSTATES:
        return SchemaMissing()
    if isinstance(orig, sqlite3.OperationalError) and str(orig).startswith(_SQLITE_SCHEMA_MESSAGES):
        return SchemaMissing()
    if isinstance(orig, sqlite3.DatabaseError) and "file is not a database" in str(orig):
        return NotADatabase()
    if isinstance(exc, OperationalError | InterfaceError | psycopg.OperationalError):
        return DatabaseUnavailable(describe_unavailable(exc))
    return None


def parse_database_url(raw: str) -> URL:
    """Validate the URL and normalize `postgresql://` to the psycopg 3 driver.

    The product speaks psycopg 3; a bare `postgresql://` would let SQLAlchemy pick psycopg2
    (installed for Dagster's own storage), so it is pinned here rather than left to chance.
    """
    try:
        url = make_url(raw)
    except (ArgumentError, ValueError):  # ValueError: a port that is not a number
        raise DatabaseConfigError(
            "invalid TIMELINE_DATABASE_URL: expected e.g. sqlite:///path/to/file.db "
            "or postgresql+psycopg://user@host:5432/db"
        ) from None
    if url.drivername in {"postgresql", "postgres"}:
        url = url.set(drivername="postgresql+psycopg")
    if url.drivername not in SUPPORTED_DRIVERS:
        raise DatabaseConfigError(
            f"invalid TIMELINE_DATABASE_URL: unsupported driver {url.drivername!r} "
            "(use sqlite or postgresql+psycopg)"
        )
    if url.drivername.startswith("sqlite") and url.database in (None, "", ":memory:"):
        raise DatabaseConfigError(
            "invalid TIMELINE_DATABASE_URL: SQLite needs a file path (sqlite:///path/file.db)"
        )
    if url.drivername == "postgresql+psycopg" and not url.database:
        raise DatabaseConfigError("invalid TIMELINE_DATABASE_URL: PostgreSQL URL names no database")
    return url


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL lets the receiver write while Dagster runs read; busy_timeout turns short lock
    # contention into a wait instead of an immediate "database is locked".
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()


def _sqlite_begin(conn: Any) -> None:
    # pysqlite's default deferred transactions let two writers both read then fail to upgrade
    # their lock; BEGIN IMMEDIATE serializes writers up front, which is what CAS needs here.
    conn.exec_driver_sql("BEGIN IMMEDIATE")


def make_engine(raw_url: str, *, pool_size: int = 5, null_pool: bool = False) -> Engine:
    url = parse_database_url(raw_url)
    try:
        if url.drivername.startswith("sqlite"):
            assert url.database is not None
            folder = Path(url.database).expanduser().parent
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise DatabaseConfigError(
                    f"invalid TIMELINE_DATABASE_URL: cannot create the folder {folder}: "
                    f"{exc.strerror or type(exc).__name__}"
                ) from None
            engine = create_engine(
                url,
                connect_args={"timeout": 10, "check_same_thread": False},
                poolclass=NullPool if null_pool else None,
            )
            event.listen(engine, "connect", _sqlite_pragmas)
            # Take over transaction control from pysqlite so BEGIN IMMEDIATE is ours to issue.
            event.listen(
                engine,
                "connect",
                lambda dbapi_conn, _rec: setattr(dbapi_conn, "isolation_level", None),
            )
            event.listen(engine, "begin", _sqlite_begin)
            return engine
        kwargs: dict[str, Any] = {
            "pool_pre_ping": True,
            "connect_args": {"connect_timeout": 5, "application_name": "timeline-pipeline"},
        }
        if null_pool:
            kwargs["poolclass"] = NullPool
        else:
            kwargs.update(pool_size=pool_size, max_overflow=pool_size)
        return create_engine(url, **kwargs)
    except (NoSuchModuleError, ArgumentError) as exc:
        raise DatabaseConfigError(f"invalid TIMELINE_DATABASE_URL: {exc}") from None


def redacted_url(raw_url: str) -> str:
    """The URL with its password hidden, for messages and logs."""
    try:
        return parse_database_url(raw_url).render_as_string(hide_password=True)
    except DatabaseConfigError:
        return "<invalid url>"


@contextmanager
def transaction(engine: Engine) -> Iterator[Connection]:
    """One committed transaction; a database that does not answer becomes DatabaseUnavailable."""
    try:
        with engine.begin() as conn:
            yield conn
    except (DBAPIError, psycopg.Error) as exc:  # psycopg: statements on the raw driver connection
        mapped = classify(exc)
        if mapped is None:
            raise
        raise mapped from None


@contextmanager
def connection(engine: Engine) -> Iterator[Connection]:
    """A read connection with the same error mapping as `transaction`."""
    try:
        with engine.connect() as conn:
            yield conn
    except (DBAPIError, psycopg.Error) as exc:
        mapped = classify(exc)
        if mapped is None:
            raise
        raise mapped from None


def describe_unavailable(exc: DBAPIError | psycopg.Error) -> str:
    orig = getattr(exc, "orig", None) or exc
    return "database unavailable: " + " ".join(str(orig).split())[:300]
