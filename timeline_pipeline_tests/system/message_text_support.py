"""Where a planted string is, in the product database and in Dagster's storage.

The product scan is generic: every table of the schema's metadata (`db/schema.py`) and every
free-text column of it (the columns `lifecycle registry-check` calls free text: text, JSON and
long strings, `lifecycle/live_check.py` `text_columns`), JSON cast to text, so a table added
later cannot escape it. Dagster's storage is scanned as files: every table of every SQLite file
under the instance's home, and the bytes of every other file there (compute logs, run files).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlalchemy import Engine, String, cast, or_, select

from timeline_pipeline.db.schema import metadata
from timeline_pipeline.lifecycle.live_check import text_columns

Place = tuple[str, str]
"""(table, column) in the product database; (file, table) in Dagster's storage."""


def product_places(engine: Engine, needle: str) -> set[Place]:
    """Every (table, column) of the product database holding `needle` in some row."""
    found: set[Place] = set()
    pattern = f"%{needle}%"
    with engine.connect() as conn:
        for table in metadata.sorted_tables:
            for name in text_columns(table):
                column = table.c[name]
                hit = conn.execute(
                    select(column).where(or_(cast(column, String).like(pattern))).limit(1)
                ).first()
                if hit is not None:
                    found.add((table.name, name))
    return found


def dagster_places(home: Path, needle: str) -> set[Place]:
    """Every (file, table) under Dagster's home holding `needle`: each SQLite table's rows read
    as text, every other file's bytes (a SQLite file's own bytes too, for its free pages)."""
    found: set[Place] = set()
    raw = needle.encode()
    for path in sorted(p for p in home.rglob("*") if p.is_file()):
        relative = str(path.relative_to(home))
        if path.read_bytes().startswith(b"SQLite format 3"):
            found |= {(relative, t) for t in _sqlite_tables(path, needle)}
        if raw in path.read_bytes():
            found.add((relative, "<bytes>"))
    return found


def _sqlite_tables(path: Path, needle: str) -> set[str]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        hits: set[str] = set()
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                if any(needle in _text(value) for value in row):
                    hits.add(table)
                    break
        return hits
    finally:
        conn.close()


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return "" if value is None else str(value)
