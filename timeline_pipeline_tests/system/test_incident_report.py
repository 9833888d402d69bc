"""The incident report under the real daemon (issue 36, docs/report.md): built by its sensor when
the incident closes, written into one Lark document with its link posted once and one Lark task
per confirmed next step, rebuilt into the same document after a confirmation, and a `kill -9` in
the middle of the document's writes recovered without a second document.

The deployment is `test_daemon`'s, cut to what the report needs: a `dagster-daemon` on an
unchanged copy of the production `deploy/dagster.yaml` (PostgreSQL storage, the queued run
coordinator), the product database on PostgreSQL and the local Lark holding one firing
incident's chat. Settings reach every process through `TIMELINE_LARK_*` variables, as an operator
sets them (`reportEnabled`, `reportLarkDocEnabled`, `reportFolderToken`, `followUpTasksEnabled`).
Curators act through the real CLI (`reconcile`, `timeline confirm`, `timeline hide`, `workspace
set-status`, run in this process to spare a 7 s interpreter start each); `report build`, the one
that is killed, is a process of its own. Everything is observed in the local Lark's state, the
product database and Dagster's run storage.

1. The chat is reconciled; the daemon's window sensor synthesizes its two windows into drafts;
   the impact, the rollback and the next step are confirmed; the workspace is set `recovered`.
2. The report sensor builds revision 1 (trigger `closed`): the local Lark shows one document
   whose text is that revision (the confirmed entries, the milestones), one message from the
   app with the document's link, and one task, for the next step.
3. The root cause is confirmed: the sensor's rebuild (trigger `confirmed_change`) rewrites the
   same document, which now shows it confirmed; still one document, one link message, one task.
4. A draft is hidden (the report changes, what the sensor watches does not) and `report build`
   starts; Lark holds its descendant insert, and the build is killed with SIGKILL while it
   waits, the document emptied for the new revision and its row not written. The sensor sees
   the document behind and its run finishes the write: one document showing the newest
   revision exactly once (the insert's client token got the killed build's insert back), the
   row `up_to_date`, still one link message.
"""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import Engine, create_engine, select, text
from sqlalchemy.exc import ProgrammingError

from timeline_pipeline.cli.main import cli
from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.schema import workspace_timeline_evidence as ev
from timeline_pipeline.db.schema import workspace_timeline_sync_states as ss
from timeline_pipeline.domain.entries import EntryRow, EntryStatus
from timeline_pipeline.domain.window_keys import WindowRef, window_start_of
from timeline_pipeline.lark.simulator import ChatStore, SimulatorServer, make_chat_messages
from timeline_pipeline.lark.simulator.documents import (
    BODY_KEYS,
    DEFAULT_FOLDER_TOKEN,
    ROUTE_INSERT_DESCENDANTS,
    TEXT_TYPES,
    DocumentsState,
    markdown_to_blocks,
)
from timeline_pipeline.lark.simulator.fixtures import SENDERS
from timeline_pipeline.orchestration.report import (
    FOLLOW_UP_JOB,
    REPORT_JOB,
    REPORT_SENSOR,
    TAG_TRIGGER,
)
from timeline_pipeline.orchestration.windows import DISCOVERY_SENSOR, SYNTHESIS_JOB
from timeline_pipeline.report.service import Trigger
from timeline_pipeline.store import entries, follow_up_tasks, incident_reports, report_documents
from timeline_pipeline.store import workspaces as workspace_store
from timeline_pipeline.store.incident_reports import StoredReport
from timeline_pipeline.store.report_documents import ReportDocument
from timeline_pipeline_tests.support.processes import ManagedProcess
from timeline_pipeline_tests.support.windows import WINDOW
from timeline_pipeline_tests.system.conftest import BIN, REPO, deployment_env, production_home
from timeline_pipeline_tests.system.processes import Processes, wait_for

pytestmark = [pytest.mark.system, pytest.mark.slow]

