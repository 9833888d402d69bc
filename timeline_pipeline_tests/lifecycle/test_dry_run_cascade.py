"""Rows with no workspace column that go with their parent (ON DELETE CASCADE), such as the
callback tokens of a review card: the dry-run reports them in their card's workspace, held
where a hold keeps the card, purgeable only where the purge takes it; exactly what the purge
then does (docs/lifecycle.md, "Dry-run"). Both databases."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import Engine, insert, select

from timeline_pipeline.db.schema import interaction_requests, interaction_tokens
from timeline_pipeline.lifecycle.engine import PurgeEngine
from timeline_pipeline.lifecycle.registry import load_registry
from timeline_pipeline_tests.lifecycle.support import AS_OF, OLD, snapshot, workspace
from timeline_pipeline_tests.lifecycle.test_dry_run import by_key, hold, report_of

TOKENS = "interaction_tokens.interaction_tokens"
CARDS = "interaction_requests.interaction_requests"


def _card(engine: Engine, ws: str, *, status: str = "expired", tokens: int = 2) -> int:
    with engine.begin() as conn:
        card_id = int(
            conn.execute(
                insert(interaction_requests)
                .values(
                    workspace_id=ws,
                    kind="draft_review",
                    processor_version="rules-v1",
                    idempotency_uuid=f"{ws}-{status}-{tokens}",
                    chat_id="oc_1",
                    delivery_status="sent",
                    status=status,
                    request_json={},
                    decisions_json={},
                    expires_at=OLD,
                    created_at=OLD - timedelta(days=1),
                    updated_at=OLD,
                )
                .returning(interaction_requests.c.id)
            ).scalar_one()
        )
        for n in range(tokens):
            conn.execute(
                insert(interaction_tokens).values(
                    token_hash=f"{card_id:032d}{n:032d}", request_id=card_id, created_at=OLD
                )
            )
    return card_id


def _tokens(engine: Engine) -> set[int]:
    with engine.connect() as conn:
        return set(conn.execute(select(interaction_tokens.c.request_id)).scalars())


def test_tokens_of_a_held_workspace_are_reported_held_as_the_purge_keeps_them(
    engine: Engine,
) -> None:
    for ws in ("inc-1", "inc-2"):
        workspace(engine, ws)
    held_card = _card(engine, "inc-1")
    free_card = _card(engine, "inc-2")
    pending = _card(engine, "inc-2", status="pending", tokens=1)  # a pending card never goes
    hold_id = hold(engine, "inc-1")
    before = snapshot(engine)

    first = by_key(report_of(engine))
    assert by_key(report_of(engine)) == first  # identical, and read-only
    assert snapshot(engine) == before
    tokens = first[TOKENS]
    assert [
        (w.workspace, w.eligible, w.held, w.purgeable, w.blocked, w.holds)
        for w in tokens.workspaces
    ] == [
        ("inc-1", 2, 2, 0, 0, [hold_id]),
        ("inc-2", 3, 0, 2, 1, []),
    ]
    assert (tokens.eligible, tokens.held, tokens.purgeable) == (5, 2, 2)
    assert first[CARDS].held == 1

    only = by_key(report_of(engine, workspace_id="inc-1"))[TOKENS]
    assert [(w.workspace, w.held, w.purgeable) for w in only.workspaces] == [("inc-1", 2, 0)]

    # the purge does what the dry-run said
    PurgeEngine(engine, load_registry()).run(as_of=AS_OF)
    assert _tokens(engine) == {held_card, pending}
    assert free_card not in _tokens(engine)
