"""The archive and purge engine on both databases: bounded passes, leaves first, holds win,
and every refusal leaves the rows where they were and the run recorded as failed."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select

from timeline_pipeline.db.schema import (
    lifecycle_runs,
    workspace_timeline_entries,
    workspace_timeline_entry_evidence,
    workspace_timeline_evidence,
)
from timeline_pipeline.domain.errors import LegalHoldActive
from timeline_pipeline.domain.lifecycle import DelegatedPurge, DeletionDecision
from timeline_pipeline.lifecycle.archive import (
    LocalDirectoryArchive,
    read_part_rows,
    verify_manifest,
)
from timeline_pipeline.lifecycle.engine import PurgeEngine
from timeline_pipeline.lifecycle.errors import ArchiveUnavailable, DeletionModeRefused, NotGeneric
from timeline_pipeline.lifecycle.holds import create_hold
from timeline_pipeline.lifecycle.registry import Registry, load_registry
from timeline_pipeline_tests.lifecycle.support import (
    AS_OF,
    ENTRIES,
    EVIDENCE,
    OLD,
    WINDOWS,
    YOUNG,
    count,
    entry,
    evidence,
    ids,
    window,
    workspace,
)
from timeline_pipeline_tests.support.windows import WINDOW

ev = workspace_timeline_evidence
ee = workspace_timeline_entry_evidence
en = workspace_timeline_entries


def purge(engine: Engine, registry: Registry | None = None, **kw: Any) -> Any:
    options = {
        k: kw.pop(k) for k in ("archive", "batch_limit", "on_purged", "vacuum_threshold") if k in kw
    }
    made = PurgeEngine(engine, registry or load_registry(), **options)
    return made.run(as_of=AS_OF, **kw)


def hold(engine: Engine, ws: str, descriptor: str | None = None) -> str:
    with engine.begin() as conn:
        return create_hold(
            conn,
            load_registry(),
            workspace_id=ws,
            descriptor_key=descriptor,
            reason="preservation notice 17",
            idempotency_key=f"{ws}-{descriptor}",
            actor="counsel",
        ).hold.id


def last_run(engine: Engine) -> Any:
    with engine.connect() as conn:
        return conn.execute(select(lifecycle_runs).order_by(lifecycle_runs.c.id.desc())).first()


def test_more_rows_than_the_batch_limit_purge_over_several_passes_without_duplicates_or_skips(
    engine: Engine, tmp_path: Path
) -> None:
    workspace(engine, "inc-1")
    # 7 rows share every instant, so batch boundaries (limit 5) fall inside runs of equal
    # timestamps, and a microsecond apart from the next instant.
    moments = [OLD + timedelta(microseconds=i // 7) for i in range(63)]
    old = evidence(engine, "inc-1", moments)
    young = evidence(engine, "inc-1", [YOUNG] * 3, prefix="y")
    outcome = purge(
        engine,
        descriptor_key=EVIDENCE,
        archive=LocalDirectoryArchive(tmp_path),
        batch_limit=5,
    )
    (d,) = outcome.descriptors
    assert (d.purged, d.archived, d.batches) == (63, 63, 13)
    assert ids(engine, ev) == set(young)
    manifest = verify_manifest(Path(outcome.manifest))
    entry_ = manifest.descriptors[EVIDENCE]
    archived = Counter(
        row["id"]
        for part in entry_.parts
        for row in read_part_rows(Path(outcome.manifest).parent, part)
    )
    assert sorted(archived) == sorted(old)
    assert set(archived.values()) == {1}
    assert entry_.cursor_min == OLD.isoformat()
    assert entry_.cursor_max == moments[-1].isoformat()
    run = last_run(engine)
    assert (run.status, run.purged, run.archived, run.batches) == ("succeeded", 63, 63, 13)


def test_leaves_go_first_and_a_chain_ages_as_a_whole(engine: Engine) -> None:
    workspace(engine, "inc-1")
    aged = evidence(engine, "inc-1", [OLD] * 4)
    entry(engine, "inc-1", OLD, aged[:2])  # the whole chain aged out
    entry(engine, "inc-1", YOUNG, aged[2:3])  # a young entry keeps its old evidence
    outcome = purge(engine, workspace_id="inc-1")
    purged = {d.descriptor: d.purged for d in outcome.descriptors}
    assert purged["entries.workspace_timeline_entry_evidence"] == 2
    assert purged[ENTRIES] == 1
    assert purged[EVIDENCE] == 3
    assert ids(engine, ev) == {aged[2]}
    assert count(engine, ee) == 1
    assert count(engine, en) == 1


def test_a_hold_on_one_link_blocks_the_whole_chain(engine: Engine) -> None:
    for ws in ("inc-1", "inc-2"):
        workspace(engine, ws)
        entry(engine, ws, OLD, evidence(engine, ws, [OLD] * 3))
    hold(engine, "inc-1", ENTRIES)
    purge(engine)
    assert count(engine, ev, ev.c.workspace_id == "inc-1") == 3
    assert count(engine, ee, ee.c.workspace_id == "inc-1") == 3
    assert count(engine, en, en.c.workspace_id == "inc-1") == 1
    assert count(engine, ev, ev.c.workspace_id == "inc-2") == 0
    assert count(engine, en, en.c.workspace_id == "inc-2") == 0


def test_a_purge_of_a_held_workspace_is_refused_deletes_nothing_and_is_recorded_failed(
    engine: Engine,
) -> None:
    workspace(engine, "inc-1")
    evidence(engine, "inc-1", [OLD] * 3)
    hold(engine, "inc-1")
    with pytest.raises(LegalHoldActive, match="inc-1 is under legal hold"):
        purge(engine, workspace_id="inc-1", retention_days_override=7, descriptor_key=EVIDENCE)
    assert count(engine, ev) == 3
    run = last_run(engine)
    assert (run.status, run.error_code, run.purged) == ("failed", "legal_hold_active", 0)


def test_an_archive_directory_that_is_not_writable_deletes_nothing(
    engine: Engine, tmp_path: Path
) -> None:
    workspace(engine, "inc-1")
    evidence(engine, "inc-1", [OLD] * 3)
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    with pytest.raises(ArchiveUnavailable, match="is not a directory"):
        purge(engine, archive=LocalDirectoryArchive(not_a_dir))
    assert count(engine, ev) == 3
    assert last_run(engine).error_code == "archive_unavailable"


class FullDisk(LocalDirectoryArchive):
    """Parts go to /dev/full, a real device that is always full: every write is ENOSPC."""

    def _temporary_path(self, path: Path) -> Path:
        return Path("/dev/full")


def test_an_archive_that_fills_up_deletes_nothing_and_names_the_cause(
    engine: Engine, tmp_path: Path
) -> None:
    workspace(engine, "inc-1")
    evidence(engine, "inc-1", [OLD] * 3)
    with pytest.raises(ArchiveUnavailable, match="ENOSPC"):
        purge(engine, archive=FullDisk(tmp_path), descriptor_key=EVIDENCE)
    assert count(engine, ev) == 3
    run = last_run(engine)
    assert (run.status, run.purged) == ("failed", 0)


def test_only_hard_delete_is_executed_and_a_delegated_table_is_not_purged_here(
    engine: Engine,
) -> None:
    workspace(engine, "inc-1")
    evidence(engine, "inc-1", [OLD] * 2)
    registry = load_registry()
    soft = replace(registry.get(EVIDENCE), deletion=DeletionDecision("soft_delete", "keep"))
    with pytest.raises(DeletionModeRefused, match="only hard_delete"):
        purge(engine, Registry({**registry.descriptors, EVIDENCE: soft}))
    delegated = replace(
        registry.get(EVIDENCE),
        execution_mode="delegated",
        delegated=DelegatedPurge("x:purge", "x_job", "its own"),
    )
    with pytest.raises(NotGeneric, match="x_job"):
        purge(
            engine, Registry({**registry.descriptors, EVIDENCE: delegated}), descriptor_key=EVIDENCE
        )
    assert count(engine, ev) == 2


def test_recalled_evidence_is_redacted_in_place_except_under_a_hold(engine: Engine) -> None:
    for ws in ("inc-1", "inc-2"):
        workspace(engine, ws)
        evidence(engine, ws, [YOUNG] * 2, deleted=True)
    hold(engine, "inc-2")
    outcome = purge(engine, descriptor_key=EVIDENCE)
    assert outcome.descriptors[0].redacted == 2
    with engine.connect() as conn:
        rows = conn.execute(select(ev.c.workspace_id, ev.c.content, ev.c.metadata_json)).all()
    for row in rows:
        if row.workspace_id == "inc-1":
            assert row.content == ""
            assert "secret" not in row.metadata_json
            assert row.metadata_json["chat_id"] == "oc_1"
        else:
            assert row.content.startswith("message")


def test_purged_windows_are_reported_with_their_partition_coordinates(engine: Engine) -> None:
    workspace(engine, "inc-1")
    window(engine, "inc-1", OLD, "completed")
    window(engine, "inc-1", OLD + WINDOW, "processing")
    seen: list[dict[str, Any]] = []
    purge(engine, descriptor_key=WINDOWS, on_purged=lambda d, rows: seen.extend(rows))
    assert [(r["workspace_id"], r["scope_key"], r["window_start"]) for r in seen] == [
        ("inc-1", "oc_1", OLD)
    ]
    assert "content" not in seen[0]


@pytest.mark.postgres_only
def test_a_large_purge_is_followed_by_vacuum_analyze_on_postgresql(pg_url: str) -> None:
    from timeline_pipeline.db.engine import make_engine

    engine = make_engine(pg_url)
    try:
        workspace(engine, "inc-1")
        evidence(engine, "inc-1", [OLD] * 20)
        outcome = purge(engine, descriptor_key=EVIDENCE, vacuum_threshold=10)
        assert outcome.descriptors[0].vacuumed
        with engine.connect() as conn:
            analyzed = conn.exec_driver_sql(
                "SELECT last_analyze FROM pg_stat_user_tables "
                "WHERE relname = 'workspace_timeline_evidence'"
            ).scalar_one()
        assert analyzed is not None
    finally:
        engine.dispose()


def test_a_run_left_running_by_a_killed_purge_is_marked_failed_by_the_next_run(
    engine: Engine,
) -> None:
    from timeline_pipeline.store import lifecycle_runs as runs_store

    long_ago = datetime.now(UTC) - timedelta(hours=2)
    recent = datetime.now(UTC) - timedelta(minutes=1)
    with engine.begin() as conn:
        ids = [
            runs_store.start(
                conn,
                {
                    "run_key": f"run_killed_{i}",
                    "mode": "purge",
                    "as_of": AS_OF,
                    "started_at": beat,
                    "heartbeat_at": beat,
                },
            )
            for i, beat in enumerate((long_ago, recent))
        ]
    outcome = purge(engine, descriptor_key=EVIDENCE)
    assert outcome.stale_runs_failed == [ids[0]]
    with engine.connect() as conn:
        dead, alive = (runs_store.get(conn, i) for i in ids)
    assert dead is not None and (dead.status, dead.error_code) == ("failed", "stale_heartbeat")
    assert dead.finished_at is not None
    assert alive is not None and alive.status == "running"
