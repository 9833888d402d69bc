"""The sensor result of the summary sensor: runs for dynamic partitions, with the
partitions that do not exist yet added in the same tick.

Dagster checks run requests against the partitions as they will be after the tick's add
requests, so adding and requesting together is safe; asking storage only for the requested
keys keeps a tick from ever listing every partition.
"""

from collections.abc import Sequence

import dagster as dg


def runs_with_new_partitions(
    instance: dg.DagsterInstance,
    partitions: dg.DynamicPartitionsDefinition,
    run_requests: Sequence[dg.RunRequest],
    *,
    cursor: str | None,
    idle_reason: str,
) -> dg.SensorResult:
    keys = list(dict.fromkeys(r.partition_key for r in run_requests if r.partition_key))
    name = partitions.name
    assert name is not None  # every dynamic partitions definition here is named
    existing = instance.get_existing_dynamic_partitions(name, keys) if keys else set()
    missing = [key for key in keys if key not in existing]
    return dg.SensorResult(
        run_requests=list(run_requests),
        dynamic_partitions_requests=[partitions.build_add_request(missing)] if missing else [],
        cursor=cursor,
        skip_reason=None if run_requests else idle_reason,
    )
