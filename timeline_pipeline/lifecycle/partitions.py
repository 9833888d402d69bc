"""Which Dagster window partitions a purge of window states retires (pure).

A purged window state's partition (docs/dagster.md: `<workspace>:<chat>:<start>[:<version>]`)
has nothing left to synthesize or replay; removing it and its old runs keeps Dagster's live
partition set bounded by the retention, like the product's own tables.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from timeline_pipeline.domain.keys import SOURCE_TYPE_WINDOW
from timeline_pipeline.domain.window_keys import WindowRef


def window_partition_keys(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """Partition keys of the window states among purged sync-state rows (checkpoints and
    rows that do not name a valid window are skipped)."""
    keys: list[str] = []
    for row in rows:
        start = row.get("window_start")
        if row.get("source_type") != SOURCE_TYPE_WINDOW or not isinstance(start, datetime):
            continue
        try:
            ref = WindowRef(
                workspace_id=str(row["workspace_id"]),
                chat_id=str(row["scope_key"]),
                window_start=start,
                processor_version=row.get("processor_version"),
            )
        except (ValueError, KeyError):
            continue
        keys.append(ref.partition_key)
    return sorted(set(keys))
