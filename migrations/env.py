"""Alembic environment: runs against the connection handed in by timeline_pipeline.db.migrate,
or against TIMELINE_DATABASE_URL when alembic is invoked by hand."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.schema import metadata
from timeline_pipeline.settings import load_runtime_environment

config = context.config
target_metadata = metadata


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = make_engine(load_runtime_environment().database_url, null_pool=True)
    with engine.connect() as conn:
        _run(conn)
    engine.dispose()


if context.is_offline_mode():
    raise SystemExit("offline SQL generation is not supported; run `timeline-pipeline db upgrade`")
run_migrations_online()
