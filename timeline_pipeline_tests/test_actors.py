"""Every audited action names who did it in one of the documented forms (docs/design.md, "Who
did it"), on SQLite and PostgreSQL: through the API `token:<id>`, the CLI `cli:<OS user>`,
Dagster `dagster:<run id>`, the chat `lark:<open_id>` (and the timeline page `ui:<session>`).

`AUDITED` is the table of every action the code audits, with the way in each is triggered by
here through its real entry point: the `serve` app with a bearer token, the CLI through
CliRunner (maintenance through a real loopback listener), the `rerun_windows` Dagster job, a
reaction and a card click as Lark sends them. A bare `api`, `cli` or `loopback`, or anything
not of the forms, fails; so does a module that starts writing the audit without a row here.
"""

from __future__ import annotations

import ast
import getpass
import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from click.testing import CliRunner, Result
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select

import timeline_pipeline
from timeline_pipeline.cli.main import cli
from timeline_pipeline.curation.rules import Action
from timeline_pipeline.curation.service import CurationService
from timeline_pipeline.db.schema import audit_events
from timeline_pipeline.http.app import create_app
from timeline_pipeline.maintenance.processors import default_registry
from timeline_pipeline.maintenance.service import JobService
from timeline_pipeline.orchestration.collection import LarkClientResource
from timeline_pipeline.orchestration.report import REPORT_JOB, report_defs
from timeline_pipeline.orchestration.resources import DatabaseResource, TimelineSettingsResource
from timeline_pipeline.orchestration.summary import WORKSPACE_PARTITIONS
from timeline_pipeline.orchestration.windows import RERUN_JOB, SynthesizerResource, window_defs
from timeline_pipeline.settings import (
    LarkTimelineSettings,
    RuntimeEnvironment,
    Settings,
    load_timeline_settings,
)
from timeline_pipeline.store import api_tokens
from timeline_pipeline.store.audit import ACTOR_FORMS
from timeline_pipeline.ui.pages import SESSION_COOKIE
from timeline_pipeline_tests.curation.support import ROLLBACK, W1, incident, say, synthesize
from timeline_pipeline_tests.maintenance.conftest import run_listener
from timeline_pipeline_tests.pins.harness import CURATOR as PIN_CURATOR
from timeline_pipeline_tests.pins.harness import pin_harness
from timeline_pipeline_tests.review_cards.harness import CURATOR as CARD_CURATOR
from timeline_pipeline_tests.review_cards.harness import button, harness, plan_card, seed_entries
from timeline_pipeline_tests.ui.support import session

API, CLI, DAGSTER, CHAT, PAGE = "api", "cli", "dagster", "chat", "page"
REPORT_RUN = "dagster (report)"
EARLY = W1 - timedelta(hours=2)
"""A start before the workspace was made (its `detected`), as a curator corrects it."""
WORKSPACE = "inc-1"

