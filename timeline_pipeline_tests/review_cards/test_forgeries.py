"""Forged, mismatched and malformed card callbacks are refused with a toast that names the
reason, answered as a success to Lark (so it does not redeliver), counted by reason, and change
no row (docs/review-cards.md). One card per database serves every case."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from sqlalchemy import Engine, func, select

from timeline_pipeline.db.schema import (
    audit_events,
    interaction_admissions,
    interaction_requests,
    workspace_timeline_entries,
)
from timeline_pipeline.store import entries
from timeline_pipeline_tests.review_cards.harness import (
    Harness,
    button,
    harness,
    plan_card,
    seed_entries,
)


def _snapshot(engine: Engine) -> tuple[Any, ...]:
    with engine.connect() as conn:
        return (
            conn.execute(select(func.count()).select_from(interaction_admissions)).scalar_one(),
            conn.execute(select(func.count()).select_from(audit_events)).scalar_one(),
            tuple(
                conn.execute(
                    select(interaction_requests.c.id, interaction_requests.c.revision).order_by(
                        interaction_requests.c.id
                    )
                ).all()
            ),
            tuple(
                conn.execute(
                    select(
                        workspace_timeline_entries.c.id,
                        workspace_timeline_entries.c.revision,
                        workspace_timeline_entries.c.status,
                    ).order_by(workspace_timeline_entries.c.id)
                ).all()
            ),
        )


def _refused_count(h: Harness, reason: str) -> float:
    value = h.metrics.registry.get_sample_value(
        "timeline_review_card_callbacks_refused_total", {"reason": reason}
    )
    return value or 0.0


def test_forged_mismatched_and_malformed_callbacks_are_refused_and_change_nothing(
    engine: Engine,
) -> None:
    with harness(engine) as h:
        ids = seed_entries(engine, h.workspace_id, 2)
        card = plan_card(engine, h.workspace_id, ids[:1], ttl=timedelta(hours=1))
        other = plan_card(engine, h.workspace_id, ids[1:], ttl=timedelta(hours=1))
        h.drain()
        entry = ids[0]
        mine = button(h.shown(card), entry, "confirm")
        theirs = button(h.shown(other), ids[1], "confirm")
        other_message = h.card(other).message_id
        long_title = "x" * 513

        cases: list[tuple[str, Callable[[], dict[str, Any]]]] = [
            ("unknown_card", lambda: h.payload(card, entry, "confirm", message_id="om_unknown")),
            ("malformed_value", lambda: h.payload(card, entry, "confirm", value={"t": mine["t"]})),
            (
                "malformed_value",
                lambda: h.payload(card, entry, "confirm", value={**mine, "e": "x1"}),
            ),
            (
                "forged_token",
                lambda: h.payload(card, entry, "confirm", value={**mine, "t": "forged"}),
            ),
            (
                "token_of_another_card",
                lambda: h.payload(card, entry, "confirm", value={**theirs, "e": entry}),
            ),
            (
                "token_of_another_card",
                lambda: h.payload(card, entry, "confirm", value=mine, message_id=other_message),
            ),
            ("wrong_chat", lambda: h.payload(card, entry, "confirm", chat_id="oc_elsewhere")),
            ("wrong_bot", lambda: h.payload(card, entry, "confirm", app_id="cli_other_app")),
            ("not_curator", lambda: h.payload(card, entry, "confirm", operator="ou_bystander")),
            (
                "entry_not_offered",
                lambda: h.payload(card, entry, "confirm", value={**mine, "e": ids[1]}),
            ),
            ("option_not_offered", lambda: h.payload(card, entry, "category", option="made_up")),
            ("option_not_offered", lambda: h.payload(card, entry, "category")),
            ("invalid_title", lambda: h.payload(card, entry, "edit", title=long_title)),
            ("invalid_title", lambda: h.payload(card, entry, "edit", title="two\nlines")),
        ]
        before = _snapshot(engine)
        assert h.callbacks is not None
        for reason, build in cases:
            counted = _refused_count(h, reason)
            answer = h.callbacks.handle(build())
            assert (answer.outcome, answer.reason) == ("refused", reason), reason
            assert answer.body["toast"]["type"] == "error"
            assert answer.body["toast"]["content"]
            assert "card" not in answer.body
            assert _refused_count(h, reason) == counted + 1
            assert _snapshot(engine) == before, reason
        h.drain()
        assert _snapshot(engine) == before


def test_a_draft_changed_on_the_page_is_refused_as_stale_and_the_redrawn_card_works(
    engine: Engine,
) -> None:
    with harness(engine) as h:
        ids = seed_entries(engine, h.workspace_id, 1)
        card = plan_card(engine, h.workspace_id, ids, ttl=timedelta(hours=1))
        h.drain()
        from timeline_pipeline.curation.service import CurationService

        CurationService(engine).edit(
            h.workspace_id, ids[0], {"title": "Edited on the page"}, expected_revision=1, actor="ui"
        )
        before = _snapshot(engine)
        answer = h.click(card, ids[0], "confirm")
        assert (answer.outcome, answer.reason) == ("refused", "stale_revision")
        assert "changed meanwhile" in answer.body["toast"]["content"]
        assert "Edited on the page" in answer.body["toast"]["content"]
        # Nothing was decided or applied; only the card's copy of the draft caught up.
        assert _snapshot(engine)[:2] == before[:2]
        assert _snapshot(engine)[3:] == before[3:]
        redrawn = answer.body["card"]["data"]
        assert "Edited on the page" in str(redrawn)
        again = h.click(card, ids[0], "confirm", value=button(redrawn, ids[0], "confirm"))
        assert again.outcome == "admitted"
        h.drain()
        with engine.connect() as conn:
            row = entries.get(conn, ids[0])
        assert row is not None and (row.status, row.title) == ("confirmed", "Edited on the page")
