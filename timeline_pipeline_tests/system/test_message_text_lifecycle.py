"""A recalled message's text leaves every copy the product made of it (issue 34, docs/lifecycle.md
"What a recall and a hold do to each copy"), on SQLite and PostgreSQL, with a real `serve`.

One message carries a unique string. It is delivered as Lark's event to a real `serve` process,
read again by reconciliation, drafted by the window synthesis and summarized in Dagster (a real
instance whose storage lives in a directory of this test), offered on a review card and pinned
by a curator's reaction (the bot's reply), previewed by a rerun (`rerun_windows`, preview) and
exported (`timeline export`). Before the recall the string is in each of those copies (so the
test proves the copies exist); then the message is recalled in Lark, the documented sweep runs
(the card worker's redraws, the summary sensor's rewrite of the windows the recall reopened, a
`lifecycle run`), and the string is in no table of the product database, nowhere in Dagster's
storage and in none of the bot's messages as Lark shows them. Under a workspace hold created
before the recall the string stays only where the hold keeps it (`HELD_PLACES`), and in no place
a reader sees (the API's timeline, the page, the export).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import httpx
import pytest
from click.testing import CliRunner
from sqlalchemy import Engine, select

from timeline_pipeline.cli.main import cli
from timeline_pipeline.db.schema import interaction_requests, workspace_timeline_evidence
from timeline_pipeline.domain.window_keys import window_start_of
from timeline_pipeline.lark.simulator.events import (
    EventIdentity,
    message_recalled_event,
    message_receive_event,
    reaction_event,
)
from timeline_pipeline.lark.simulator.fixtures import message_item
from timeline_pipeline.lark.simulator.pusher import send_signed
from timeline_pipeline.lark.simulator.runner import SimulatorServer
from timeline_pipeline.lark.simulator.store import ChatStore
from timeline_pipeline.orchestration.resources import DatabaseResource, TimelineSettingsResource
from timeline_pipeline.orchestration.summary import (
    SUMMARY_JOB,
    SUMMARY_SENSOR,
    WORKSPACE_PARTITIONS,
    summary_defs,
)
from timeline_pipeline.orchestration.windows import (
    DISCOVERY_SENSOR,
    RERUN_JOB,
    SYNTHESIS_JOB,
    SynthesizerResource,
    window_defs,
)
from timeline_pipeline.settings import load_timeline_settings
from timeline_pipeline.store import api_tokens, workspaces
from timeline_pipeline.ui.pages import SESSION_COOKIE
from timeline_pipeline_tests.review_cards.processes import ENCRYPT_KEY, TOKEN, env, serving
from timeline_pipeline_tests.review_cards.processes import wait_for as _wait_for
from timeline_pipeline_tests.support.windows import WINDOW
from timeline_pipeline_tests.system.message_text_support import (
    Place,
    dagster_places,
    product_places,
)
from timeline_pipeline_tests.ui.support import session

CHAT = "oc_lineage_chat"
CURATOR = "ou_lineage_curator"
RESPONDER = "ou_lineage_responder"
OVERRIDES: dict[str, Any] = {
    "enabled": True,
    "summary_enabled": True,
    "review_cards_enabled": True,
    "synthesis_chunk_max_attempts": 1,
}

HELD_PLACES: frozenset[Place] = frozenset(
    {
        ("workspace_timeline_evidence", "held_content_json"),
        ("workspace_timeline_entries", "metadata_json"),
        ("workspace_timeline_summaries", "metadata_json"),
    }
)
"""Where docs/lifecycle.md says a hold keeps what a recall replaced: the evidence's
`held_content_json`, the entry's `held_recalled_text` and the automatic summary's metadata. No
view, API or export reads them."""

EVERY_COPY: frozenset[Place] = frozenset(
    {
        ("workspace_timeline_evidence", "content"),
        ("workspace_timeline_entries", "title"),
        ("workspace_timeline_summaries", "content"),
        ("interaction_requests", "request_json"),
        ("window_rerun_previews", "title"),
    }
)
"""The copies the flow must have made before the recall, so that the test proves something."""


def wait_for(condition: Any, timeout: float, what: str) -> None:
    _wait_for(condition, timeout=timeout, what=what)


@dataclass
class Flow:
    """The parts of one run: the database, the local Lark, `serve`, Dagster."""

    engine: Engine
    db_url: str
    lark: SimulatorServer
    events_url: str
    instance: dg.DagsterInstance
    home: Path
    workspace_id: str
    canary: str
    message_id: str
    export_dir: Path

    @property
    def identity(self) -> EventIdentity:
        return EventIdentity(app_id=self.lark.app_id, verification_token=TOKEN)

    def push(self, payload: dict[str, Any]) -> None:
        answer = send_signed(self.events_url, payload, encrypt_key=ENCRYPT_KEY)
        assert answer.status == 200, answer.body

    def cli(self, *args: str, **extra: str) -> str:
        environ = {
            "TIMELINE_DATABASE_URL": self.db_url,
            "TIMELINE_LARK_ENABLED": "true",
            "TIMELINE_LARK_RECONCILIATION_ENABLED": "true",
            "TIMELINE_LARK_LARK_MAX_ATTEMPTS": "2",
            "LARK_APP_ID": self.lark.app_id,
            "LARK_APP_SECRET": self.lark.app_secret,
            "LARK_BASE_URL": self.lark.base_url,
            "NO_PROXY": "127.0.0.1,localhost",
            **extra,
        }
        result = CliRunner().invoke(cli, list(args), env=environ)
        assert result.exit_code == 0, (args, result.output)
        return result.stdout

    # --- Dagster ---------------------------------------------------------------------------

    def defs(self) -> dg.Definitions:
        resources = dg.Definitions(
            resources={
                "database": DatabaseResource(url=self.db_url),
                "timeline_settings": TimelineSettingsResource(overrides=OVERRIDES),
            }
        )
        settings = load_timeline_settings(**OVERRIDES)
        return dg.Definitions.merge(
            resources,
            window_defs(settings, SynthesizerResource()),
            summary_defs(settings),
        )

    def tick(self, defs: dg.Definitions, name: str) -> Any:
        sensor = defs.resolve_sensor_def(name)
        with dg.build_sensor_context(
            instance_ref=self.instance.get_ref(), definitions=defs, resources=defs.resources
        ) as context:
            result = sensor.evaluate_tick(context)
        for request in result.dynamic_partitions_requests or []:
            self.instance.add_dynamic_partitions(
                request.partitions_def_name, list(request.partition_keys)
            )
        return result

    def synthesize(self) -> None:
        """The discovery sensor's tick and its runs, as the daemon launches them."""
        defs = self.defs()
        for request in self.tick(defs, DISCOVERY_SENSOR).run_requests:
            result = defs.resolve_job_def(SYNTHESIS_JOB).execute_in_process(
                instance=self.instance,
                partition_key=request.partition_key,
                tags=dict(request.tags),
                run_config=request.run_config,
            )
            assert result.success

    def summarize(self) -> int:
        """The summary sensor's tick and its runs; how many ran."""
        defs = self.defs()
        requests = self.tick(defs, SUMMARY_SENSOR).run_requests
        for request in requests:
            self.instance.add_dynamic_partitions(WORKSPACE_PARTITIONS, [request.partition_key])
            result = defs.resolve_job_def(SUMMARY_JOB).execute_in_process(
                partition_key=request.partition_key,
                instance=self.instance,
                tags=dict(request.tags),
            )
            assert result.success
        return len(requests)

    def preview_rerun(self) -> None:
        config = {"workspace_id": self.workspace_id, "processor_version": "rules-v2"}
        result = (
            self.defs()
            .resolve_job_def(RERUN_JOB)
            .execute_in_process(
                instance=self.instance,
                run_config={
                    "ops": {"create_rerun_windows": {"config": {**config, "preview": True}}}
                },
            )
        )
        assert result.success

    # --- what readers and Lark see ----------------------------------------------------------

    def export(self, name: str) -> str:
        out = self.export_dir / name
        self.cli("timeline", "export", self.workspace_id, "--output", str(out))
        return out.read_text(encoding="utf-8")

    def bot_messages(self) -> list[str]:
        """Every message the bot posted (its cards and replies), as Lark shows it now."""
        with self.engine.connect() as conn:
            ids = conn.execute(
                select(interaction_requests.c.message_id).where(
                    interaction_requests.c.message_id.is_not(None)
                )
            ).scalars()
            posted = [str(i) for i in ids]
        shown = [self.lark.store.get(i) for i in posted]
        return [json.dumps(m, ensure_ascii=False) for m in shown if m is not None]

    def settled(self) -> bool:
        """Every card and reply is posted and has no redraw pending."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(interaction_requests.c.message_id, interaction_requests.c.redraw_pending)
            ).all()
        return bool(rows) and all(r.message_id and not r.redraw_pending for r in rows)

    def kinds(self) -> set[str]:
        with self.engine.connect() as conn:
            return set(conn.execute(select(interaction_requests.c.kind)).scalars())

    def recalled(self) -> bool:
        with self.engine.connect() as conn:
            return bool(
                conn.execute(
                    select(workspace_timeline_evidence.c.deleted).where(
                        workspace_timeline_evidence.c.source_key.like(f"%{self.message_id}")
                    )
                ).scalar_one()
            )


@pytest.fixture
def lark() -> Iterator[SimulatorServer]:
    app_id = f"cli_lineage_{secrets.token_hex(4)}"
    with SimulatorServer(ChatStore(), app_id=app_id, app_secret=secrets.token_urlsafe(12)) as sim:
        yield sim


def _plant(engine: Engine, lark: SimulatorServer, canary: str) -> tuple[str, str]:
    """A workspace bound to the chat with a curator, and the message in Lark: (workspace, id)."""
    now = datetime.now(UTC)
    workspace_id = f"inc-{secrets.token_hex(3)}"
    with engine.begin() as conn:
        workspaces.create(conn, workspace_id, created_at=now - timedelta(hours=3))
        workspaces.bind_chat(conn, workspace_id, CHAT)
        workspaces.add_curator(conn, workspace_id, CURATOR)
    at = window_start_of(now - timedelta(hours=2), WINDOW) + timedelta(minutes=1)
    message_id = f"om_{secrets.token_hex(8)}"
    text = f"we rolled back the deploy of payments-api {canary} to v41"
    lark.store.add_message(
        message_item(
            "text",
            {"text": text},
            message_id=message_id,
            chat_id=CHAT,
            create_time=str(int(at.timestamp() * 1000)),
            sender_id=RESPONDER,
        )
    )
    return workspace_id, message_id


def _reader_views(flow: Flow, base_url: str, name: str) -> dict[str, str]:
    """What readers see: the API's timeline, the page, the export."""
    with flow.engine.begin() as conn:
        issued = api_tokens.create(conn, flow.workspace_id, scopes=api_tokens.SCOPES)
    secret, _csrf = session(flow.engine, flow.workspace_id)
    with httpx.Client(base_url=base_url, timeout=30, trust_env=False) as http:
        api = http.get(
            f"/api/workspaces/{flow.workspace_id}/timeline",
            headers={"Authorization": f"Bearer {issued.token}"},
        )
        assert api.status_code == 200, api.text
        http.cookies.set(SESSION_COOKIE, secret, path="/ui")
        page = http.get(f"/ui/workspaces/{flow.workspace_id}")
        assert page.status_code == 200, page.text
    return {"api": api.text, "page": page.text, "export": flow.export(name)}


