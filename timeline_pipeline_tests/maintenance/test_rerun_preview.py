"""The rerun preview on SQLite and PostgreSQL: a rule processor upgrade previewed on a
synthesized workspace with a confirmed and a human entry, then applied; the apply equals the
preview, the preview writes nothing but its scratch rows, and it can be cancelled.

The old rule version is the current rule synthesizer with known differences (docs/maintenance.md,
"Preview a rerun"): it withholds each chunk's first draft (the new version adds it), shouts the
second one's title (the new version changes it back), and adds a noise draft of its own (the new
version drops it).
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import Engine, func, select, text, update

from timeline_pipeline.cli.main import cli
from timeline_pipeline.db.schema import metadata
from timeline_pipeline.db.schema import window_rerun_previews as pv
from timeline_pipeline.domain.entries import EntryRow
from timeline_pipeline.domain.errors import InvalidTransition
from timeline_pipeline.domain.keys import SOURCE_SYSTEM, SOURCE_TYPE_WINDOW
from timeline_pipeline.domain.window_keys import WindowRef
from timeline_pipeline.lifecycle.engine import PurgeEngine
from timeline_pipeline.lifecycle.registry import load_registry
from timeline_pipeline.maintenance.preview_report import markdown
from timeline_pipeline.maintenance.processors import default_registry
from timeline_pipeline.maintenance.service import JobService
from timeline_pipeline.store import entries, sync_states
from timeline_pipeline.synthesis.contract import DraftEntry, SynthesisChunk, SynthesisResult
from timeline_pipeline.synthesis.rules import RuleSynthesizer
from timeline_pipeline.synthesis_run.runner import WindowRunner
from timeline_pipeline_tests.curation.support import (
    CHAT,
    IMPACT,
    NEXT_STEP,
    NOW,
    RECOVERED,
    ROLLBACK,
    ROOT_CAUSE,
    W1,
    W2,
    W3,
    all_entries,
    incident,
    say,
)
from timeline_pipeline_tests.maintenance.conftest import Running
from timeline_pipeline_tests.maintenance.support import FAST, SteppingClock, drive
from timeline_pipeline_tests.windows.support import settings

NOISE = "Old rules noise"
VERSION = "rules-v7"


class OldRules(RuleSynthesizer):
    """The rule processor before the upgrade, defined by its differences from the current one."""

    prompt_version = "rules-old"

    def __init__(self) -> None:
        super().__init__()
        self.withheld: list[str] = []

    def synthesize(self, chunk: SynthesisChunk) -> SynthesisResult:
        result = super().synthesize(chunk)
        made: list[DraftEntry] = []
        for position, entry in enumerate(result.entries):
            if position == 0:
                self.withheld.append(entry.title)
            elif position == 1:
                made.append(entry.model_copy(update={"title": entry.title.upper()}))
            else:
                made.append(entry)
        first = chunk.evidence[0]
        made.append(
            DraftEntry(
                title=f"{NOISE} {chunk.window_start:%H%M}",
                category="finding",
                occurred_at=first.occurred_at,
                # Every row of the chunk: no real draft cites exactly these, so the upgrade's
                # drafts are not re-found in the noise by their evidence (docs/runbooks.md,
                # "Deduplication of drafts").
                evidence_ids=[row.id for row in chunk.evidence],
            )
        )
        return result.model_copy(update={"entries": made, "prompt_version": self.prompt_version})


def _service(engine: Engine) -> JobService:
    return JobService(
        engine,
        default_registry(settings(), synthesizer=RuleSynthesizer),
        clock=SteppingClock(NOW),
    )


def _workspace(engine: Engine) -> dict[str, Any]:
    """Three windows synthesized by the old version; a curator confirms one shouted draft and
    pins a human entry on the second window's evidence."""
    incident(engine)
    say(engine, W1, [IMPACT, "ok", ROLLBACK])
    w2 = say(engine, W2, [ROOT_CAUSE, "thanks!", NEXT_STEP])
    say(engine, W3, [RECOVERED, "+1", ROLLBACK.replace("v41", "v40")])
    old = OldRules()
    runner = WindowRunner(engine, settings(), old)
    for start in (W1, W2, W3):
        runner.run(WindowRef("inc-1", CHAT, start), owner="old")
    shouted = [e for e in all_entries(engine) if e.title.isupper() and e.title != e.title.lower()]
    assert len(shouted) >= 2, [e.title for e in all_entries(engine)]
    assert old.withheld, "the old version must withhold drafts for the new one to add"
    with engine.begin() as conn:
        confirmed = entries.set_status(conn, shouted[0], "confirmed")
        assert confirmed is not None
        human = entries.create_human_entry(
            conn,
            "inc-1",
            occurred_at=W2 + timedelta(minutes=1),
            title="Customer support briefed",
            category="decision",
            evidence_ids=[w2[1]],
        )
    return {
        "withheld": list(old.withheld),
        "shouted": [e.id for e in shouted[1:]],
        "confirmed": confirmed,
        "human": human,
    }


