"""Column types that behave the same on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, DateTime, Dialect, Integer, TypeDecorator
from sqlalchemy.dialects.postgresql import JSONB


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC in and out, with microseconds, on both databases.

    SQLite has no timezone type: values are stored as naive UTC text (SQLAlchemy always writes six
    fractional digits, so text order is time order) and come back marked UTC. A naive datetime
    handed in is a programming error, refused rather than guessed.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        value = value.astimezone(UTC)
        if dialect.name == "sqlite":
            return value.replace(tzinfo=None)
        return value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


# JSON on SQLite, JSONB on PostgreSQL (indexable, compact).
JSONType: Any = JSON().with_variant(JSONB(), "postgresql")

# SQLite only autoincrements an INTEGER PRIMARY KEY; PostgreSQL gets a 64-bit identity.
BigIntId: Any = BigInteger().with_variant(Integer(), "sqlite")
