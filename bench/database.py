"""A fresh PostgreSQL database per benchmark run, created and dropped on every exit path.

Each benchmark measures an empty, freshly migrated database, so figures never depend on what an
earlier run (or a test) left behind.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator

import psycopg

ADMIN_URL = os.environ.get(
    "TIMELINE_BENCH_PG_URL",
    os.environ.get("TIMELINE_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres"),
)
"""A libpq URL of a database on the server that may CREATE DATABASE (the maintenance one)."""


def database_url(name: str, admin_url: str = ADMIN_URL, driver: str = "postgresql+psycopg") -> str:
    """The URL of database `name` on the admin URL's server, with the given scheme."""
    server = admin_url.rsplit("/", 1)[0].split("://", 1)[1]
    return f"{driver}://{server}/{name}"


@contextlib.contextmanager
def fresh_database(admin_url: str = ADMIN_URL) -> Iterator[str]:
    """Yields the name of a new, empty database, dropped (even with open sessions) afterwards."""
    name = f"tp_bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield name
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def server_version(admin_url: str = ADMIN_URL) -> str:
    with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as conn:
        row = conn.execute("SHOW server_version").fetchone()
    return str(row[0]) if row else "unknown"