IMPACT = "Customers cannot pay: checkout fails for all EU users"
ROLLBACK = "we rolled back the deploy of payments-api to v41"
ROOT_CAUSE = "root cause: connection pool exhausted after the config change"
RECOVERED = "error rate back to normal on all shards, recovered"
NEXT_STEP = "next step: add alerting on pool saturation"
WINDOW_LINES = ((IMPACT, ROLLBACK), (ROOT_CAUSE, RECOVERED, NEXT_STEP))
"""Two windows of the incident's chat, each line a fact the rule synthesizer drafts, one of
each category in `CATEGORIES`, in that order."""
MILESTONES = ("Started", "Detected", "Mitigated", "Resolved")
"""The milestone table's first column, as the English report names them."""
CATEGORIES = ("impact", "mitigation", "root_cause", "recovery", "next_step")
FIRST_CONFIRMED = ("impact", "mitigation", "next_step")
HOLD_SECONDS = 20.0
"""How long the local Lark holds the killed build's insert: the kill comes within a second of
the hold starting, long before it ends; the held insert is then applied with no one waiting."""
SYNTHESIS_TIMEOUT = 150.0  # the window sensor's first tick and one run of both windows
REPORT_TIMEOUT = 120.0  # a report sensor tick (every 30 s) and its runs
FAILED = {"FAILURE", "CANCELED"}
FINISHED = {"SUCCESS", *FAILED}
SETTINGS_ENV = {
    # The chat comes in through the CLI's `reconcile`; the schedule only skips.
    "TIMELINE_LARK_RECONCILIATION_ENABLED": "false",
    "TIMELINE_LARK_REPORT_ENABLED": "true",
    "TIMELINE_LARK_REPORT_LARK_DOC_ENABLED": "true",
    "TIMELINE_LARK_REPORT_FOLDER_TOKEN": DEFAULT_FOLDER_TOKEN,
    "TIMELINE_LARK_FOLLOW_UP_TASKS_ENABLED": "true",
}
_INHERITED_PREFIXES = ("TIMELINE_", "LARK_", "ANTHROPIC_", "DAGSTER_")


@dataclass(frozen=True)
class DagsterRun:
    run_id: str
    job: str
    status: str
    tags: dict[str, str]


@dataclass
class Published:
    """What the local Lark, the product database and Dagster's runs show once the document
    caught up."""

    runs: list[DagsterRun]
    report: StoredReport
    row: ReportDocument
    document_id: str
    text: str
    replies: list[dict[str, Any]]
    tasks: list[dict[str, Any]]