AUDITED: tuple[tuple[str, str, str], ...] = (
    # (action, way in, how it is triggered here)
    ("entry.confirm", API, "POST /api/workspaces/W/entries/E/confirm"),
    ("entry.hide", API, "POST /api/workspaces/W/entries/E/hide"),
    ("entry.restore", API, "POST /api/workspaces/W/entries/E/restore"),
    ("entry.edit", API, "PATCH /api/workspaces/W/entries/E"),
    ("entry.add", API, "POST /api/workspaces/W/entries"),
    ("summary.write", API, "PUT /api/workspaces/W/summary"),
    ("curator.add", API, "PUT /api/workspaces/W/curators/O"),
    ("curator.remove", API, "DELETE /api/workspaces/W/curators/O"),
    ("lifecycle.hold.create", API, "POST /api/workspaces/W/lifecycle/holds"),
    ("lifecycle.hold.release", API, "POST /api/workspaces/W/lifecycle/holds/H/release"),
    ("report.milestone.set", API, "PUT /api/workspaces/W/report/milestones/M"),
    ("report.milestone.clear", API, "DELETE /api/workspaces/W/report/milestones/M"),
    ("entry.confirm", CLI, "timeline confirm W E"),
    ("entry.hide", CLI, "timeline hide W E"),
    ("entry.restore", CLI, "timeline restore W E"),
    ("entry.edit", CLI, "timeline edit W E --title T"),
    ("entry.add", CLI, "timeline add W ..."),
    ("summary.write", CLI, "timeline summary W --content C"),
    ("curator.add", CLI, "workspace add-curator"),
    ("curator.remove", CLI, "workspace remove-curator"),
    ("lifecycle.hold.create", CLI, "lifecycle hold create"),
    ("lifecycle.hold.release", CLI, "lifecycle hold release"),
    ("maintenance.create", CLI, "maintenance create (the listener)"),
    ("maintenance.pause", CLI, "maintenance pause"),
    ("maintenance.configure", CLI, "maintenance configure"),
    ("maintenance.resume", CLI, "maintenance resume"),
    ("maintenance.run", CLI, "maintenance run (its first batch)"),
    ("maintenance.completed", CLI, "maintenance run (to the end)"),
    ("maintenance.cancel", CLI, "maintenance cancel"),
    ("report.build", CLI, "report build --workspace W"),
    ("report.milestone.set", CLI, "report set-milestone"),
    ("report.milestone.clear", CLI, "report clear-milestone"),
    ("report.build", REPORT_RUN, "job build_incident_reports"),
    ("maintenance.create", DAGSTER, "job rerun_windows (preview)"),
    ("maintenance.run", DAGSTER, "job rerun_windows (its first batch)"),
    ("maintenance.completed", DAGSTER, "job rerun_windows (to the end)"),
    ("entry.add", CHAT, "im.message.reaction.created_v1 (a pin)"),
    ("entry.hide", CHAT, "im.message.reaction.deleted_v1 (an unpin)"),
    ("entry.restore", CHAT, "im.message.reaction.created_v1 (a pin again)"),
    ("entry.confirm", CHAT, "card.action.trigger (Confirm)"),
    ("entry.hide", CHAT, "card.action.trigger (Hide)"),
    ("entry.edit", CHAT, "card.action.trigger (category)"),
    ("entry.confirm", PAGE, "POST /ui/workspaces/W/entries/E/confirm"),
    ("entry.hide", PAGE, "POST /ui/workspaces/W/entries/E/hide"),
    ("entry.restore", PAGE, "POST /ui/workspaces/W/entries/E/restore"),
    ("entry.edit", PAGE, "POST /ui/workspaces/W/entries/E/edit"),
    ("entry.add", PAGE, "POST /ui/workspaces/W/entries"),
    ("summary.write", PAGE, "POST /ui/workspaces/W/summary"),
    ("report.milestone.set", PAGE, "POST /ui/workspaces/W/report/milestones/M (set)"),
    ("report.milestone.clear", PAGE, "POST /ui/workspaces/W/report/milestones/M (clear)"),
)
UNWALKED = {"maintenance.paused": "a failing batch pauses the job: the same advance, its actor"}
"""Actions written on a path the table's triggers share (the actor is the same argument)."""

WRITERS = {
    "timeline_pipeline.curation.service",
    "timeline_pipeline.curation.curators",
    "timeline_pipeline.maintenance.service",
    "timeline_pipeline.lifecycle.holds",
    "timeline_pipeline.report.service",
}
"""The modules that call `audit_curation`; a new one needs its actions in `AUDITED`."""


def expected(way: str) -> set[str]:
    return {action for action, how, _ in AUDITED if how == way}


def attributed(actor: str) -> bool:
    """One of the documented forms with a non-empty name after its prefix."""
    return any(actor.startswith(form) and len(actor) > len(form) for form in ACTOR_FORMS)