def _table_rows(engine: Engine, skip: set[str]) -> dict[str, list[tuple[Any, ...]]]:
    """Every table's rows but those in `skip` and the maintenance jobs' own audit trail (who
    created and ran the job is recorded like every operator action: docs/maintenance.md)."""
    found: dict[str, list[tuple[Any, ...]]] = {}
    with engine.connect() as conn:
        for table in metadata.sorted_tables:
            if table.name in skip:
                continue
            query = select(table)
            if table.name == "audit_events":
                query = query.where(table.c.subject_type != "maintenance_job")
            rows = conn.execute(query).all()
            found[table.name] = sorted((tuple(row) for row in rows), key=repr)
    return found


def _preview(svc: JobService, key: str = "preview", **kw: Any) -> Any:
    job, _ = svc.create(
        job_type="window_rerun",
        idempotency_key=key,
        parameters={"workspace_id": "inc-1", "processor_version": VERSION},
        limits=replace(FAST, batch_size=2, statement_timeout_ms=5000),
        **kw,
    )
    return job


def _items(report: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [item for window in report["windows"] for item in window[kind]]


def _apply(engine: Engine, svc: JobService) -> None:
    """The existing versioned rerun: the apply job, then each new window run as the sensor
    does (oldest first, the current rule synthesizer)."""
    done = drive(svc, _preview(svc, "apply", apply=True))
    assert done.status == "completed", done.error
    runner = WindowRunner(engine, settings(), RuleSynthesizer())
    for start in (W1, W2, W3):
        ref = WindowRef("inc-1", CHAT, start, VERSION)
        with engine.connect() as conn:
            state = sync_states.get_by_key(
                conn, "inc-1", SOURCE_SYSTEM, SOURCE_TYPE_WINDOW, ref.source_key
            )
        assert state is not None and state.status == "pending"
        runner.run(ref, owner="sensor")


def _by_id(rows: list[EntryRow]) -> dict[int, EntryRow]:
    return {row.id: row for row in rows}


def test_a_preview_reports_the_upgrade_and_the_apply_makes_exactly_that(engine: Engine) -> None:
    made = _workspace(engine)
    before = _by_id(all_entries(engine))
    svc = _service(engine)
    untouched = {"maintenance_jobs", "window_rerun_previews"}
    tables_before = _table_rows(engine, untouched)

    preview = drive(svc, _preview(svc))

    assert preview.status == "completed" and preview.result is not None, preview.error
    assert _table_rows(engine, untouched) == tables_before  # nothing outside its namespace
    # The job keeps ids and counts; the report a curator reads takes its titles from the
    # scratch rows at read time (docs/maintenance.md, "Preview a rerun").
    assert not {"title", "old_title"} & {
        key
        for kind in ("added", "changed", "unchanged", "dropped", "left_alone")
        for item in _items(preview.result["preview"], kind)
        for key in item
    }
    report = svc.view(preview.id)["result"]["preview"]
    totals = report["totals"]
    assert (report["processor_version"], report["synthesizer"]) == (VERSION, "rules")
    assert totals["windows"] == 3 and preview.result["would_create"] == 3
    # Added: exactly what the old version withheld.
    assert sorted(i["title"] for i in _items(report, "added")) == sorted(made["withheld"])
    # Changed: the shouted drafts nobody confirmed, back to the new version's case.
    changed = _items(report, "changed")
    assert sorted(i["entry_id"] for i in changed) == sorted(made["shouted"])
    for item in changed:
        assert item["old_title"] == item["title"].upper() != item["title"]
        assert item["old_category"] == item["category"]
    # Dropped: the old version's noise, one per window, which the rerun leaves in place.
    dropped = _items(report, "dropped")
    assert sorted(i["title"] for i in dropped) == sorted(
        before[i["entry_id"]].title for i in dropped
    )
    assert len(dropped) == 3 and all(i["title"].startswith(NOISE) for i in dropped)
    # Left alone: the confirmed entry (which the new version restates) and the human one.
    alone = {i["entry_id"]: i for i in _items(report, "left_alone")}
    confirmed, human = made["confirmed"], made["human"]
    assert set(alone) == {confirmed.id, human.id}
    assert (alone[confirmed.id]["reason"], alone[confirmed.id]["restated"]) == ("confirmed", True)
    assert (alone[human.id]["reason"], alone[human.id]["restated"]) == ("human", False)
    assert totals["left_alone"] == 2
    assert (totals["added"], totals["changed"], totals["dropped"]) == (
        len(made["withheld"]),
        len(made["shouted"]),
        3,
    )
    assert totals["model_calls"] == 0 and totals["synthesizer_calls"] == totals["chunks"] == 3
    assert totals["estimated_input_tokens"] > 0 and totals["estimated_cost_usd"] is None
    table = markdown(report)
    assert "| 3 | 3 |" in table and "left alone: confirmed" in table and "dropped" in table

    # The apply never reads the scratch rows: spoil them first.
    with engine.begin() as conn:
        conn.execute(update(pv).values(title="spoiled", category="impact"))
    _apply(engine, svc)

    after = _by_id(all_entries(engine))
    new = [after[i] for i in sorted(set(after) - set(before))]
    assert sorted((e.title, e.category) for e in new) == sorted(
        (i["title"], i["category"]) for i in _items(report, "added")
    )
    assert sorted(e.evidence_ids for e in new) == sorted(
        tuple(i["evidence_ids"]) for i in _items(report, "added")
    )
    for item in changed:
        entry = after[item["entry_id"]]
        assert (entry.title, entry.category, entry.status) == (
            item["title"],
            item["category"],
            "draft",
        )
    for item in dropped:
        assert after[item["entry_id"]].title == item["title"]  # still there, as reported
    for entry_id in (confirmed.id, human.id):
        kept, was = after[entry_id], before[entry_id]
        assert (kept.title, kept.category, kept.status, kept.revision, kept.human_edited) == (
            was.title,
            was.category,
            was.status,
            was.revision,
            was.human_edited,
        )
    reported = {i["entry_id"] for k in ("changed", "dropped") for i in _items(report, k)}
    for entry_id, was in before.items():
        if entry_id not in reported:
            assert (after[entry_id].title, after[entry_id].category) == (was.title, was.category)


def test_a_preview_can_be_cancelled_and_its_rows_are_only_scratch(engine: Engine) -> None:
    _workspace(engine)
    svc = _service(engine)
    job = _preview(svc)
    job = svc.advance(job.id, revision=job.revision)  # two of the three windows
    assert job.status == "ready" and job.progress["preview"]["windows"] == 2
    with engine.connect() as conn:
        scratch = conn.execute(select(pv.c.job_id, pv.c.kind)).all()
        visible = entries.visible_entries(conn, "inc-1", limit=1000)
    assert scratch and {row.job_id for row in scratch} == {job.id}
    assert len(visible) == len(all_entries(engine))  # no scratch row is an entry
    cancelled = svc.cancel(job.id, revision=job.revision)
    assert cancelled.status == "cancelled" and cancelled.result is None
    with pytest.raises(InvalidTransition):
        svc.advance(job.id, revision=cancelled.revision)
    with engine.connect() as conn:
        states = conn.execute(
            text("SELECT count(*) FROM workspace_timeline_sync_states WHERE source_key LIKE :k"),
            {"k": f"%/processor/{VERSION}/%"},
        ).scalar_one()
    assert states == 0  # a preview creates no window state
    # The lifecycle purges the scratch rows after their short retention, and nothing else.
    entries_before = all_entries(engine)
    key = "rerun_previews.window_rerun_previews"
    kept = PurgeEngine(engine, load_registry()).run(
        descriptor_key=key, as_of=NOW + timedelta(days=1)
    )
    assert kept.status == "succeeded" and _scratch(engine) == len(scratch)
    PurgeEngine(engine, load_registry()).run(descriptor_key=key, as_of=NOW + timedelta(days=3))
    assert _scratch(engine) == 0 and all_entries(engine) == entries_before


def _scratch(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(pv)).scalar_one())


