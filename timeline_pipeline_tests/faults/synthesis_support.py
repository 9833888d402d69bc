"""What the synthesis fault tests share: the product's Dagster definitions with a given set of
settings, the same settings as environment for a separate run process, a deterministic model
answer, a run process that can be killed, and the counts the tests compare.

The model answer depends only on the request (message times), never on evidence ids, so two
databases holding the same chat get the same drafts and can be compared entry for entry.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import dagster as dg
from dagster._core.definitions.sensor_definition import SensorExecutionData
from sqlalchemy import Engine, func, select

from timeline_pipeline.db.schema import workspace_timeline_entries as en
from timeline_pipeline.db.schema import workspace_timeline_entry_evidence as ee
from timeline_pipeline.db.schema import workspace_timeline_evidence as ev
from timeline_pipeline.domain.sync_states import SyncState
from timeline_pipeline.domain.window_keys import WindowRef
from timeline_pipeline.orchestration.resources import DatabaseResource, TimelineSettingsResource
from timeline_pipeline.orchestration.windows import (
    DISCOVERY_SENSOR,
    SYNTHESIS_JOB,
    SynthesizerResource,
    window_defs,
)
from timeline_pipeline.settings import load_timeline_settings
from timeline_pipeline.store import sync_states
from timeline_pipeline_tests.support.anthropic_standin import AnthropicStandIn
from timeline_pipeline_tests.support.processes import ManagedProcess

REPO = Path(__file__).resolve().parents[2]
DAGSTER_CLI = Path(sys.executable).with_name("dagster")
RUN_KEY_TAG = "dagster/run_key"
PARTITION_TAG = "dagster/partition"


# --- settings: one dict, given to the test's sensor and to the run process alike -----------------


def settings_env(overrides: Mapping[str, Any]) -> dict[str, str]:
    """`TIMELINE_LARK_<KEY>` variables carrying the same settings as `overrides`."""
    env: dict[str, str] = {}
    for key, value in overrides.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        env[f"TIMELINE_LARK_{key.upper()}"] = text
    return env


def run_process_env(
    db_url: str, dagster_home: Path, standin: AnthropicStandIn, overrides: Mapping[str, Any]
) -> dict[str, str]:
    """The environment of a production run process: nothing inherited that could redirect it."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("TIMELINE_", "ANTHROPIC_", "DAGSTER_", "LARK_"))
        and name.lower() not in ("http_proxy", "https_proxy", "all_proxy")
    }
    env.update(settings_env(overrides))
    env.update(
        TIMELINE_DATABASE_URL=db_url,
        DAGSTER_HOME=str(dagster_home),
        ANTHROPIC_API_KEY=standin.api_key,
        ANTHROPIC_BASE_URL=standin.base_url,
        NO_PROXY="127.0.0.1,localhost",
    )
    return env


def dagster_home(path: Path) -> Path:
    """A persistent Dagster instance directory shared by the test and its run processes."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    return path


def defs_for(
    db_url: str, overrides: Mapping[str, Any], standin: AnthropicStandIn
) -> dg.Definitions:
    """Window synthesis as the code location defines it, Claude pointed at the stand-in."""
    resources = dg.Definitions(
        resources={
            "database": DatabaseResource(url=db_url),
            "timeline_settings": TimelineSettingsResource(overrides=dict(overrides)),
        }
    )
    synthesizer = SynthesizerResource(api_key=standin.api_key, base_url=standin.base_url)
    return dg.Definitions.merge(
        resources, window_defs(load_timeline_settings(**overrides), synthesizer)
    )


# --- the model's answer --------------------------------------------------------------------------


def _evidence_lines(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The chunk's own evidence as the prompt lists it (context lines carry no id)."""
    lines: list[dict[str, Any]] = []
    for message in body.get("messages", []):
        content = message.get("content")
        texts = [content] if isinstance(content, str) else [b.get("text", "") for b in content]
        for text in texts:
            for line in text.splitlines():
                if line.startswith('{"id":'):
                    lines.append(json.loads(line))
    return lines


def finding_and_action(body: Mapping[str, Any]) -> dict[str, Any]:
    """Two drafts per chunk: a finding citing its first half, an action citing the rest.

    Every evidence row of a chunk is cited by exactly one draft, so a window synthesized once
    binds each of its evidence rows exactly once; titles come from message times only.
    """
    lines = _evidence_lines(body)
    half = (len(lines) + 1) // 2
    first, rest = lines[:half], lines[half:]
    drafts = [
        {
            "title": f"Finding reported at {first[0]['time']}",
            "category": "finding",
            "evidence_ids": [line["id"] for line in first],
        }
    ]
    if rest:
        drafts.append(
            {
                "title": f"Action taken at {rest[0]['time']}",
                "category": "mitigation",
                "evidence_ids": [line["id"] for line in rest],
            }
        )
    return {"entries": drafts}


def one_finding(body: Mapping[str, Any]) -> dict[str, Any]:
    """One draft per chunk citing all of its evidence."""
    lines = _evidence_lines(body)
    return {
        "entries": [
            {
                "title": f"Finding reported at {lines[0]['time']}",
                "category": "finding",
                "evidence_ids": [line["id"] for line in lines],
            }
        ]
    }