class Audit:
    """The audit events written after it was made."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        with engine.connect() as conn:
            self.since = int(
                conn.execute(select(func.coalesce(func.max(audit_events.c.id), 0))).scalar_one()
            )

    def events(self) -> list[tuple[str, str]]:
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(audit_events.c.action, audit_events.c.actor)
                .where(audit_events.c.id > self.since)
                .order_by(audit_events.c.id)
            ).all()
        return [(r.action, r.actor) for r in rows]

    def check(self, way: str, actor: str) -> None:
        """Every event is the way in's actor, documented, and every action of the way in ran."""
        events = self.events()
        bare = [(a, who) for a, who in events if not attributed(who)]
        assert bare == [], f"{way}: actions audited without a documented actor"
        assert {who for _, who in events} == {actor}
        assert {a for a, _ in events} == expected(way)


@pytest.fixture
def draft(engine: Engine) -> int:
    """Workspace inc-1 with one synthesized draft; its id."""
    incident(engine, WORKSPACE)
    say(engine, W1, [ROLLBACK])
    synthesize(engine, W1)
    [entry] = CurationService(engine).timeline(WORKSPACE).entries
    return entry.id


def test_the_table_covers_every_module_that_writes_the_audit() -> None:
    root = Path(timeline_pipeline.__file__).parent
    callers = set()
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                called = node.func
                name = (
                    called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", "")
                )
                if name == "audit_curation":
                    module = path.relative_to(root.parent).with_suffix("")
                    callers.add(".".join(module.parts))
    callers.discard("timeline_pipeline.store.audit")
    assert callers == WRITERS
    actions = {action for action, _, _ in AUDITED}
    assert {f"entry.{a.value}" for a in Action} <= actions
    assert not set(UNWALKED) & actions
    assert attributed("token:tok_1") and attributed("dagster:abc") and attributed("lark:ou_1")
    assert not any(attributed(bare) for bare in ("api", "cli", "loopback", "cli:", "token:"))


# --- through the API ----------------------------------------------------------------------------


