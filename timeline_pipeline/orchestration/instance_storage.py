"""Dagster's PostgreSQL instance storage, holding its connections open in every process.

dagster-postgres opens a new database connection for every storage call outside
`dagster-webserver` (its engines use SQLAlchemy's `NullPool`), so a run that materializes a
window pays several connection set-ups per event: on the batch runs of window synthesis that
was most of Dagster's cost per window (docs/scaling.md, "Where a window's time goes").
`PooledPostgresStorage` is the same storage with each of its three engines switched to a held
pool, which is what dagster-postgres itself does inside the webserver (`optimize_for_webserver`):
same tables, same schema migrations, same URL, so an instance can move between the two classes
and back with nothing to migrate.

`deploy/dagster.yaml` names it under `storage: custom:`; every process that reads the instance
(daemon, webserver, code server, runs, Celery workers) must have this package installed, which
a deployment that runs the project's code in those processes already does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dagster._config import Field, IntSource
from dagster._core.storage.config import pg_config
from dagster._serdes import ConfigurableClassData
from dagster_postgres import DagsterPostgresStorage
from dagster_postgres.utils import get_token_provider_from_config, pg_url_from_config

DEFAULT_MAX_OVERFLOW = 10
"""Extra connections a busy process (the daemon's threads) may open beyond the held one; they
are closed when returned, as every connection is today."""
DEFAULT_POOL_RECYCLE_SECONDS = 3600
"""A held connection older than this is replaced (a server or balancer may drop idle ones)."""
DEFAULT_STATEMENT_TIMEOUT_MS = 0
"""0: no timeout beyond the server's own, as with dagster-postgres's default engines."""


class PooledPostgresStorage(DagsterPostgresStorage):
    """`storage: postgres` with pooled connections (see the module docstring)."""

    def __init__(
        self,
        postgres_url: str,
        should_autocreate_tables: bool = True,
        inst_data: ConfigurableClassData | None = None,
        token_provider: Any = None,
        *,
        max_overflow: int = DEFAULT_MAX_OVERFLOW,
        pool_recycle_seconds: int = DEFAULT_POOL_RECYCLE_SECONDS,
        statement_timeout_ms: int = DEFAULT_STATEMENT_TIMEOUT_MS,
    ) -> None:
        super().__init__(
            postgres_url,
            should_autocreate_tables=should_autocreate_tables,
            inst_data=inst_data,
            token_provider=token_provider,
        )
        for storage in (self._run_storage, self._event_log_storage, self._schedule_storage):
            storage.optimize_for_webserver(statement_timeout_ms, pool_recycle_seconds, max_overflow)

    @classmethod
    def config_type(cls) -> dict[str, Any]:
        base = pg_config()
        assert isinstance(base, Mapping)  # dagster-postgres's schema is a dict of fields
        return {
            **base,
            "max_overflow": Field(IntSource, is_required=False, default_value=DEFAULT_MAX_OVERFLOW),
            "pool_recycle_seconds": Field(
                IntSource, is_required=False, default_value=DEFAULT_POOL_RECYCLE_SECONDS
            ),
            "statement_timeout_ms": Field(
                IntSource, is_required=False, default_value=DEFAULT_STATEMENT_TIMEOUT_MS
            ),
        }

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData | None, config_value: Mapping[str, Any]
    ) -> PooledPostgresStorage:
        return cls(
            pg_url_from_config(config_value),
            should_autocreate_tables=config_value.get("should_autocreate_tables", True),
            inst_data=inst_data,
            token_provider=get_token_provider_from_config(config_value),
            max_overflow=config_value["max_overflow"],
            pool_recycle_seconds=config_value["pool_recycle_seconds"],
            statement_timeout_ms=config_value["statement_timeout_ms"],
        )
