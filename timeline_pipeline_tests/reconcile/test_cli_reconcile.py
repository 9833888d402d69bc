"""`timeline-pipeline reconcile` as an operator runs it, including `kill -9` in mid-backfill.

The kill test runs the real command as a subprocess against a slowed local Lark, kills it with
SIGKILL once a few pages are committed, and resumes: nothing is lost, the committed pages and
the in-progress marker agree exactly, and the resumed run reads the remaining pages plus at most
the overlap (counted by the simulator's request counter).
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from timeline_pipeline.cli.main import cli
from timeline_pipeline.domain.sync_states import CHECKPOINT_MARKER_KEY
from timeline_pipeline.reconcile.planning import MessageKey
from timeline_pipeline_tests.reconcile.conftest import MakeHarness
from timeline_pipeline_tests.reconcile.harness import CHAT, NOW, PAGE, Harness, messages

OVERLAP = timedelta(minutes=10)
CLI = str(Path(sys.executable).parent / "timeline-pipeline")
Invoke = Callable[..., tuple[int, str, str]]


def cli_env(h: Harness, db_url: str, **extra: str) -> dict[str, str]:
    """The subprocess's environment: ours without timeline/Lark settings, plus the run's."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TIMELINE_", "LARK_"))
        and k.lower() not in ("http_proxy", "https_proxy")
    }
    env.update(
        TIMELINE_DATABASE_URL=db_url,
        TIMELINE_LARK_ENABLED="true",
        TIMELINE_LARK_LARK_MAX_ATTEMPTS="2",
        TIMELINE_LARK_RETRY_BACKOFF_BASE="1ms",
        TIMELINE_LARK_RETRY_BACKOFF_CAP="5ms",
        LARK_APP_ID=h.sim.app_id,
        LARK_APP_SECRET=h.sim.app_secret,
        LARK_BASE_URL=h.sim.base_url,
        NO_PROXY="127.0.0.1,localhost",
    )
    env.update(extra)
    return env


@pytest.fixture
def invoke(db_url: str) -> Invoke:
    """Run the command in-process (fast) with exactly the given environment."""

    def run(h: Harness, *args: str, **extra: str) -> tuple[int, str, str]:
        result = CliRunner().invoke(cli, ["reconcile", *args], env=cli_env(h, db_url, **extra))
        return result.exit_code, result.stdout, result.stderr

    return run


