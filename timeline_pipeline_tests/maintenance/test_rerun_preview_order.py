"""The rerun preview predicts its apply when one fact is stated in two chats of a workspace
(docs/maintenance.md, "Preview a rerun"), on SQLite and PostgreSQL.

Fingerprints are workspace-wide and scoped in time from a fact's first proposal, so the
outcome depends on the order the windows are synthesized in. The apply's windows are run by
the sensor oldest first across chats (`windows.batches.plan_runs`); here the same rollback is
said in chat B at :01 and in chat A at :20 and :45 of one fingerprint scope. Oldest first, :01
creates the entry, :20 restates it (same scope bucket) and :45, 44 minutes after the first
proposal, is an entry of its own: two entries. Walked chat by chat (A's :20 first, then A's :45
25 minutes later), the preview would have merged all three into one.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine

from timeline_pipeline.domain.window_keys import WindowRef, parse_partition_key
from timeline_pipeline.maintenance.processors import default_registry
from timeline_pipeline.maintenance.processors.rerun_walk import RerunWalk
from timeline_pipeline.maintenance.service import JobService
from timeline_pipeline.synthesis.contract import FINGERPRINT_SCOPE, SynthesisChunk, SynthesisResult
from timeline_pipeline.synthesis.rules import RuleSynthesizer
from timeline_pipeline.synthesis_run.draft_matching import CITED_EVIDENCE
from timeline_pipeline.synthesis_run.runner import WindowRunner
from timeline_pipeline.windows.batches import BatchItem, plan_runs
from timeline_pipeline.windows.discovery import DiscoveryTick
from timeline_pipeline.windows.planning import DiscoveryCursor
from timeline_pipeline_tests.curation.support import NOW, ROLLBACK, all_entries, say
from timeline_pipeline_tests.maintenance.support import FAST, SteppingClock, drive
from timeline_pipeline_tests.windows.support import WINDOW, settings, workspace

VERSION = "rules-v8"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
SCOPE = EPOCH + ((NOW - timedelta(hours=3) - EPOCH) // FINGERPRINT_SCOPE) * FINGERPRINT_SCOPE
"""The start of a fingerprint scope bucket, well inside every lookback."""
CHAT_A, CHAT_B = "oc_a", "oc_b"
MIN = timedelta(minutes=1)


class Silent(RuleSynthesizer):
    """The version before the upgrade: it proposed nothing, so every draft is new."""

    prompt_version = "rules-silent"

    def synthesize(self, chunk: SynthesisChunk) -> SynthesisResult:
        result = super().synthesize(chunk)
        return result.model_copy(update={"entries": [], "prompt_version": self.prompt_version})


def _workspace(engine: Engine) -> None:
    workspace(engine, "inc-1", (CHAT_A, CHAT_B), created_at=SCOPE - timedelta(hours=1))
    said = [(CHAT_B, 1), (CHAT_A, 20), (CHAT_A, 45)]
    runner = WindowRunner(engine, settings(), Silent())
    for chat, minute in said:
        at = SCOPE + timedelta(minutes=minute)
        start = SCOPE + (at - SCOPE) // WINDOW * WINDOW
        say(engine, start, [ROLLBACK], chat=chat, offset=at - start)
        runner.run(WindowRef("inc-1", chat, start), owner="old")
    assert all_entries(engine) == []


def _job(svc: JobService, key: str, *, apply: bool = False) -> Any:
    job, _ = svc.create(
        job_type="window_rerun",
        idempotency_key=key,
        parameters={"workspace_id": "inc-1", "processor_version": VERSION},
        limits=replace(FAST, batch_size=2, statement_timeout_ms=5000),
        apply=apply,
    )
    return drive(svc, job)


def _apply_as_the_sensor_does(engine: Engine, svc: JobService) -> list[str]:
    """The apply job, then one discovery tick and its run plan, each run's windows in order."""
    done = _job(svc, "apply", apply=True)
    assert done.status == "completed", done.error
    config = settings()
    outcome = DiscoveryTick(engine, config, DiscoveryCursor(), NOW).run()
    plan = plan_runs(
        [BatchItem(r.ref, r.group, r.tags) for r in outcome.requests],
        existing=(),
        max_windows=config.synthesis_run_max_windows,
    )
    runner = WindowRunner(engine, config, RuleSynthesizer())
    ran: list[str] = []
    for run in plan.runs:
        for key in run.keys:
            runner.run(parse_partition_key(key), owner="sensor")
            ran.append(key)
    return ran


