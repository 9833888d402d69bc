"""Reconciliation keeps other bots' messages out of synthesis and this app's own messages out of
evidence altogether, counting both as the receiver's `timeline_lark_messages_excluded` counter
does for events: real local Lark, real client, real database (SQLite and PostgreSQL)."""

from __future__ import annotations

import uuid
from contextlib import ExitStack
from datetime import timedelta

from sqlalchemy import Engine

from timeline_pipeline.lark.simulator import ChatStore
from timeline_pipeline.orchestration.collection import run_metadata
from timeline_pipeline_tests.reconcile.harness import (
    NOW,
    Harness,
    messages,
    reconcile_settings,
    start_simulator,
)


def test_bots_messages_are_stored_out_of_synthesis_and_this_apps_own_are_not_stored(
    engine: Engine,
) -> None:
    app_id = f"cli_rec_{uuid.uuid4().hex[:12]}"
    items = messages(6, start=NOW - timedelta(hours=1))
    items[1]["sender"] = {"id": app_id, "id_type": "app_id", "sender_type": "app"}
    items[3]["sender"] = {"id": "cli_other_bot", "id_type": "app_id", "sender_type": "app"}
    items[4]["sender"] = {"id": "cli_another_bot", "id_type": "app_id", "sender_type": "app"}
    with ExitStack() as exits:
        sim = start_simulator(ChatStore(items), exits, app_id=app_id)
        harness = Harness(engine, sim, reconcile_settings(), exits)
        harness.workspace()

        report = harness.run()

        (chat,) = report.chats
        assert chat.ok and chat.messages == 6
        assert dict(chat.excluded) == {"self": 1, "bot": 2}
        assert report.totals()["excluded"] == {"bot": 2, "self": 1}
        assert run_metadata(report)["excluded"].value == {"bot": 2, "self": 1}
        assert report.totals()["skipped"].get("self_generated") == 1
        stored = harness.evidence()
        assert len(stored) == 5  # the app's own message is self-generated: not evidence
        assert app_id not in {row.actor_id for row in stored}
        assert sum(not row.ai_eligible for row in stored) == 2  # other bots: never synthesis input