def test_status_prints_the_preview_as_markdown_and_refuses_a_job_without_one(
    lite_running: Running, lite_engine: Engine
) -> None:
    _workspace(lite_engine)
    port = str(lite_running.port)

    def cli_(*args: str) -> Result:
        return CliRunner().invoke(cli, ["maintenance", *args, "--port", port])

    created = cli_(
        "create",
        "--type",
        "window_rerun",
        "--idempotency-key",
        "md-preview",
        "--parameters",
        json.dumps({"workspace_id": "inc-1", "processor_version": VERSION}),
        "--batch-size",
        "5",
        "--delay-ms",
        "1",
        "--lock-timeout-ms",
        "500",
        "--statement-timeout-ms",
        "5000",
    )
    assert created.exit_code == 0, created.stderr
    # (The listener runs in this process: its log lines share stdout with the command's.)
    (job,) = _jobs(created)
    job_id = job["id"]
    not_yet = cli_("status", "--job", job_id, "--markdown")
    assert not_yet.exit_code == 1 and not_yet.stderr.count("\n") == 1
    assert "no preview report" in not_yet.stderr and not _jobs(not_yet)
    assert cli_("run", "--job", job_id, "--max-batches", "10", "--max-seconds", "60").exit_code == 0
    shown = cli_("status", "--job", job_id, "--markdown")
    assert shown.exit_code == 0, shown.stderr
    assert f"### Rerun preview `{VERSION}` (rules, " in shown.stdout and not _jobs(shown)
    assert "| window | change | entry | title | category | before |" in shown.stdout
    assert "left alone: human" in shown.stdout and "left alone: confirmed" in shown.stdout
    (plain,) = _jobs(cli_("status", "--job", job_id))
    assert plain["result"]["preview"]["totals"]["left_alone"] == 2


def _jobs(result: Result) -> list[dict[str, Any]]:
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