def test_the_preview_walks_the_windows_in_the_apply_order_and_predicts_its_entries(
    engine: Engine,
) -> None:
    _workspace(engine)
    svc = JobService(engine, default_registry(settings()), clock=SteppingClock(NOW))

    preview = _job(svc, "preview")

    assert preview.status == "completed" and preview.result is not None, preview.error
    report = svc.view(preview.id)["result"]["preview"]
    walked = [(w["window_start"], w["chat_id"]) for w in report["windows"]]
    added = [item for window in report["windows"] for item in window["added"]]

    ran = _apply_as_the_sensor_does(engine, svc)

    assert [parse_partition_key(key).chat_id for key in ran] == [CHAT_B, CHAT_A, CHAT_A]
    made = all_entries(engine)
    assert len(made) == 2  # :01 and :20 are one fact, :45 is 44 minutes after its proposal
    assert report["totals"]["added"] == len(made)
    assert sorted((i["title"], i["category"], i["evidence_ids"]) for i in added) == sorted(
        (e.title, e.category, e.metadata[CITED_EVIDENCE]) for e in made
    )
    # The :20 restatement is reported as new support of the draft the :01 one adds.
    (restated,) = [i for w in report["windows"] for i in w["unchanged"]]
    assert restated["new_in_preview"] and restated["new_evidence"] == 1
    assert walked == sorted(walked)  # oldest first across chats, as the sensor runs them


def test_the_walk_merges_the_chats_oldest_first_and_resumes_a_chat_by_chat_checkpoint() -> None:
    t = SCOPE
    messages = {CHAT_A: [t + 20 * MIN, t + 45 * MIN], CHAT_B: [t + MIN, t + 21 * MIN]}

    def seek(chat: str, at: datetime) -> datetime | None:
        return next((m for m in messages[chat] if m >= at), None)

    def windows(walk: RerunWalk) -> list[tuple[str, int]]:
        taken = []
        while (found := walk.next(seek)) is not None:
            taken.append((found[0], int((found[1] - t) / MIN)))
        assert walk.done
        return taken

    fresh = RerunWalk.start(t + 2 * FINGERPRINT_SCOPE, WINDOW, [CHAT_A, CHAT_B], t)
    assert windows(fresh) == [(CHAT_B, 0), (CHAT_A, 20), (CHAT_B, 20), (CHAT_A, 40)]
    # Stopped after two windows, resumed from the stored checkpoint: the same order.
    first = RerunWalk.start(t + 2 * FINGERPRINT_SCOPE, WINDOW, [CHAT_A, CHAT_B], t)
    assert [first.next(seek), first.next(seek)] == [(CHAT_B, t), (CHAT_A, t + 20 * MIN)]
    stored = json.loads(json.dumps(first.as_json()))
    resumed = RerunWalk.from_checkpoint(stored, WINDOW, [CHAT_A, CHAT_B], t)
    assert windows(resumed) == [(CHAT_B, 20), (CHAT_A, 40)]
    # A job stored chat by chat (A done up to :30, B not started) goes on from there.
    old = {"v": 1, "until": (t + 2 * FINGERPRINT_SCOPE).isoformat(), "chat": CHAT_A}
    old["at"] = (t + 30 * MIN).isoformat()
    assert windows(RerunWalk.from_checkpoint(old, WINDOW, [CHAT_A, CHAT_B], t)) == [
        (CHAT_B, 0),
        (CHAT_B, 20),
        (CHAT_A, 40),
    ]
    # Nothing at or after `until` is taken.
    assert windows(RerunWalk.start(t + 21 * MIN, WINDOW, [CHAT_A, CHAT_B], t)) == [
        (CHAT_B, 0),
        (CHAT_A, 20),
    ]