@dataclass
class Deployment:
    engine: Engine
    dagster: Engine
    lark: SimulatorServer
    processes: Processes
    env: dict[str, str]
    workspace_id: str
    chat_id: str
    windows: list[WindowRef]
    messages: int
    tmp_path: Path

    @property
    def docs(self) -> DocumentsState:
        return self.lark.state.documents

    # --- the CLI ---------------------------------------------------------------------------

    def cli(self, *args: str) -> str:
        """The real CLI in this process, with the daemon's settings and nothing inherited."""
        unset: dict[str, str | None] = {
            name: None for name in os.environ if name.startswith(_INHERITED_PREFIXES)
        }
        result = CliRunner().invoke(cli, list(args), env={**unset, **self.env})
        assert result.exit_code == 0, (args, result.output, result.exception)
        return result.stdout

    def spawn(self, name: str, *args: str) -> ManagedProcess:
        """The real CLI as a process of its own group (killed as a lost machine would be)."""
        command = [str(BIN / "timeline-pipeline"), *args]
        log_path = self.tmp_path / f"{name}.log"
        return ManagedProcess(name, command, cwd=REPO, env=self.env, log_path=log_path)

    # --- what there is to see ----------------------------------------------------------------

    def entries(self) -> list[EntryRow]:
        with self.engine.connect() as conn:
            return entries.list_for_workspace(
                conn, self.workspace_id, statuses=list(EntryStatus), limit=100
            )

    def replies(self) -> list[dict[str, Any]]:
        """The app's messages in the incident's chat."""
        return [
            message
            for message in self.lark.store.messages(self.chat_id)
            if (message.get("sender") or {}).get("sender_type") == "app"
        ]

    def runs(self) -> list[DagsterRun]:
        """Every run in Dagster's storage (the daemon's PostgreSQL database), oldest first."""
        try:
            return self._runs()
        except ProgrammingError:  # the daemon has not made its tables yet
            return []

    def _runs(self) -> list[DagsterRun]:
        with self.dagster.connect() as conn:
            rows = conn.execute(
                text("SELECT run_id, pipeline_name, status FROM runs ORDER BY id")
            ).all()
            tags: dict[str, dict[str, str]] = {}
            for run_id, key, value in conn.execute(text("SELECT run_id, key, value FROM run_tags")):
                tags.setdefault(run_id, {})[key] = value
        return [DagsterRun(r[0], r[1], r[2], tags.get(r[0], {})) for r in rows]

    def failures_of(self, run_id: str) -> str:
        """The failure events Dagster stored for a run (its workers log nowhere else)."""
        query = text(
            "SELECT event FROM event_logs WHERE run_id = :run_id AND dagster_event_type IN "
            "('STEP_FAILURE', 'RUN_FAILURE', 'PIPELINE_FAILURE') ORDER BY id"
        )
        with self.dagster.connect() as conn:
            events = conn.execute(query, {"run_id": run_id}).scalars().all()
        return "\n".join(str(event)[:3000] for event in events)

    def no_failed_runs(self) -> None:
        failed = [run for run in self.runs() if run.status in FAILED]
        if failed:
            details = "\n".join(
                f"{r.run_id} {r.job} {r.status} ({r.tags.get(TAG_TRIGGER)}): "
                f"{self.failures_of(r.run_id)}"
                for r in failed
            )
            pytest.fail(f"runs failed: {details}\n{self.processes.report()}", pytrace=False)

    def published(self, *, after_revision: int = 0) -> Published | None:
        """The document once it shows the newest revision (newer than `after_revision`) and
        owes no link, the follow-up tasks once none is queued, and every run finished; else
        None."""
        runs = self.runs()
        self.no_failed_runs()
        if any(run.status not in FINISHED for run in runs):
            return None
        with self.engine.connect() as conn:
            report = incident_reports.latest(conn, self.workspace_id)
            row = report_documents.get(conn, self.workspace_id)
            queued = [
                task
                for task in follow_up_tasks.for_workspace(conn, self.workspace_id)
                if task.state == "pending"
            ]
        if report is None or row is None or row.document_id is None:
            return None
        if report.revision <= after_revision or row.written_revision != report.revision:
            return None
        if row.reply_pending or queued or self.docs.holding(ROUTE_INSERT_DESCENDANTS):
            return None
        return Published(
            runs=runs,
            report=report,
            row=row,
            document_id=row.document_id,
            text=self.docs.raw_text(row.document_id),
            replies=self.replies(),
            tasks=self.docs.tasks(),
        )

    def describe(self) -> str:
        with self.engine.connect() as conn:
            report = incident_reports.latest(conn, self.workspace_id)
            row = report_documents.get(conn, self.workspace_id)
        runs = [(r.job, r.status, r.tags.get(TAG_TRIGGER)) for r in self.runs()]
        revision = None if report is None else (report.revision, report.built_by)
        return f"report {revision}; document row {row}; runs {runs}"

    def wait_published(self, what: str, *, after_revision: int = 0) -> Published:
        return wait_for(
            what,
            lambda: self.published(after_revision=after_revision),
            timeout=REPORT_TIMEOUT,
            processes=self.processes,
            describe=self.describe,
        )


def built_by_run(seen: Published) -> DagsterRun:
    """The sensor's run of the report job that built the newest revision (it succeeded)."""
    built_by = seen.report.built_by
    assert built_by.startswith("dagster:"), built_by
    (run,) = [run for run in seen.runs if f"dagster:{run.run_id}" == built_by]
    assert (run.job, run.status) == (REPORT_JOB, "SUCCESS")
    assert run.tags.get("dagster/sensor_name") == REPORT_SENSOR
    assert run.tags.get("dagster/partition") == seen.report.workspace_id
    return run


