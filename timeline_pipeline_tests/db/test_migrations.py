"""Migrations: both databases reach head, the models and the scripts do not drift, and a schema
from newer code is refused rather than touched."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import text

from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.migrate import MigrationError, current_revision, head_revision, upgrade
from timeline_pipeline.db.schema import metadata


@pytest.fixture(params=["sqlite", "postgresql"])
def blank_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'blank.db'}"
    return str(request.getfixturevalue("empty_db_url"))


def test_upgrade_from_nothing_reaches_head_and_matches_the_models(blank_url: str) -> None:
    engine = make_engine(blank_url, null_pool=True)
    try:
        assert current_revision(engine) is None
        before, after = upgrade(engine)
        assert (before, after) == (None, head_revision())
        with engine.connect() as conn:
            diff = compare_metadata(
                MigrationContext.configure(conn, opts={"compare_type": True}), metadata
            )
        assert diff == []
        assert upgrade(engine) == (head_revision(), head_revision())  # idempotent
    finally:
        engine.dispose()


def test_a_schema_migrated_by_newer_code_is_refused_untouched(blank_url: str) -> None:
    engine = make_engine(blank_url, null_pool=True)
    try:
        upgrade(engine)
        with engine.begin() as conn:
            conn.execute(text("UPDATE alembic_version SET version_num = 'ffff_future'"))
        with pytest.raises(MigrationError, match="newer version"):
            upgrade(engine)
        assert current_revision(engine) == "ffff_future"
    finally:
        engine.dispose()


@pytest.mark.parametrize(
    ("old", "new"),
    [("0008_ui_sessions", "0005_ui_sessions"), ("0006_lifecycle", "0008_lifecycle")],
)
def test_a_database_stamped_before_the_renumbering_upgrades_to_head(
    blank_url: str, old: str, new: str
) -> None:
    """The files were renumbered to their apply order: a database left at an old id (the same
    schema under its former name) is restamped and upgraded, not refused."""
    engine = make_engine(blank_url, null_pool=True)
    try:
        upgrade(engine, new)
        with engine.begin() as conn:
            conn.execute(text("UPDATE alembic_version SET version_num = :old"), {"old": old})
        assert upgrade(engine) == (old, head_revision())
        with engine.connect() as conn:
            diff = compare_metadata(
                MigrationContext.configure(conn, opts={"compare_type": True}), metadata
            )
        assert diff == []
    finally:
        engine.dispose()


def test_the_migration_files_are_numbered_in_their_apply_order() -> None:
    from alembic.script import ScriptDirectory

    from timeline_pipeline.db.migrate import alembic_config

    script = ScriptDirectory.from_config(alembic_config())
    order = [rev for rev in reversed(list(script.walk_revisions()))]
    numbers = [Path(rev.path).name[:4] for rev in order]
    assert numbers == [f"{n:04d}" for n in range(1, len(order) + 1)]
    assert all(rev.revision.startswith(Path(rev.path).name[:4]) for rev in order)
