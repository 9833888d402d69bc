"""A database that fails a chosen commit: the `OperationalError` a lost connection or a
failover gives at COMMIT, injected at SQLAlchemy's own seam (the engine's `commit` event) so
that the transaction really rolls back and the code under test sees what the driver would
raise (docs/design.md §11, "error inside a window")."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection, Engine, event
from sqlalchemy.exc import OperationalError

STATEMENTS = "commit_faults.statements"


class CommitFault:
    """Fails `times` commits whose transaction ran a statement `matches` accepts, after letting
    the first `skip` of them through."""

    def __init__(self, matches: Callable[[str], bool], times: int = 1, skip: int = 0) -> None:
        self.matches = matches
        self.left = times
        self.skip = skip
        self.failed = 0

    def _seen(self, conn: Connection) -> list[str]:
        seen: list[str] = conn.info.setdefault(STATEMENTS, [])
        return seen

    def before_cursor_execute(
        self, conn: Connection, _cursor: Any, statement: str, *_: Any
    ) -> None:
        self._seen(conn).append(statement)

    def commit(self, conn: Connection) -> None:
        statements = self._seen(conn)
        conn.info[STATEMENTS] = []
        if self.left > 0 and any(self.matches(s) for s in statements):
            if self.skip > 0:
                self.skip -= 1
                return
            self.left -= 1
            self.failed += 1
            raise OperationalError(
                "COMMIT", {}, ConnectionError("server closed the connection unexpectedly")
            )

    def rollback(self, conn: Connection) -> None:
        conn.info[STATEMENTS] = []


@contextmanager
def failing_commits(
    engine: Engine | type[Engine], matches: Callable[[str], bool], times: int = 1, skip: int = 0
) -> Iterator[CommitFault]:
    """`engine`: one engine, or the `Engine` class for every engine (a Dagster run makes its
    own from the database resource)."""
    fault = CommitFault(matches, times, skip)
    hooks: dict[str, Callable[..., Any]] = {
        "before_cursor_execute": fault.before_cursor_execute,
        "commit": fault.commit,
        "rollback": fault.rollback,
    }
    for name, hook in hooks.items():
        event.listen(engine, name, hook)
    try:
        yield fault
    finally:
        for name, hook in hooks.items():
            event.remove(engine, name, hook)


def writes_entries(statement: str) -> bool:
    """A chunk's commit: it inserts the chunk's drafts."""
    return statement.lstrip().upper().startswith("INSERT INTO WORKSPACE_TIMELINE_ENTRIES")


def _set_clause(statement: str) -> str | None:
    """The SET clause of an UPDATE of the window states (its RETURNING lists every column)."""
    flat = " ".join(statement.split())
    if not flat.upper().startswith("UPDATE WORKSPACE_TIMELINE_SYNC_STATES SET "):
        return None
    return flat.split(" SET ", 1)[1].split(" WHERE ", 1)[0]


def finishes_window(statement: str) -> bool:
    """A window's finish: the UPDATE that writes its final hash."""
    sets = _set_clause(statement)
    return sets is not None and "last_seen_content_hash" in sets


def fails_window(statement: str) -> bool:
    """The release of a window as `failed`: the UPDATE that writes its `last_error` and no final
    hash (a finish clears `last_error` too)."""
    sets = _set_clause(statement)
    return sets is not None and "last_error" in sets and "last_seen_content_hash" not in sets


def advances_cursor(statement: str) -> bool:
    """A chunk's commit: the UPDATE that moves the window's cursor with the chunk's drafts."""
    sets = _set_clause(statement)
    return sets is not None and "last_seen_cursor" in sets