def document_text(title: str, markdown: str) -> str:
    """What Lark's raw content shows of a document titled `title` holding `markdown` once:
    the title, then each text block of Lark's conversion on its own line, in reading order
    (the converter lists blocks parents first, as the document is read)."""
    _, blocks = markdown_to_blocks(markdown)
    lines = [title]
    for block in blocks:
        kind = block["block_type"]
        if kind in TEXT_TYPES:
            elements = block[BODY_KEYS[kind]]["elements"]
            lines.append("".join(element["text_run"]["content"] for element in elements))
    return "\n".join(lines) + "\n"


def _chat_history(chat_id: str, windows: list[WindowRef]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for index, (ref, lines) in enumerate(zip(windows, WINDOW_LINES, strict=True)):
        batch = make_chat_messages(
            chat_id,
            ref.window_start + timedelta(minutes=1),
            len(lines),
            seed=36 + index,
            thread_every=0,
            post_every=0,
            mention_every=0,
            interval_seconds=60.0,
        )
        for item, line in zip(batch, lines, strict=True):
            item["body"] = {"content": json.dumps({"text": line})}
        items.extend(batch)
    return items


@pytest.fixture
def deployment(pg_url: str, dagster_storage_url: str, tmp_path: Path) -> Iterator[Deployment]:
    tag = uuid.uuid4().hex[:8]
    workspace_id, chat_id = f"sys-report-{tag}", f"oc_sys_report_{tag}"
    first = window_start_of(datetime.now(UTC) - timedelta(minutes=75), WINDOW)
    windows = [WindowRef(workspace_id, chat_id, first + i * WINDOW) for i in range(2)]
    engine = make_engine(pg_url)
    with engine.begin() as conn:
        workspace_store.create(conn, workspace_id, created_at=first - timedelta(minutes=5))
        workspace_store.bind_chat(conn, workspace_id, chat_id)
    history = _chat_history(chat_id, windows)
    app_id, app_secret = f"cli_sys_{uuid.uuid4().hex[:12]}", uuid.uuid4().hex
    home = production_home(tmp_path)
    dagster = create_engine(dagster_storage_url.replace("+psycopg2://", "+psycopg://", 1))
    processes = Processes()
    with SimulatorServer(
        store=ChatStore(history, dict(SENDERS)), app_id=app_id, app_secret=app_secret
    ) as lark:
        env = deployment_env(
            home=home,
            dagster_storage_url=dagster_storage_url,
            pg_url=pg_url,
            lark=lark,
            **SETTINGS_ENV,
        )
        try:
            yield Deployment(
                engine=engine,
                dagster=dagster,
                lark=lark,
                processes=processes,
                env=env,
                workspace_id=workspace_id,
                chat_id=chat_id,
                windows=windows,
                messages=len(history),
                tmp_path=tmp_path,
            )
        finally:
            processes.stop_all()
            dagster.dispose()
            engine.dispose()


# --- phases ----------------------------------------------------------------------------------


def start_daemon(d: Deployment) -> None:
    command = [str(BIN / "dagster-daemon"), "run", "-w", str(REPO / "workspace.yaml")]
    log_path = d.tmp_path / "dagster-daemon.log"
    d.processes.start(
        ManagedProcess("dagster-daemon", command, cwd=REPO, env=d.env, log_path=log_path)
    )


def reconciled(d: Deployment) -> None:
    d.cli("reconcile", "--workspace", d.workspace_id, "--json")
    with d.engine.connect() as conn:
        stored = conn.execute(select(ev.c.id).where(ev.c.workspace_id == d.workspace_id)).all()
    assert len(stored) == d.messages, "reconcile did not store every message of the chat"


def windows_synthesized(d: Deployment) -> dict[str, EntryRow]:
    """Wait for the daemon's window runs; the drafts by category."""

    def done() -> bool:
        d.no_failed_runs()
        with d.engine.connect() as conn:
            states = conn.execute(
                select(ss.c.status).where(
                    ss.c.workspace_id == d.workspace_id, ss.c.window_start.is_not(None)
                )
            ).all()
        return len(states) == len(d.windows) and {s.status for s in states} == {"completed"}

    wait_for(
        f"the daemon to synthesize the {len(d.windows)} windows",
        done,
        timeout=SYNTHESIS_TIMEOUT,
        processes=d.processes,
        describe=d.describe,
    )
    synthesized_by = {r.tags.get("dagster/sensor_name") for r in d.runs() if r.job == SYNTHESIS_JOB}
    assert synthesized_by == {DISCOVERY_SENSOR}, d.describe()
    drafts = {entry.category: entry for entry in d.entries()}
    assert all(e.status == EntryStatus.DRAFT for e in drafts.values())
    assert sorted(drafts) == sorted(CATEGORIES), [(e.category, e.title) for e in d.entries()]
    return drafts


def first_report(d: Deployment, drafts: dict[str, EntryRow]) -> Published:
    seen = d.wait_published("the report sensor to publish the closed incident's report")
    confirmed = [drafts[category] for category in FIRST_CONFIRMED]
    report, row = seen.report, seen.row

    assert report.revision == 1
    assert report.trigger == Trigger.CLOSED
    # One document, in the folder, holding revision 1 once.
    assert d.docs.document_ids() == [seen.document_id]
    assert [f["token"] for f in d.docs.folder_files(DEFAULT_FOLDER_TOKEN)] == [seen.document_id]
    assert seen.text == document_text(row.title, report.markdown)
    lines = seen.text.splitlines()
    for entry in confirmed:
        assert entry.title in seen.text
        assert f"{entry.title} (draft)" not in seen.text
    assert f"{drafts['root_cause'].title} (draft)" in seen.text
    assert all(name in lines for name in MILESTONES), "a milestone is missing from the document"
    assert "Entries: confirmed 3 · drafts 2 · hidden 0 · withheld 0" in lines
    # One message from the app, carrying the document's link.
    assert row.document_url is not None and seen.document_id in row.document_url
    (reply,) = seen.replies
    assert row.document_url in json.loads(reply["body"]["content"])["text"]
    assert reply["message_id"] == row.reply_message_id
    # One task, for the one confirmed next step, recorded against its entry.
    (task,) = seen.tasks
    assert task["summary"] == drafts["next_step"].title
    with d.engine.connect() as conn:
        (queued,) = follow_up_tasks.for_workspace(conn, d.workspace_id)
    assert (queued.entry_id, queued.state, queued.task_guid) == (
        drafts["next_step"].id,
        "created",
        task["guid"],
    )
    assert built_by_run(seen).tags.get(TAG_TRIGGER) == Trigger.CLOSED
    assert [run.status for run in seen.runs if run.job == FOLLOW_UP_JOB] == ["SUCCESS"]
    return seen


def rebuilt_after_a_confirmation(
    d: Deployment, before: Published, root_cause: EntryRow
) -> Published:
    d.cli("timeline", "confirm", d.workspace_id, str(root_cause.id))
    seen = d.wait_published(
        "the sensor's rebuild after a confirmation", after_revision=before.report.revision
    )

    assert seen.report.revision == before.report.revision + 1
    assert seen.report.trigger == Trigger.CONFIRMED_CHANGE
    assert built_by_run(seen).tags.get(TAG_TRIGGER) == Trigger.CONFIRMED_CHANGE
    assert d.docs.document_ids() == [before.document_id], "the rebuild made a second document"
    assert seen.text == document_text(seen.row.title, seen.report.markdown)
    assert seen.text != before.text
    assert f"{root_cause.title} (draft)" not in seen.text
    assert root_cause.title in seen.text
    assert "Entries: confirmed 4 · drafts 1 · hidden 0 · withheld 0" in seen.text.splitlines()
    assert [m["message_id"] for m in seen.replies] == [before.replies[0]["message_id"]]
    assert [t["guid"] for t in seen.tasks] == [t["guid"] for t in before.tasks]
    return seen


def killed_mid_write_and_recovered(d: Deployment, before: Published, hidden: EntryRow) -> None:
    d.cli("timeline", "hide", d.workspace_id, str(hidden.id))
    writes_before = d.docs.write_count(before.document_id)
    d.docs.hold_next(ROUTE_INSERT_DESCENDANTS, HOLD_SECONDS)
    build = d.spawn("report-build", "report", "build", "--workspace", d.workspace_id, "--json")
    try:

        def insert_held() -> bool:
            if not build.alive():
                pytest.fail(
                    f"report build exited {build.process.returncode} before its insert was "
                    f"held:\n{build.tail()}",
                    pytrace=False,
                )
            return d.docs.holding(ROUTE_INSERT_DESCENDANTS) == 1

        wait_for(
            "report build's descendant insert to be held by the local Lark",
            insert_held,
            timeout=90,
            processes=d.processes,
            interval=0.05,
            describe=d.describe,
        )
        status = build.kill()
    finally:
        build.stop()
    # Killed in the middle of the writes: the revision built, the document emptied for it,
    # its insert still waiting in Lark, the row not written.
    held_at_kill = d.docs.holding(ROUTE_INSERT_DESCENDANTS)
    text_at_kill = d.docs.raw_text(before.document_id)
    with d.engine.connect() as conn:
        killed = incident_reports.latest(conn, d.workspace_id)
        row = report_documents.get(conn, d.workspace_id)
    assert status == -signal.SIGKILL
    assert held_at_kill == 1, "the kill came after the held insert ended"
    assert killed is not None and killed.revision == before.report.revision + 1
    assert killed.built_by.startswith("cli:"), killed.built_by
    assert row is not None
    assert (row.target_revision, row.cleared_for_revision, row.written_revision) == (
        killed.revision,
        killed.revision,
        before.report.revision,
    )
    assert text_at_kill == f"{row.title}\n", "the document was not emptied before the insert"

    seen = d.wait_published(
        "the report sensor to finish the killed build's document",
        after_revision=before.report.revision,
    )

    assert seen.report.revision == killed.revision, "the recovery built another revision"
    assert seen.row.up_to_date
    assert d.docs.document_ids() == [before.document_id], "the recovery made a second document"
    assert seen.text == document_text(seen.row.title, killed.markdown)
    assert hidden.title not in seen.text
    assert "Entries: confirmed 4 · drafts 0 · hidden 1 · withheld 0" in seen.text.splitlines()
    # The killed build's clear and insert, nothing more: the recovery's insert, with the same
    # client token, got the first one's answer.
    assert d.docs.write_count(before.document_id) - writes_before == 2
    assert [m["message_id"] for m in seen.replies] == [before.replies[0]["message_id"]]
    assert [t["guid"] for t in seen.tasks] == [t["guid"] for t in before.tasks]
    # Only a publisher records a write, and the build was dead: the sensor's runs finished it
    # (`document`: the document behind its report; `record`, should a tick have fallen between
    # the build's revision and its plan: the revision built outside Dagster).
    earlier = {run.run_id for run in before.runs}
    recovered_by = [r for r in seen.runs if r.job == REPORT_JOB and r.run_id not in earlier]
    assert recovered_by, d.describe()
    for run in recovered_by:
        assert run.status == "SUCCESS", d.describe()
        assert run.tags.get("dagster/sensor_name") == REPORT_SENSOR, d.describe()
        assert run.tags.get(TAG_TRIGGER) in {Trigger.DOCUMENT, Trigger.RECORD}, d.describe()


# --- the test --------------------------------------------------------------------------------


def test_the_sensor_publishes_one_document_that_follows_confirmations_and_survives_a_kill(
    deployment: Deployment,
) -> None:
    d = deployment
    timings: dict[str, float] = {}
    began = time.monotonic()

    def lap(name: str) -> None:
        timings[name] = round(time.monotonic() - began - sum(timings.values()), 1)

    reconciled(d)
    start_daemon(d)
    drafts = windows_synthesized(d)
    lap("reconcile_and_windows")
    for category in FIRST_CONFIRMED:
        d.cli("timeline", "confirm", d.workspace_id, str(drafts[category].id))
    d.cli("workspace", "set-status", "--workspace", d.workspace_id, "--status", "recovered")
    first = first_report(d, drafts)
    lap("first_report")
    second = rebuilt_after_a_confirmation(d, first, drafts["root_cause"])
    lap("rebuild")
    killed_mid_write_and_recovered(d, second, drafts["recovery"])
    lap("kill_and_recovery")
    print(f"report system test timings (s): {timings}")