def cited_ids(body: Mapping[str, Any]) -> list[int]:
    return [int(line["id"]) for line in _evidence_lines(body)]


# --- a production run in its own process ---------------------------------------------------------


class RunProcess(ManagedProcess):
    """`dagster job execute` of `synthesize_windows` for one partition, as a run worker would.

    It runs in its own session, so that the whole run is one process group, killed together
    like a lost node, and nothing outside it.
    """

    def __init__(
        self,
        *,
        env: Mapping[str, str],
        partition_key: str,
        tags: Mapping[str, str],
        run_config: Mapping[str, Any],
        workdir: Path,
        name: str,
    ) -> None:
        config = workdir / f"{name}.run_config.json"
        config.write_text(json.dumps(run_config))
        command = [
            str(DAGSTER_CLI),
            "job",
            "execute",
            "-m",
            "timeline_pipeline.definitions",
            "-j",
            SYNTHESIS_JOB,
            "--tags",
            json.dumps({**tags, PARTITION_TAG: partition_key}),
            "-c",
            str(config),
        ]
        super().__init__(name, command, cwd=REPO, env=env, log_path=workdir / f"{name}.log")


def wait_until(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.02)


# --- sensor ticks --------------------------------------------------------------------------------


def sensor_tick(
    defs: dg.Definitions, instance: dg.DagsterInstance, cursor: str | None
) -> SensorExecutionData:
    """One evaluation of the real discovery sensor; its partitions are added as the daemon does."""
    sensor = defs.resolve_sensor_def(DISCOVERY_SENSOR)
    with dg.build_sensor_context(
        instance_ref=instance.get_ref(), definitions=defs, cursor=cursor, resources=defs.resources
    ) as context:
        data = sensor.evaluate_tick(context)
    for request in data.dynamic_partitions_requests or []:
        keys = list(getattr(request, "partition_keys", []) or [])
        if keys:
            instance.add_dynamic_partitions(request.partitions_def_name, keys)
    return data


def request_tags(request: dg.RunRequest) -> dict[str, str]:
    """The tags the daemon gives a sensor's run: the request's own plus its run key."""
    tags = dict(request.tags)
    if request.run_key:
        tags[RUN_KEY_TAG] = request.run_key
    return tags


# --- what the database holds ---------------------------------------------------------------------


def find_window_state(engine: Engine, ref: WindowRef) -> SyncState | None:
    with engine.connect() as conn:
        return sync_states.get_by_key(
            conn, ref.workspace_id, "system", "lark_timeline_window", ref.source_key
        )


def window_state(engine: Engine, ref: WindowRef) -> SyncState:
    state = find_window_state(engine, ref)
    assert state is not None, f"no state row for {ref.partition_key}"
    return state


def evidence_snapshot(engine: Engine) -> list[tuple[Any, ...]]:
    """Every evidence row's identity and version: what "evidence intact" compares."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(
                ev.c.id, ev.c.source_key, ev.c.content_hash, ev.c.deleted, ev.c.ai_eligible
            ).order_by(ev.c.id)
        ).all()
    return [tuple(row) for row in rows]


def binding_counts(engine: Engine, workspace_id: str) -> Counter[int]:
    """How many entries bind each evidence row of the workspace."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(ee.c.evidence_id, func.count())
            .select_from(ee.join(en, en.c.id == ee.c.entry_id))
            .where(en.c.workspace_id == workspace_id)
            .group_by(ee.c.evidence_id)
        ).all()
    return Counter({int(evidence_id): int(count) for evidence_id, count in rows})


def entry_rows(engine: Engine, workspace_id: str) -> list[tuple[int, str, str, str | None]]:
    """(id, title, category, fingerprint) of every entry of the workspace."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(en.c.id, en.c.title, en.c.category, en.c.fingerprint)
            .where(en.c.workspace_id == workspace_id)
            .order_by(en.c.id)
        ).all()
    return [(int(r.id), str(r.title), str(r.category), r.fingerprint) for r in rows]


def entry_shapes(
    engine: Engine, workspace_id: str, window_ids: Sequence[int]
) -> set[tuple[str, str, tuple[int, ...]]]:
    """Entries as (title, category, positions of their evidence in the window's order): the
    same in two databases that hold the same chat, whatever ids each database gave."""
    position = {evidence_id: index for index, evidence_id in enumerate(window_ids)}
    with engine.connect() as conn:
        rows = conn.execute(
            select(en.c.id, en.c.title, en.c.category, ee.c.evidence_id)
            .select_from(en.join(ee, ee.c.entry_id == en.c.id))
            .where(en.c.workspace_id == workspace_id)
        ).all()
    grouped: dict[int, tuple[str, str, list[int]]] = {}
    for row in rows:
        grouped.setdefault(row.id, (row.title, row.category, []))[2].append(
            position[int(row.evidence_id)]
        )
    return {(title, category, tuple(sorted(at))) for title, category, at in grouped.values()}


def seconds_until(moment: datetime, now: datetime) -> float:
    return max(0.0, (moment - now) / timedelta(seconds=1))