@pytest.mark.parametrize("held", [False, True], ids=["free", "held"])
def test_a_recalled_message_leaves_every_copy_but_what_a_hold_keeps(
    db_url: str, engine: Engine, lark: SimulatorServer, tmp_path: Path, held: bool
) -> None:
    canary = f"zq7-canary-{secrets.token_hex(4)}"
    workspace_id, message_id = _plant(engine, lark, canary)
    environ = env(
        db_url,
        lark.base_url,
        lark.app_id,
        lark.app_secret,
        TIMELINE_LARK_ENABLED="true",
        TIMELINE_LARK_EVENT_INGESTION_ENABLED="true",
        TIMELINE_LARK_PIN_FROM_CHAT_ENABLED="true",
        TIMELINE_API_CURSOR_SECRET="lineage-cursor-secret-0123456789",
    )
    home = tmp_path / "dagster"
    home.mkdir()
    with (
        serving(tmp_path, "serve", environ) as events_url,
        dg.instance_for_test(temp_dir=str(home)) as instance,
    ):
        flow = Flow(
            engine, db_url, lark, events_url, instance, home, workspace_id, canary, message_id,
            tmp_path,
        )  # fmt: skip
        item = lark.store.get(message_id)
        assert item is not None
        # The event, then reconciliation reading the same message from the chat's history.
        flow.push(message_receive_event(item, flow.identity))
        wait_for(
            lambda: ("workspace_timeline_evidence", "content") in product_places(engine, canary),
            30,
            "the event stored",
        )
        flow.cli("reconcile", "--workspace", workspace_id, "--json")
        # Synthesis drafts it, the summary quotes the draft, the card worker in `serve` posts
        # the window's review card; a curator pins the message and the bot replies.
        flow.synthesize()
        assert flow.summarize() == 1
        flow.push(
            reaction_event(
                flow.identity, message_id=message_id, emoji_type="Pin", operator_open_id=CURATOR
            )
        )
        wait_for(lambda: flow.kinds() == {"draft_review", "chat_pin"}, 30, "the card and reply")
        wait_for(flow.settled, 30, "the card and the reply posted")
        flow.preview_rerun()
        base_url = events_url.removesuffix("/lark/events")
        before = _reader_views(flow, base_url, "before.md")
        copies = product_places(engine, canary)
        assert copies >= EVERY_COPY, sorted(EVERY_COPY - copies)
        assert all(canary in view for view in before.values())
        assert any(canary in m for m in flow.bot_messages())

        if held:
            flow.cli(
                "lifecycle", "hold", "create", "--workspace", workspace_id, "--reason",
                "preservation notice 34", "--idempotency-key", f"hold-{message_id}",
            )  # fmt: skip
        # The recall, in Lark and as its event; then the documented sweep.
        lark.store.recall_message(message_id)
        flow.push(message_recalled_event(message_id, CHAT, flow.identity))
        wait_for(flow.recalled, 30, "the recall stored")
        wait_for(flow.settled, 30, "the cards and the reply redrawn")
        # The recall reopened the summary's window: the sensor's next tick decides it (with
        # its only entry hidden it is settled without a run, the summary staying redacted).
        flow.summarize()
        flow.cli("lifecycle", "run")
        after = _reader_views(flow, base_url, "after.md")

        seen = {name for name, view in after.items() if canary in view}
        assert seen == set(), f"readers still see the recalled text in {sorted(seen)}"
        assert [m for m in flow.bot_messages() if canary in m] == []
        left = product_places(engine, canary)
        if held:
            # Only where the hold keeps it, and kept there: the hold's promise both ways.
            assert left == HELD_PLACES, (sorted(left - HELD_PLACES), sorted(HELD_PLACES - left))
        else:
            assert left == set(), sorted(left)
    # The scan reads Dagster's storage (the workspace's id is in its runs' tags), and finds no
    # text of the message there: run metadata carries ids and counts only.
    assert dagster_places(home, workspace_id) != set()
    assert dagster_places(home, canary) == set()
