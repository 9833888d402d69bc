"""Schema migrations through alembic, for SQLite and PostgreSQL alike."""

from __future__ import annotations

import os
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

# The scripts live at the top of the repository (design card layout); the package is installed
# in editable mode by the README's commands, so they sit two levels above this file. An installed
# copy elsewhere can point at them with TIMELINE_MIGRATIONS_DIR.
_DEFAULT_DIR = Path(__file__).resolve().parents[2] / "migrations"


class MigrationError(Exception):
    """The schema cannot be brought to this code's head; one line for the operator."""


def migrations_dir() -> Path:
    path = Path(os.environ.get("TIMELINE_MIGRATIONS_DIR", _DEFAULT_DIR))
    if not (path / "env.py").is_file():
        raise MigrationError(f"migration scripts not found at {path} (set TIMELINE_MIGRATIONS_DIR)")
    return path


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    return config


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:
        raise MigrationError("no migration scripts found")
    return head


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def check_known_revision(engine: Engine) -> str | None:
    """Refuse a database migrated by newer code: downgrading silently would lose data."""
    current = current_revision(engine)
    if current is None:
        return None
    script = ScriptDirectory.from_config(alembic_config())
    if current not in {rev.revision for rev in script.walk_revisions()}:
        raise MigrationError(
            f"database schema is at revision {current}, which this code does not know "
            "(it was migrated by a newer version); upgrade the code instead"
        )
    return current


def upgrade(engine: Engine, target: str = "head") -> tuple[str | None, str]:
    """Upgrade to `target`; returns (revision before, revision after)."""
    before = check_known_revision(engine)
    config = alembic_config()
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, target)
    after = current_revision(engine)
    assert after is not None
    return before, after
