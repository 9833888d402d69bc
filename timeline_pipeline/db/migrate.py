"""Schema migrations through alembic, for SQLite and PostgreSQL alike."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Final

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, text

MIGRATIONS_PACKAGE: Final = "timeline_pipeline.migrations"
"""The alembic scripts as the package ships them: the repository's top-level `migrations/`
folder, mapped into the package by setup.py, so an editable install and a wheel installed
anywhere find them the same way (docs/packaging.md)."""

MIGRATIONS_DIR_VARIABLE: Final = "TIMELINE_MIGRATIONS_DIR"
"""Points at another copy of the scripts, e.g. a patched one; unset, the package's own."""


class MigrationError(Exception):
    """The schema cannot be brought to this code's head; one line for the operator."""


def migrations_dir() -> Path:
    override = os.environ.get(MIGRATIONS_DIR_VARIABLE)
    path = Path(override) if override else _packaged_dir()
    if not (path / "env.py").is_file():
        raise MigrationError(
            f"migration scripts not found at {path} (set {MIGRATIONS_DIR_VARIABLE})"
        )
    return path


def _packaged_dir() -> Path:
    try:
        found = resources.files(MIGRATIONS_PACKAGE)
    except ModuleNotFoundError:
        raise MigrationError(
            f"this installation has no migration scripts ({MIGRATIONS_PACKAGE} is missing): "
            f"reinstall timeline-pipeline, or set {MIGRATIONS_DIR_VARIABLE}"
        ) from None
    if not isinstance(found, Path):
        # alembic reads the scripts from a folder; a zipped installation has none.
        raise MigrationError(
            f"the migration scripts are not on the file system; set {MIGRATIONS_DIR_VARIABLE}"
        )
    return found


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


RENAMED_REVISIONS: Final = {
    "0008_ui_sessions": "0005_ui_sessions",
    "0007_maintenance": "0006_maintenance",
    "0005_interactions": "0007_interactions",
    "0006_lifecycle": "0008_lifecycle",
}
"""Revisions renumbered to their apply order (docs/packaging.md, "Migrations"): the same
scripts in the same order under new ids. A database stamped with an old id is at the same
schema as the new id, and `upgrade` restamps it before alembic reads it."""


def _restamp_renamed(engine: Engine) -> None:
    with engine.begin() as conn:
        current = MigrationContext.configure(conn).get_current_revision()
        if current in RENAMED_REVISIONS:
            conn.execute(
                text("UPDATE alembic_version SET version_num = :new WHERE version_num = :old"),
                {"new": RENAMED_REVISIONS[current], "old": current},
            )


def check_known_revision(engine: Engine) -> str | None:
    """Refuse a database migrated by newer code: downgrading silently would lose data."""
    current = current_revision(engine)
    if current is None or current in RENAMED_REVISIONS:
        return current
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
    _restamp_renamed(engine)
    config = alembic_config()
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, target)
    after = current_revision(engine)
    assert after is not None
    return before, after
