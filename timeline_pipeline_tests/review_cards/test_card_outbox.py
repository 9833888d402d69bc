"""A window's review card is planned after the window finishes, from its flag, not in the
synthesis transaction (docs/review-cards.md, "How a card is planned"): the finish only flags the
window, the card worker's pass plans the card once and clears the flag in one transaction, and a
pass that fails before its commit leaves the flag for the next one. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any

import pytest
from click.testing import CliRunner
from prometheus_client import CollectorRegistry
from sqlalchemy import Connection, Engine, func, select

from timeline_pipeline.cli.main import cli
from timeline_pipeline.db.schema import interaction_requests, workspace_timeline_entries
from timeline_pipeline.db.schema import workspace_timeline_sync_states as ss
from timeline_pipeline.domain.card_requests import KIND_DRAFT_REVIEW
from timeline_pipeline.domain.sync_states import SyncState
from timeline_pipeline.domain.window_keys import WindowRef
from timeline_pipeline.observability.metrics import ReviewCardMetrics
from timeline_pipeline.review_cards import planner
from timeline_pipeline.review_cards.card_figures import review_card_figures
from timeline_pipeline.review_cards.planner import PlanPass, plan_flagged_cards
from timeline_pipeline.review_cards.worker import CardWorker
from timeline_pipeline.security.callback_tokens import card_uuid
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import interaction_requests as cards
from timeline_pipeline.store import sync_states, window_states
from timeline_pipeline.store.interaction_requests import CardRow
from timeline_pipeline.synthesis.rules import RuleSynthesizer
from timeline_pipeline.synthesis_run.runner import RunStatus, WindowRunner
from timeline_pipeline_tests.support.windows import WINDOW
from timeline_pipeline_tests.windows.support import T0, post, settings, workspace

REF = WindowRef("inc-1", "oc_chat", T0)
NOW = T0 + timedelta(hours=6)
LATER = WindowRef("inc-1", "oc_chat", T0 + timedelta(hours=2))
"""A window far enough from `REF` that its drafts are its own, not `REF`'s restated."""
FACTS = [
    "we rolled back the deploy of payments-api to v{n}",
    "root cause: connection pool {n} exhausted after the config change",
    "error rate back to normal on shard {n}, recovered",
]
ON = settings(review_cards_enabled=True)


def synthesize(engine: Engine, config: LarkTimelineSettings, ref: WindowRef = REF) -> SyncState:
    """A window of facts in `ref`'s chat, run to completion by the real runner."""
    for n, fact in enumerate(FACTS):
        post(
            engine,
            [ref.window_start + timedelta(seconds=5 * n)],
            chat_id=ref.chat_id,
            text=fact.format(n=n),
            prefix=f"f{n}",
        )
    report = WindowRunner(
        engine, config, RuleSynthesizer(), clock=lambda: NOW, sleep=lambda _: None
    ).run(ref, owner="run-1")
    assert report.status is RunStatus.COMPLETED
    return state_of(engine, ref)


def state_of(engine: Engine, ref: WindowRef = REF) -> SyncState:
    with engine.connect() as conn:
        state = sync_states.get_by_key(
            conn, ref.workspace_id, "system", "lark_timeline_window", ref.source_key
        )
    assert state is not None
    return state


def flagged(engine: Engine, state_id: int) -> bool:
    with engine.connect() as conn:
        return bool(
            conn.execute(select(ss.c.review_card_pending).where(ss.c.id == state_id)).scalar_one()
        )


def card_rows(engine: Engine) -> list[CardRow]:
    with engine.connect() as conn:
        return cards.for_workspace(conn, "inc-1")


