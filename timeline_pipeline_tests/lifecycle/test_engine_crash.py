"""`kill -9` of a purge in the middle: no row is lost that was not archived, and the next run
finishes the job (a real process running the engine, on both databases).

The process runs the engine as `lifecycle run` does, without the whole command line's imports
(the CLI module loads every subsystem, seconds of CPU on a busy machine for nothing here)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from sqlalchemy import Engine, select

from timeline_pipeline.db.schema import lifecycle_runs, workspace_timeline_evidence
from timeline_pipeline.lifecycle.archive import read_part_rows, verify_manifest
from timeline_pipeline_tests.lifecycle.support import AS_OF, EVIDENCE, OLD, evidence, ids, workspace

PURGE = """
import sys
from datetime import datetime
from pathlib import Path
from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.lifecycle.archive import LocalDirectoryArchive
from timeline_pipeline.lifecycle.engine import PurgeEngine
from timeline_pipeline.lifecycle.registry import load_registry
url, key, as_of, archive, batch, delay = sys.argv[1:]
PurgeEngine(
    make_engine(url), load_registry(), archive=LocalDirectoryArchive(Path(archive)),
    batch_limit=int(batch), batch_delay_ms=int(delay),
).run(descriptor_key=key, as_of=datetime.fromisoformat(as_of))
"""
ROWS = 400
BATCH = 20


def archived_ids(root: Path) -> set[int]:
    """Ids in every verified part that a manifest lists, over every run under `root`."""
    found: set[int] = set()
    for manifest_path in root.glob("*/manifest.json"):
        manifest = verify_manifest(manifest_path)
        for entry in manifest.descriptors.values():
            for part in entry.parts:
                found |= {row["id"] for row in read_part_rows(manifest_path.parent, part)}
    return found


def purged_so_far(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(lifecycle_runs.c.purged)).scalar() or 0)


def run(db_url: str, archive: Path, delay_ms: int = 0) -> subprocess.Popen[bytes]:
    args = [sys.executable, "-c", PURGE, db_url, EVIDENCE, AS_OF.isoformat(), str(archive)]
    args += [str(BATCH), str(delay_ms)]
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def test_a_purge_killed_mid_way_loses_no_unarchived_row(
    db_url: str, engine: Engine, tmp_path: Path
) -> None:
    workspace(engine, "inc-1")
    old = set(evidence(engine, "inc-1", [OLD] * ROWS))
    archive = tmp_path / "archive"
    victim = run(db_url, archive, delay_ms=40)
    deadline = time.monotonic() + 60
    while purged_so_far(engine) < 5 * BATCH:
        assert victim.poll() is None, "the purge ended before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.02)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    remaining = ids(engine, workspace_timeline_evidence)
    gone = old - remaining
    assert 0 < len(gone) < ROWS
    assert gone <= archived_ids(archive)  # every deleted row is in a verified part

    finisher = run(db_url, archive)
    assert finisher.wait(timeout=120) == 0, finisher.stderr.read() if finisher.stderr else ""
    assert ids(engine, workspace_timeline_evidence) == set()
    assert archived_ids(archive) == old