def wait_for_committed_pages(h: Harness, pages: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, "the backfill finished before it could be killed"
        try:
            marker = h.checkpoint().metadata.get(CHECKPOINT_MARKER_KEY) or {}
        except AssertionError:  # no checkpoint row yet
            marker = {}
        if marker.get("pages", 0) >= pages:
            return
        time.sleep(0.02)
    raise AssertionError("the backfill did not commit pages in time")


@pytest.mark.slow
def test_kill_9_in_the_middle_of_a_backfill_then_resume_loses_nothing_and_rereads_little(
    make_harness: MakeHarness, db_url: str, invoke: Invoke
) -> None:
    items = messages(1000, start=NOW - 6 * timedelta(hours=1), interval_seconds=20)
    h = make_harness(items)
    h.workspace(created_at=NOW - 7 * timedelta(hours=1))
    h.sim.faults.update(latency_ms=120)

    process = subprocess.Popen(
        [CLI, "reconcile", "--workspace", "inc-1", "--json"],
        env=cli_env(h, db_url),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_committed_pages(h, 5, process)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL

    killed = h.checkpoint()
    marker = killed.metadata[CHECKPOINT_MARKER_KEY]
    committed_pages = marker["pages"]
    assert 5 <= committed_pages < math.ceil(len(items) / PAGE)
    assert killed.last_seen_cursor is None  # the high-water mark waits for the whole range
    assert h.evidence_count() == committed_pages * PAGE  # pages and marker commit together
    after = MessageKey.decode(marker["after"])
    assert after == MessageKey(
        int(items[committed_pages * PAGE - 1]["create_time"]),
        items[committed_pages * PAGE - 1]["message_id"],
    )

    h.sim.faults.update(latency_ms=0)
    h.sim.reset_counts()
    code, out, err = invoke(h, "--workspace", "inc-1", "--json")

    assert (code, err) == (0, "")
    [chat] = json.loads(out)["per_chat"]
    assert chat["resumed_from"] == after.encode()
    reread_floor_ms = (after.create_time_ms - int(OVERLAP.total_seconds() * 1000)) // 1000 * 1000
    reread = [i for i in items if reread_floor_ms <= int(i["create_time"]) <= after.create_time_ms]
    remaining = len(items) - committed_pages * PAGE
    assert chat["messages"] == remaining + len(reread)
    assert len(reread) <= OVERLAP.total_seconds() / 10  # no two messages closer than 10 s
    # Plus the one page before the floor that every run reads for threads rooted there.
    assert h.page_requests == math.ceil((remaining + len(reread)) / PAGE) + 1
    assert h.message_ids() == {i["message_id"] for i in items}
    done = h.checkpoint()
    assert (
        done.last_seen_cursor
        == MessageKey(int(items[-1]["create_time"]), items[-1]["message_id"]).encode()
    )
    assert done.metadata[CHECKPOINT_MARKER_KEY] is None


def test_prints_counts_and_succeeds(make_harness: MakeHarness, invoke: Invoke) -> None:
    h = make_harness(messages(70, start=NOW - timedelta(hours=2)))
    h.workspace()

    code, out, err = invoke(h, "--workspace", "inc-1", "--chat", CHAT)

    assert (code, err) == (0, "")
    assert "2 page(s), 70 message(s), 70 inserted, 0 updated, 0 duplicate" in out


def test_refreshes_a_recovered_workspace_as_json(make_harness: MakeHarness, invoke: Invoke) -> None:
    h = make_harness(messages(10, start=NOW - timedelta(hours=2)))
    h.workspace(status="recovered")

    code, out, _ = invoke(h, "--workspace", "inc-1", "--refresh", "--json")

    assert code == 0
    report = json.loads(out)
    assert (report["mode"], report["inserted"], report["failures"]) == ("refresh", 10, 0)


@pytest.mark.parametrize(
    ("args", "env", "fragment"),
    [
        (("--workspace", "ghost"), {}, "workspace 'ghost' does not exist"),
        (("--workspace", "inc-1", "--chat", "oc_other"), {}, "is not bound to workspace"),
        (("--workspace", "inc-1"), {"TIMELINE_LARK_ENABLED": "false"}, "disabled"),
        (("--workspace", "inc-1"), {"LARK_APP_SECRET": ""}, "LARK_APP_SECRET must be set"),
    ],
)
def test_operator_mistakes_are_one_line_and_non_zero(
    make_harness: MakeHarness,
    invoke: Invoke,
    args: tuple[str, ...],
    env: dict[str, str],
    fragment: str,
) -> None:
    h = make_harness(messages(5, start=NOW - timedelta(hours=1)))
    h.workspace()

    code, _, err = invoke(h, *args, **env)

    assert code == 1
    assert fragment in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err
    assert h.page_requests == 0


def test_a_lark_error_prints_the_counts_then_fails(
    make_harness: MakeHarness, invoke: Invoke
) -> None:
    h = make_harness(
        messages(20, start=NOW - timedelta(hours=1))
        + messages(5, start=NOW - timedelta(hours=1), chat_id="oc_hidden", seed=2)
    )
    h.workspace(chats=(CHAT, "oc_hidden"))
    h.sim.faults.update(permission_denied_chats={"oc_hidden"})

    code, out, err = invoke(h, "--workspace", "inc-1", "--json")

    assert code == 1
    report = json.loads(out)
    assert (report["inserted"], report["failures_by_kind"]) == (20, {"permission_denied": 1})
    assert err.startswith(
        "error: 1 chat(s) failed to reconcile: inc-1/oc_hidden: permission_denied"
    )
    assert len(err.strip().splitlines()) == 1