def card_count(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(
            conn.execute(select(func.count()).select_from(interaction_requests)).scalar_one()
        )


def test_the_finish_only_flags_the_window_and_writes_no_card(engine: Engine) -> None:
    workspace(engine)
    state = synthesize(engine, ON)
    assert state.status == "completed"
    assert flagged(engine, state.id)
    assert card_count(engine) == 0


def test_one_pass_plans_the_card_once_and_clears_the_flag(engine: Engine) -> None:
    workspace(engine)
    state = synthesize(engine, ON)

    first = plan_flagged_cards(engine, ON, now=NOW)
    assert first == PlanPass(planned=1, cleared=1, failed=0, after=None)
    assert not flagged(engine, state.id)
    (card,) = card_rows(engine)
    assert card.kind == KIND_DRAFT_REVIEW
    assert card.window_state_id == state.id
    assert card.chat_id == "oc_chat"
    assert card.delivery_status == "queued"
    assert card.idempotency_uuid == card_uuid(state.id, state.processor_version or "unknown")
    assert card.request.entries  # the window's drafts

    assert plan_flagged_cards(engine, ON, now=NOW) == PlanPass()
    assert card_count(engine) == 1


def test_a_pass_that_fails_before_its_commit_leaves_the_flag_for_the_next(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace(engine)
    state = synthesize(engine, ON)
    real = planner.plan_review_card

    def crash_after_the_insert(conn: Connection, *args: Any, **kwargs: Any) -> CardRow | None:
        real(conn, *args, **kwargs)  # the card row is written, then the process dies
        raise RuntimeError("killed before the commit")

    monkeypatch.setattr(planner, "plan_review_card", crash_after_the_insert)
    assert plan_flagged_cards(engine, ON, now=NOW) == PlanPass(failed=1)
    assert flagged(engine, state.id)
    assert card_count(engine) == 0

    monkeypatch.setattr(planner, "plan_review_card", real)
    assert plan_flagged_cards(engine, ON, now=NOW).planned == 1
    assert not flagged(engine, state.id)
    assert card_count(engine) == 1


def test_with_review_cards_off_no_window_is_flagged_and_no_card_planned(engine: Engine) -> None:
    workspace(engine)
    state = synthesize(engine, settings())
    assert not flagged(engine, state.id)
    assert plan_flagged_cards(engine, ON, now=NOW) == PlanPass()
    assert plan_flagged_cards(engine, settings(), now=NOW) == PlanPass()
    assert card_count(engine) == 0


def test_a_flagged_window_with_no_drafts_left_is_cleared_without_a_card(engine: Engine) -> None:
    workspace(engine)
    state = synthesize(engine, ON)
    with engine.begin() as conn:  # every draft decided on the page before the pass
        conn.execute(workspace_timeline_entries.update().values(status="confirmed"))
    assert plan_flagged_cards(engine, ON, now=NOW) == PlanPass(planned=0, cleared=1)
    assert not flagged(engine, state.id)
    assert card_count(engine) == 0


def test_an_ignored_finish_sets_no_flag_and_a_window_without_drafts_plans_none(
    engine: Engine,
) -> None:
    """The store's side: a finish flags only when asked; a flagged window with no drafts at all
    is cleared with no card."""
    workspace(engine)
    post(engine, [T0 + timedelta(minutes=1)], text="ok thanks")
    post(engine, [T0 + WINDOW + timedelta(minutes=1)], text="ok thanks", prefix="later")
    ids = []
    for start, review_card in ((T0, False), (T0 + WINDOW, True)):
        with engine.begin() as conn:
            made = window_states.create_window_if_evidence(
                conn,
                workspace_id="inc-1",
                chat_id="oc_chat",
                window_start=start,
                window_end=start + WINDOW,
                now=NOW,
            )
            assert made is not None
            claimed = window_states.claim_window(
                conn, made, owner="w", max_attempts=3, stale_timeout=timedelta(minutes=15), now=NOW
            )
            assert claimed is not None
            done = window_states.finish_window(
                conn,
                claimed,
                status="completed",
                aggregate_hash="h",
                metadata={},
                now=NOW,
                review_card=review_card,
            )
            assert done is not None and done.revision == claimed.revision + 1
            ids.append(done.id)
    assert [flagged(engine, i) for i in ids] == [False, True]
    assert plan_flagged_cards(engine, ON, now=NOW) == PlanPass(planned=0, cleared=1)
    assert not flagged(engine, ids[1])
    assert card_count(engine) == 0


def test_the_pass_reads_a_bounded_batch_and_the_next_goes_on_after_it(engine: Engine) -> None:
    workspace(engine)
    refs = [REF, LATER, WindowRef("inc-1", "oc_chat", T0 + timedelta(hours=4))]
    states = [synthesize(engine, ON, ref) for ref in refs]

    first = plan_flagged_cards(engine, ON, now=NOW, limit=2)
    assert (first.planned, first.after) == (2, max(s.id for s in states[:2]))
    second = plan_flagged_cards(engine, ON, now=NOW, limit=2, after=first.after)
    assert (second.planned, second.after) == (1, None)
    assert sorted(c.window_state_id or 0 for c in card_rows(engine)) == sorted(s.id for s in states)
    assert not any(flagged(engine, s.id) for s in states)


def test_a_failing_window_does_not_hold_up_the_others(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace(engine)
    bad = synthesize(engine, ON)
    good = synthesize(engine, ON, LATER)
    real = planner.plan_review_card

    def fail_one(conn: Connection, window: SyncState, *args: Any, **kwargs: Any) -> CardRow | None:
        if window.id == bad.id:
            raise ValueError("unplannable")
        return real(conn, window, *args, **kwargs)

    monkeypatch.setattr(planner, "plan_review_card", fail_one)
    assert plan_flagged_cards(engine, ON, now=NOW) == PlanPass(planned=1, cleared=1, failed=1)
    assert [c.window_state_id for c in card_rows(engine)] == [good.id]
    assert flagged(engine, bad.id) and not flagged(engine, good.id)


def test_a_flagged_window_replayed_meanwhile_waits_for_its_new_finish(engine: Engine) -> None:
    workspace(engine)
    state = synthesize(engine, ON)
    with engine.begin() as conn:
        assert window_states.reset_window(conn, state, now=NOW)
    assert plan_flagged_cards(engine, ON, now=NOW) == PlanPass()  # pending: left alone
    assert flagged(engine, state.id)
    report = WindowRunner(
        engine, ON, RuleSynthesizer(), clock=lambda: NOW, sleep=lambda _: None
    ).run(REF, owner="run-2")
    assert report.status in (RunStatus.COMPLETED, RunStatus.IGNORED)
    assert plan_flagged_cards(engine, ON, now=NOW).planned == 1
    assert card_count(engine) == 1


def test_the_card_worker_plans_a_finished_windows_card_in_its_round(engine: Engine) -> None:
    workspace(engine)
    state = synthesize(engine, ON)
    worker = CardWorker(engine, ON, None, ReviewCardMetrics(CollectorRegistry()), clock=_now)
    try:
        report = worker.run_once()
        assert (report.planned, report.cleared) == (1, 1)
        assert report.busy
        assert [c.window_state_id for c in card_rows(engine)] == [state.id]
        again = worker.drain(max_seconds=5)
        assert again.planned == 0
        assert card_count(engine) == 1
    finally:
        worker.close()


def _now() -> datetime:
    return NOW


def test_review_cards_work_drain_plans_the_flagged_windows_cards(
    engine: Engine, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`review-cards work --drain` (a worker apart from `serve`) plans them too, and says so."""
    workspace(engine)
    state = synthesize(engine, ON)
    monkeypatch.setenv("TIMELINE_DATABASE_URL", db_url)
    monkeypatch.setenv("TIMELINE_LARK_REVIEW_CARDS_ENABLED", "true")
    result = CliRunner().invoke(cli, ["review-cards", "work", "--drain", "--json"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["planned"] == 1
    assert [c.window_state_id for c in card_rows(engine)] == [state.id]
    assert not flagged(engine, state.id)


@pytest.mark.postgres_only
@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_passes_racing_on_the_same_windows_plan_each_card_once(engine: Engine) -> None:
    """Two replicas' workers at once: the compare-and-set on the flag, taken first in each
    window's transaction, lets one of them plan it; the other finds it gone."""
    workspace(engine)
    states = [synthesize(engine, ON, ref) for ref in (REF, LATER)]
    start = threading.Barrier(4)

    def one_pass() -> PlanPass:
        start.wait(5)
        return plan_flagged_cards(engine, ON, now=NOW)

    with ThreadPoolExecutor(max_workers=4) as pool:
        passes = list(pool.map(lambda _: one_pass(), range(4)))
    assert sum(p.planned for p in passes) == 2
    assert sum(p.failed for p in passes) == 0
    assert sorted(c.window_state_id or 0 for c in card_rows(engine)) == [s.id for s in states]


def test_the_health_figures_count_the_windows_whose_card_is_still_to_plan(
    engine: Engine,
) -> None:
    workspace(engine)
    synthesize(engine, ON)
    waiting = review_card_figures(engine, NOW + timedelta(minutes=1))  # finished at NOW
    assert waiting["review_cards_unplanned"] == 1
    assert waiting["review_cards_unplanned_oldest_seconds"] == 60.0
    plan_flagged_cards(engine, ON, now=NOW)
    planned = review_card_figures(engine, NOW)
    assert planned["review_cards_unplanned"] == 0
    assert planned["review_cards_unplanned_oldest_seconds"] == 0.0


ONE_ATTEMPT = settings(review_cards_enabled=True, synthesis_window_max_attempts=1)
"""A window's synthesis gets one attempt: a replay's first failure is its last."""


def _replay_fails(engine: Engine, state: SyncState, *, attempts: int) -> SyncState:
    """An operator's replay of the flagged window that fails `attempts` times, through the real
    transitions (reset, claim, fail), as a replay's synthesis that keeps failing leaves it."""
    with engine.begin() as conn:
        assert window_states.reset_window(conn, state, now=NOW)
    for _ in range(attempts):
        current = state_of(engine)
        with engine.begin() as conn:
            claimed = window_states.claim_window(
                conn,
                current,
                owner="replay",
                max_attempts=3,
                stale_timeout=timedelta(minutes=15),
                now=NOW,
            )
            assert claimed is not None
            assert window_states.fail_window(
                conn, claimed, error="chunk 1 refused", retry_at=NOW, now=NOW
            )
    return state_of(engine)


def test_a_flagged_window_whose_replay_fails_for_good_still_gets_its_card(engine: Engine) -> None:
    """Issue 35, item 9: the replay's failure is final (no attempt left), so the drafts the
    window has are the ones it ends with: its card is planned from them, once."""
    workspace(engine)
    state = synthesize(engine, ONE_ATTEMPT)
    failed = _replay_fails(engine, state, attempts=1)
    assert (failed.status, failed.attempt_count) == ("failed", 1)
    assert flagged(engine, state.id)

    assert plan_flagged_cards(engine, ONE_ATTEMPT, now=NOW) == PlanPass(planned=1, cleared=1)
    assert [c.window_state_id for c in card_rows(engine)] == [state.id]
    assert not flagged(engine, state.id)
    assert review_card_figures(engine, NOW)["review_cards_unplanned"] == 0


def test_a_flagged_window_whose_replay_will_be_retried_waits_and_is_counted(
    engine: Engine,
) -> None:
    """A failure with attempts left is no end: the card waits for the drafts the retry ends
    with, and the health figure counts the window meanwhile, as it does while it runs."""
    workspace(engine)
    state = synthesize(engine, ON)
    with engine.begin() as conn:
        assert window_states.reset_window(conn, state, now=NOW)
    assert review_card_figures(engine, NOW)["review_cards_unplanned"] == 1  # pending again
    _replay_fails(engine, state_of(engine), attempts=1)
    assert state_of(engine).status == "failed"

    assert plan_flagged_cards(engine, ON, now=NOW) == PlanPass()
    assert flagged(engine, state.id)
    figures = review_card_figures(engine, NOW + timedelta(minutes=1))
    assert figures["review_cards_unplanned"] == 1
    assert figures["review_cards_unplanned_oldest_seconds"] == 60.0