@pytest.fixture
def client(engine: Engine, draft: int, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    monkeypatch.setenv("TIMELINE_API_CURSOR_SECRET", "test-cursor-secret-0123456789")
    settings = Settings(LarkTimelineSettings(), RuntimeEnvironment(LARK_VERIFICATION_TOKEN="vt"))
    with TestClient(create_app(settings, engine), raise_server_exceptions=False) as made:
        yield made


def test_every_api_action_is_the_token_s(engine: Engine, draft: int, client: TestClient) -> None:
    with engine.begin() as conn:
        issued = api_tokens.create(conn, WORKSPACE, scopes=api_tokens.SCOPES)
    auth = {"Authorization": f"Bearer {issued.token}"}
    base = f"/api/workspaces/{WORKSPACE}"
    audit = Audit(engine)

    def ok(answer: Any) -> dict[str, Any]:
        assert answer.status_code in (200, 201, 204), answer.text
        return answer.json() if answer.content else {}

    entry = f"{base}/entries/{draft}"
    revision = 1
    for action in ("confirm", "hide", "restore"):
        revision = ok(client.post(f"{entry}/{action}", json={"revision": revision}, headers=auth))[
            "revision"
        ]
    ok(client.patch(entry, json={"title": "Rolled back", "revision": revision}, headers=auth))
    ok(
        client.post(
            f"{base}/entries",
            json={
                "title": "Paged the on-call",
                "category": "impact",
                "occurred_at": W1.isoformat(),
            },
            headers=auth,
        )
    )
    ok(client.put(f"{base}/summary", json={"content": "Rolled back."}, headers=auth))
    ok(client.put(f"{base}/curators/ou_curator", headers=auth))
    ok(client.delete(f"{base}/curators/ou_curator", headers=auth))
    hold = ok(
        client.post(
            f"{base}/lifecycle/holds",
            json={"reason": "preservation notice 7"},
            headers={**auth, "Idempotency-Key": "actors-create"},
        )
    )
    ok(
        client.post(
            f"{base}/lifecycle/holds/{hold['id']}/release",
            json={"reason": "the notice was withdrawn"},
            headers={**auth, "Idempotency-Key": "actors-release"},
        )
    )
    milestone = f"{base}/report/milestones/started"
    ok(client.put(milestone, json={"at": EARLY.isoformat()}, headers=auth))
    ok(client.delete(milestone, headers=auth))
    audit.check(API, f"token:{issued.id}")


# --- through the CLI ----------------------------------------------------------------------------


def test_every_cli_action_is_the_os_user_s(
    engine: Engine, db_url: str, draft: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIMELINE_DATABASE_URL", db_url)
    runner = CliRunner()

    def run(*args: str) -> Result:
        result = runner.invoke(cli, list(args))
        assert result.exit_code == 0, result.output
        return result

    def printed(result: Result) -> dict[str, Any]:
        """The (last) JSON a command printed, its log lines aside."""
        lines = [x for x in result.stdout.splitlines() if x.startswith("{")]
        return dict(json.loads(lines[-1]))

    audit = Audit(engine)
    entry = (WORKSPACE, str(draft))
    for action in ("confirm", "hide", "restore"):
        run("timeline", action, *entry)
    run("timeline", "edit", *entry, "--title", "Rolled back")
    run(
        "timeline", "add", WORKSPACE, "--title", "Paged the on-call", "--category", "impact",
        "--occurred-at", W1.isoformat(),
    )  # fmt: skip
    run("timeline", "summary", WORKSPACE, "--content", "Rolled back.")
    curator = ("--workspace", WORKSPACE, "--open-id", "ou_curator")
    run("workspace", "add-curator", *curator)
    run("workspace", "remove-curator", *curator)
    made = run(
        "lifecycle", "hold", "create", "--workspace", WORKSPACE, "--reason",
        "preservation notice 7", "--idempotency-key", "actors-create", "--json",
    )  # fmt: skip
    run(
        "lifecycle", "hold", "release", "--hold", printed(made)["id"], "--reason",
        "the notice was withdrawn", "--idempotency-key", "actors-release",
    )  # fmt: skip
    listener = run_listener(JobService(engine, default_registry(load_timeline_settings())))
    try:
        port = ("--port", str(listener.port))
        limits = (
            "--batch-size", "10", "--delay-ms", "1", "--lock-timeout-ms", "200",
            "--statement-timeout-ms", "2000",
        )  # fmt: skip
        job = printed(
            run(
                "maintenance", "create", "--type", "content_hash_backfill", "--idempotency-key",
                "actors-job", "--parameters", json.dumps({"workspace_id": WORKSPACE}),
                *limits, *port,
            )
        )  # fmt: skip

        def act(*args: str) -> dict[str, Any]:
            return printed(run("maintenance", *args, "--job", job["id"], *port))

        job = act("pause", "--revision", str(job["revision"]))
        job = act("configure", "--revision", str(job["revision"]), *limits)
        job = act("resume", "--revision", str(job["revision"]))
        job = act("run", "--max-batches", "1000", "--max-seconds", "60")
        second = printed(
            run(
                "maintenance", "create", "--type", "content_hash_backfill", "--idempotency-key",
                "actors-job-2", "--parameters", json.dumps({"workspace_id": WORKSPACE}),
                *limits, *port,
            )
        )  # fmt: skip
        run(
            "maintenance",
            "cancel",
            "--job",
            second["id"],
            "--revision",
            str(second["revision"]),
            *port,
        )
    finally:
        listener.stop()
    run("report", "build", "--workspace", WORKSPACE)
    started = ("--workspace", WORKSPACE, "--milestone", "started")
    run("report", "set-milestone", *started, "--at", EARLY.isoformat())
    run("report", "clear-milestone", *started)
    audit.check(CLI, f"cli:{getpass.getuser()}")


# --- through Dagster ----------------------------------------------------------------------------


def test_the_rerun_job_is_the_run_s(
    engine: Engine, db_url: str, draft: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    overrides = {"enabled": True}
    defs = dg.Definitions.merge(
        dg.Definitions(
            resources={
                "database": DatabaseResource(url=db_url),
                "timeline_settings": TimelineSettingsResource(overrides=overrides),
            }
        ),
        window_defs(load_timeline_settings(**overrides), SynthesizerResource()),
    )
    audit = Audit(engine)
    config = {"workspace_id": WORKSPACE, "processor_version": "rules-v2", "preview": True}
    with dg.instance_for_test() as instance:
        result = defs.resolve_job_def(RERUN_JOB).execute_in_process(
            instance=instance, run_config={"ops": {"create_rerun_windows": {"config": config}}}
        )
    assert result.success
    audit.check(DAGSTER, f"dagster:{result.run_id}")


def test_a_report_build_is_the_run_s(engine: Engine, db_url: str, draft: int) -> None:
    overrides = {"enabled": True}
    defs = dg.Definitions.merge(
        dg.Definitions(
            resources={
                "database": DatabaseResource(url=db_url),
                "timeline_settings": TimelineSettingsResource(overrides=overrides),
                "lark": LarkClientResource(
                    app_id="cli_x", app_secret="x", base_url="http://127.0.0.1:9"
                ),
            }
        ),
        report_defs(load_timeline_settings(**overrides)),
    )
    audit = Audit(engine)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(WORKSPACE_PARTITIONS, [WORKSPACE])
        result = defs.resolve_job_def(REPORT_JOB).execute_in_process(
            instance=instance, partition_key=WORKSPACE
        )
    assert result.success
    audit.check(REPORT_RUN, f"dagster:{result.run_id}")


# --- from the chat ------------------------------------------------------------------------------


def test_pins_and_card_decisions_are_the_lark_user_s(engine: Engine) -> None:
    audit = Audit(engine)
    with pin_harness(engine) as pins:
        message = pins.say("gateway pool exhausted at 12:40, raised max connections")
        assert pins.react(message).pinned
        assert pins.react(message, removed=True).unpinned
        assert pins.react(message).pinned
    pinned = audit.events()
    with harness(engine) as cards:
        ids = seed_entries(engine, cards.workspace_id, 2)
        card_id = plan_card(engine, cards.workspace_id, ids, ttl=timedelta(hours=1))
        cards.drain()
        seen = button(cards.shown(card_id), ids[0], "category")
        assert (
            cards.click(card_id, ids[0], "category", option="impact", value=seen).outcome
            == "admitted"
        )
        cards.drain()
        assert cards.click(card_id, ids[0], "confirm").outcome == "admitted"
        assert cards.click(card_id, ids[1], "hide").outcome == "admitted"
        cards.drain()
    events = audit.events()
    assert all(attributed(who) for _, who in events)
    assert {who for _, who in pinned} == {f"lark:{PIN_CURATOR}"}
    assert {who for _, who in events[len(pinned) :]} == {f"lark:{CARD_CURATOR}"}
    assert {a for a, _ in events} == expected(CHAT)


# --- from the timeline page ---------------------------------------------------------------------


def test_page_changes_are_the_session_s(engine: Engine, draft: int, client: TestClient) -> None:
    secret, csrf = session(engine, WORKSPACE)
    client.cookies.set(SESSION_COOKIE, secret, path="/ui")
    headers = {"X-CSRF-Token": csrf, "Origin": "http://testserver", "HX-Request": "true"}
    base = f"/ui/workspaces/{WORKSPACE}"
    audit = Audit(engine)

    def ok(path: str, data: dict[str, str]) -> None:
        answer = client.post(f"{base}{path}", data=data, headers=headers)
        assert answer.status_code in (200, 201, 303), answer.text

    for revision, action in enumerate(("confirm", "hide", "restore"), start=1):
        ok(f"/entries/{draft}/{action}", {"revision": str(revision)})
    ok(f"/entries/{draft}/edit", {"revision": "4", "title": "Rolled back"})
    typed = W1.strftime("%Y-%m-%dT%H:%M")
    ok("/entries", {"title": "Paged the on-call", "category": "impact", "occurred_at": typed})
    ok("/summary", {"content": "Rolled back."})
    early = EARLY.strftime("%Y-%m-%dT%H:%M")
    ok("/report/milestones/started", {"action": "set", "at": early})
    ok("/report/milestones/started", {"action": "clear"})
    events = audit.events()
    actors = {who for _, who in events}
    assert len(actors) == 1 and attributed(actors.pop())
    assert {a for a, _ in events} == expected(PAGE)
