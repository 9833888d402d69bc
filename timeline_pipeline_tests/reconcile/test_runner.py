"""Reconciliation end to end: the real client against the local Lark, into the real database.

Each test states one behaviour of docs/design.md §3, §11, §1 and issue 4 and runs on SQLite and
PostgreSQL (the `engine` fixture).
"""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

import structlog.testing

from timeline_pipeline.domain.sync_states import CHECKPOINT_MARKER_KEY
from timeline_pipeline.ingest.eligibility import MANUAL, Skip
from timeline_pipeline.lark.simulator.server import ROUTE_LIST_MESSAGES, ROUTE_TOKEN
from timeline_pipeline.reconcile.planning import MessageKey, Mode
from timeline_pipeline.reconcile.report import THREAD_BUDGET_EXHAUSTED, FailureKind
from timeline_pipeline_tests.reconcile.conftest import MakeHarness
from timeline_pipeline_tests.reconcile.harness import (
    CHAT,
    NOW,
    PAGE,
    chat_listed,
    messages,
    reply_to,
)

H = timedelta(hours=1)
M = timedelta(minutes=1)
NOW_MS = MessageKey.of(NOW, "").create_time_ms
PRE_FLOOR_PAGES = 1
"""Every run also reads one page of the hour before the floor, for threads rooted there."""


def key_of(item: dict[str, Any]) -> MessageKey:
    return MessageKey(int(item["create_time"]), item["message_id"])


def listed_since(items: list[dict[str, Any]], since_ms: int) -> int:
    """How many chat-listed items a listing starting at `since_ms` (floored to seconds) sees."""
    floor_ms = since_ms // 1000 * 1000
    return sum(1 for i in chat_listed(items) if int(i["create_time"]) >= floor_ms)


# ----------------------------------------------------------------- backfill and incremental


def test_backfill_follows_every_page_and_moves_the_mark_to_the_newest_message(
    make_harness: MakeHarness,
) -> None:
    items = messages(120, start=NOW - 5 * H)
    h = make_harness(items)
    h.workspace(created_at=NOW - 6 * H)

    report = h.run()

    chat = report.chats[0]
    assert (chat.kind, chat.range_start, chat.range_end) == ("backfill", NOW - 6 * H, NOW)
    assert (chat.chat_pages, chat.messages, chat.upserts.inserted) == (3, 120, 120)
    assert h.page_requests == 3 + PRE_FLOOR_PAGES
    assert h.message_ids() == {i["message_id"] for i in items}
    state = h.checkpoint()
    assert state.status == "completed"
    assert state.last_seen_cursor == key_of(items[-1]).encode()
    assert state.last_seen_updated_at == NOW
    assert state.metadata[CHECKPOINT_MARKER_KEY] is None
    assert state.metadata["last_full_scan_at"] == NOW.isoformat()
    assert chat.lag_seconds == (NOW - key_of(items[-1]).created_at).total_seconds()


def test_the_next_run_rereads_only_the_overlap_and_finds_only_duplicates(
    make_harness: MakeHarness,
) -> None:
    items = messages(120, start=NOW - 5 * H)
    h = make_harness(items)
    h.workspace(created_at=NOW - 6 * H)
    h.run()
    h.sim.reset_counts()

    report = h.run(now=NOW + 5 * M)

    chat = report.chats[0]
    mark = key_of(items[-1])
    assert chat.kind == "incremental"
    assert chat.range_start == mark.created_at - 10 * M
    in_overlap = listed_since(items, mark.create_time_ms - 10 * 60_000)
    assert chat.messages == in_overlap
    assert h.page_requests - PRE_FLOOR_PAGES == math.ceil(in_overlap / PAGE) == 1
    assert (chat.upserts.inserted, chat.upserts.updated, chat.upserts.duplicate) == (
        0,
        0,
        in_overlap,
    )
    assert h.checkpoint().last_seen_cursor == mark.encode()


def test_new_messages_after_the_mark_are_collected_by_the_next_run(
    make_harness: MakeHarness,
) -> None:
    items = messages(60, start=NOW - 2 * H)
    h = make_harness(items)
    h.workspace()
    h.run()
    later = messages(30, start=NOW + M, seed=2)
    for item in later:
        h.sim.store.add_message(item)

    report = h.run(now=NOW + 30 * M)

    assert report.chats[0].upserts.inserted == 30
    assert h.message_ids() == {i["message_id"] for i in items + later}
    assert h.checkpoint().last_seen_cursor == key_of(later[-1]).encode()


# ----------------------------------------------------------------- threads


def test_thread_replies_hidden_from_the_chat_listing_are_collected(
    make_harness: MakeHarness,
) -> None:
    items = messages(60, start=NOW - 3 * H, thread_every=10)
    replies = [i for i in items if i.get("root_id")]
    h = make_harness(items)
    h.workspace()

    chat = h.run().chats[0]

    assert len(replies) == 6
    assert chat.threads_fetched == 6
    assert chat.upserts.inserted == 60
    assert h.message_ids() == {i["message_id"] for i in items}


def test_a_lost_reply_in_a_thread_last_active_before_the_range_is_collected_by_the_next_run(
    make_harness: MakeHarness,
) -> None:
    """Lark lists thread roots only, and this thread's last message is hours older than the
    incremental range: no evidence inside the range points at it. The reply's event was lost
    (the reply exists only in Lark's history), and the next incremental run still collects it,
    because every thread known within the ingestion lookback is listed."""
    items = messages(40, start=NOW - 4 * H, thread_every=10)
    items += messages(20, start=NOW - H, seed=2, thread_every=0)
    root = items[0]
    h = make_harness(items)
    h.workspace()
    h.run()
    # Stored in Lark only: its event never reached the receiver.
    h.sim.store.add_message(reply_to(root, "om_lost_reply", NOW_MS + 4 * 60_000))

    chat = h.run(now=NOW + 10 * M).chats[0]

    assert chat.range_start is not None
    assert chat.range_start == key_of(items[-1]).created_at - 10 * M  # only the overlap
    newest_in_thread = max(
        key_of(i).created_at for i in items if i.get("thread_id") == root["thread_id"]
    )
    assert newest_in_thread < chat.range_start - 2 * H  # the thread went quiet long before
    assert "om_lost_reply" in h.message_ids()
    assert (chat.threads_fetched, chat.threads_skipped) == (4, 0)
    assert h.checkpoint().last_seen_updated_at == NOW + 10 * M


def test_threads_beyond_the_budget_are_counted_not_fetched_and_hold_coverage(
    make_harness: MakeHarness,
) -> None:
    items = messages(50, start=NOW - 3 * H, thread_every=10)
    roots = [i for i in items if i.get("thread_id") and not i.get("root_id")]
    h = make_harness(items, reconcile_max_threads=2)
    h.workspace()

    chat = h.run().chats[0]

    assert (chat.threads_fetched, chat.threads_skipped) == (2, 3)
    assert chat.skipped[THREAD_BUDGET_EXHAUSTED] == 3
    assert h.evidence_count() == 50 - 3
    # Never listed, the skipped threads may hide replies from their roots on: coverage stops at
    # the oldest of them (the first two roots were served), not at the range end.
    assert h.checkpoint().last_seen_updated_at == key_of(roots[2]).created_at
    assert chat.covered_until == key_of(roots[2]).created_at


def test_the_thread_budget_rotates_so_every_thread_is_listed_within_ceil_threads_over_budget_runs(
    make_harness: MakeHarness,
) -> None:
    """Seven old threads, a budget of three: each run serves the threads listed longest ago, so
    a reply lost in any of them is collected within ceil(7 / 3) = 3 runs, and while a thread
    waits for its turn the checkpoint's coverage stops where that thread was last listed."""
    items = messages(70, start=NOW - 5 * H, thread_every=10)
    roots = [i for i in items if i.get("thread_id") and not i.get("root_id")]
    assert len(roots) == 7
    h = make_harness(items)
    h.workspace(created_at=NOW - 6 * H)
    h.run()  # the backfill, under the default budget, lists all seven
    h.settings = h.settings.model_copy(update={"reconcile_max_threads": 3})
    lost = {root["thread_id"]: f"om_lost_{n}" for n, root in enumerate(roots)}
    for n, root in enumerate(roots):
        h.sim.store.add_message(reply_to(root, lost[root["thread_id"]], NOW_MS + (n + 1) * 1000))

    served: list[set[str]] = []
    coverage = []
    for run in range(1, 4):
        at = NOW + run * 5 * M
        before = h.message_ids()
        chat = h.run(now=at).chats[0]
        served.append({t for t, m in lost.items() if m in h.message_ids() - before})
        coverage.append(h.checkpoint().last_seen_updated_at)
        assert chat.threads_fetched == 3
        assert chat.threads_skipped == 4

    assert set().union(*served) == set(lost)  # every thread within ceil(7 / 3) runs
    assert [len(s) for s in served] == [3, 3, 1]
    assert set(lost.values()) <= h.message_ids()
    # Runs 1 and 2 skipped threads last listed by the backfill (at NOW); run 3 skipped threads
    # listed by run 1 or later (the seventh thread got its turn, then two from run 1).
    assert coverage == [NOW, NOW, NOW + 5 * M]
    # The cursor still moves: the chat range stays an overlap-sized incremental read.
    assert h.checkpoint().last_seen_cursor is not None


def test_a_zero_budget_lists_no_thread_and_leaves_coverage_to_the_chat_listing(
    make_harness: MakeHarness,
) -> None:
    items = messages(50, start=NOW - 3 * H, thread_every=10)
    h = make_harness(items, reconcile_max_threads=0)
    h.workspace()

    chat = h.run().chats[0]

    assert (chat.threads_fetched, chat.threads_skipped, chat.thread_pages) == (0, 5, 0)
    assert h.checkpoint().last_seen_updated_at == NOW


# ----------------------------------------------------------------- failures and resuming


def test_a_failing_page_keeps_the_checkpoint_and_the_next_run_resumes_from_progress(
    make_harness: MakeHarness,
) -> None:
    first = messages(60, start=NOW - 5 * H)
    h = make_harness(first)
    h.workspace()
    h.run()
    before = h.checkpoint()
    later = messages(200, start=NOW - 30 * M, seed=3, interval_seconds=10)
    for item in later:
        h.sim.store.add_message(item)
    h.sim.faults.update(fail_page=3)

    failed = h.run(now=NOW + 40 * M).chats[0]

    assert failed.failure is FailureKind.LARK_API_ERROR
    assert "code=1000" in (failed.error or "")
    assert failed.chat_pages == 2
    after_failure = h.checkpoint()
    assert after_failure.last_seen_cursor == before.last_seen_cursor
    assert after_failure.last_seen_updated_at == before.last_seen_updated_at
    assert (after_failure.status, after_failure.attempt_count) == ("failed", 1)
    assert "lark_api_error" in (after_failure.last_error or "")
    progress = after_failure.metadata[CHECKPOINT_MARKER_KEY]
    assert progress["pages"] == 2
    committed = h.message_ids()
    assert {i["message_id"] for i in later[:40]} <= committed

    h.sim.faults.update(fail_page=None)
    h.sim.reset_counts()
    resumed = h.run(now=NOW + 45 * M).chats[0]

    resume_from = MessageKey.decode(progress["after"])
    assert resumed.resumed_from == resume_from.encode()
    assert resumed.range_start == resume_from.created_at - 10 * M
    reread = listed_since(first + later, resume_from.create_time_ms - 10 * 60_000)
    assert h.sim.request_counts[ROUTE_LIST_MESSAGES] == math.ceil(reread / PAGE) + PRE_FLOOR_PAGES
    assert h.message_ids() == {i["message_id"] for i in first + later}
    done = h.checkpoint()
    assert (done.status, done.last_seen_cursor) == ("completed", key_of(later[-1]).encode())
    assert done.metadata[CHECKPOINT_MARKER_KEY] is None


def test_a_backfill_interrupted_twice_still_resumes_and_loses_nothing(
    make_harness: MakeHarness,
) -> None:
    items = messages(400, start=NOW - 5 * H)
    h = make_harness(items)
    h.workspace()
    h.sim.faults.update(fail_page=3)
    first = h.run().chats[0]
    second = h.run(now=NOW + M).chats[0]
    assert first.failure is second.failure is FailureKind.LARK_API_ERROR
    assert second.resumed_from is not None
    marker = h.checkpoint().metadata[CHECKPOINT_MARKER_KEY]
    h.sim.faults.update(fail_page=None)

    third = h.run(now=NOW + 2 * M).chats[0]

    assert third.ok
    assert third.resumed_from == marker["after"] != second.resumed_from
    assert third.range_start == MessageKey.decode(marker["after"]).created_at - 10 * M
    assert h.message_ids() == {i["message_id"] for i in items}


def test_a_failed_first_backfill_leaves_no_mark(make_harness: MakeHarness) -> None:
    h = make_harness(messages(150, start=NOW - 5 * H))
    h.workspace()
    h.sim.faults.update(fail_page=2)

    chat = h.run().chats[0]

    state = h.checkpoint()
    assert chat.failure is FailureKind.LARK_API_ERROR
    assert (state.last_seen_cursor, state.last_seen_updated_at) == (None, None)
    assert h.evidence_count() == PAGE


def test_a_chat_the_bot_cannot_read_is_a_counted_failure_and_other_chats_still_run(
    make_harness: MakeHarness,
) -> None:
    readable = messages(30, start=NOW - 2 * H)
    hidden = messages(30, start=NOW - 2 * H, chat_id="oc_hidden", seed=5)
    h = make_harness(readable + hidden)
    h.workspace(chats=(CHAT, "oc_hidden"))
    h.sim.faults.update(permission_denied_chats={"oc_hidden"})

    report = h.run()

    by_chat = {chat.chat_id: chat for chat in report.chats}
    assert by_chat[CHAT].ok and by_chat[CHAT].upserts.inserted == 30
    denied = by_chat["oc_hidden"]
    assert denied.failure is FailureKind.PERMISSION_DENIED
    assert "code=230002" in (denied.error or "")
    assert report.totals()["failures_by_kind"] == {"permission_denied": 1}
    state = h.checkpoint(chat_id="oc_hidden")
    assert (state.status, state.last_seen_cursor, state.attempt_count) == ("failed", None, 1)
    assert "oc_hidden" in report.failure_summary()


def test_wrong_app_credentials_are_a_permission_failure(make_harness: MakeHarness) -> None:
    h = make_harness(messages(10, start=NOW - H))
    h.workspace()

    chat = h.run(reconciler=h.reconciler(app_secret="wrong-secret")).chats[0]

    assert chat.failure is FailureKind.PERMISSION_DENIED
    assert "code=10014" in (chat.error or "")
    assert h.evidence_count() == 0


def test_an_expired_token_is_refreshed_without_failing_the_run(make_harness: MakeHarness) -> None:
    h = make_harness(messages(30, start=NOW - H))
    h.workspace()
    reconciler = h.reconciler()
    h.run(reconciler=reconciler)
    h.sim.invalidate_tokens()
    h.sim.store.add_message(messages(1, start=NOW + M, seed=8)[0])

    chat = h.run(now=NOW + 5 * M, reconciler=reconciler).chats[0]

    assert chat.ok and chat.upserts.inserted == 1
    assert h.sim.request_counts[ROUTE_TOKEN] == 2


def test_a_malformed_item_is_counted_and_the_rest_of_its_page_is_stored(
    make_harness: MakeHarness,
) -> None:
    items = messages(70, start=NOW - 3 * H)
    h = make_harness(items)
    h.workspace()
    h.sim.faults.update(malformed_item_page=1)

    report = h.run()

    chat = report.chats[0]
    assert chat.ok and chat.checkpoint_advanced
    assert chat.rejected == {"missing_sender": 1}
    assert chat.upserts.inserted == 70
    assert report.skipped()["malformed:missing_sender"] == 1


def test_a_message_older_than_the_workspace_is_skipped_and_counted(
    make_harness: MakeHarness,
) -> None:
    """Lark filters by whole seconds, so the listing can return a message created in the same
    second before the workspace existed; the write path refuses it and says why."""
    created = NOW - 2 * H + timedelta(milliseconds=600)
    early = messages(1, start=NOW - 2 * H + timedelta(milliseconds=100), seed=4)
    later = messages(5, start=NOW - H, seed=6)
    h = make_harness(early + later)
    h.workspace(created_at=created)

    chat = h.run().chats[0]

    assert chat.skipped[Skip.BEFORE_WORKSPACE] == 1
    assert h.message_ids() == {i["message_id"] for i in later}


# ----------------------------------------------------------------- edits and recalls


def test_refresh_updates_edits_and_recalls_without_reopening_a_completed_window(
    make_harness: MakeHarness,
) -> None:
    from timeline_pipeline.store import sync_states, window_states

    items = messages(60, start=NOW - 3 * H)
    edited, recalled = items[3], items[4]
    h = make_harness(items)
    h.workspace()
    h.run()
    window_start = key_of(edited).created_at.replace(second=0, microsecond=0)
    window_start -= timedelta(minutes=window_start.minute % 10)
    with h.engine.begin() as conn:
        state = window_states.create_window_if_evidence(
            conn,
            workspace_id="inc-1",
            chat_id=CHAT,
            window_start=window_start,
            window_end=window_start + 10 * M,
        )
        assert state is not None
        claimed = window_states.claim_window(
            conn, state, owner="test", max_attempts=3, stale_timeout=15 * M
        )
        assert claimed is not None
        window = window_states.finish_window(
            conn, claimed, status="completed", aggregate_hash="h", metadata={}
        )
        assert window is not None
    h.sim.store.edit_message(edited["message_id"], {"text": "root cause: expired TLS cert"}, at=NOW)
    h.sim.store.recall_message(recalled["message_id"], at=NOW)

    incremental = h.run(now=NOW + 5 * M).chats[0]
    assert incremental.upserts.updated == 0  # both are older than the overlap

    refreshed = h.run(mode=Mode.REFRESH, now=NOW + 6 * M).chats[0]

    assert refreshed.kind == "refresh"
    assert refreshed.upserts.updated == 2
    rows = {row.source_key.rsplit("/", 1)[1]: row for row in h.evidence()}
    assert rows[edited["message_id"]].content == "root cause: expired TLS cert"
    gone = rows[recalled["message_id"]]
    assert (gone.deleted, gone.content, gone.ai_eligible) == (True, "", False)
    assert gone.metadata["deleted"] is True
    with h.engine.connect() as conn:
        after = sync_states.get(conn, window.id)
    assert after is not None
    assert (after.status, after.revision) == ("completed", window.revision)


def test_a_message_read_from_history_after_its_recall_arrived_is_stored_redacted(
    make_harness: MakeHarness,
) -> None:
    """The recall event reached the receiver before anything of the message (its event was
    lost); the history listing still shows the message. Reconciliation stores it redacted, as
    if the recall had come after it (docs/design.md §4, "A recall before its message")."""
    from timeline_pipeline.ingest import recall

    items = messages(6, start=NOW - H)
    early = items[2]
    h = make_harness(items)
    h.workspace()
    with h.engine.begin() as conn:
        counts = recall.redact_everywhere(
            conn,
            ["inc-1"],
            chat_id=CHAT,
            message_id=early["message_id"],
            recalled_at=NOW - 10 * M,
            now=NOW - 10 * M,
        )
    assert (counts[recall.NOT_FOUND], counts[recall.TOMBSTONED]) == (1, 1)

    report = h.run().chats[0]

    assert report.upserts.inserted == 6
    rows = {row.source_key.rsplit("/", 1)[1]: row for row in h.evidence()}
    gone = rows[early["message_id"]]
    assert (gone.deleted, gone.content, gone.ai_eligible) == (True, "", False)
    assert gone.metadata["recalled_at"] == (NOW - 10 * M).isoformat()
    assert gone.occurred_at == key_of(early).created_at
    kept = [row for key, row in rows.items() if key != early["message_id"]]
    assert all(row.content and not row.deleted for row in kept)


# ----------------------------------------------------------------- scope


def test_one_chat_bound_to_two_workspaces_is_stored_once_per_workspace_within_each_lifetime(
    make_harness: MakeHarness,
) -> None:
    items = messages(120, start=NOW - 5 * H, interval_seconds=120)
    h = make_harness(items)
    h.workspace("inc-a", created_at=NOW - 6 * H)
    h.workspace("inc-b", created_at=NOW - 2 * H)

    report = h.run()

    assert {(c.workspace_id, c.ok) for c in report.chats} == {("inc-a", True), ("inc-b", True)}
    assert h.message_ids("inc-a") == {i["message_id"] for i in items}
    newer = {i["message_id"] for i in items if key_of(i).created_at >= NOW - 2 * H}
    assert h.message_ids("inc-b") == newer
    assert h.checkpoint("inc-a").last_seen_cursor == h.checkpoint("inc-b").last_seen_cursor


def test_automatic_scans_stop_when_a_workspace_ages_out_even_with_work_pending(
    make_harness: MakeHarness,
) -> None:
    items = messages(150, start=NOW - 71 * H + M, interval_seconds=1200)
    h = make_harness(items)
    h.workspace(created_at=NOW - 71 * H)
    h.sim.faults.update(fail_page=2)
    assert h.run().chats[0].failure is FailureKind.LARK_API_ERROR
    pending = h.checkpoint().metadata[CHECKPOINT_MARKER_KEY]
    assert pending["pages"] == 1
    h.sim.faults.update(fail_page=None)
    h.sim.reset_counts()

    aged = h.run(now=NOW + 2 * H)

    assert aged.chats == []
    assert aged.workspaces_skipped == {Skip.WORKSPACE_AGED_OUT: 1}
    assert h.page_requests == 0

    manual = h.run([h.target()], scope=MANUAL, now=NOW + 2 * H).chats[0]

    floor = NOW + 2 * H - 72 * H
    resume_from = MessageKey.decode(pending["after"])
    assert manual.ok
    assert manual.range_start == max(floor, resume_from.created_at - 10 * M)
    assert manual.skipped == {}
    assert {i["message_id"] for i in items if key_of(i).created_at >= floor} <= h.message_ids()


def test_a_manual_refresh_reconciles_a_workspace_automatic_scans_skip(
    make_harness: MakeHarness,
) -> None:
    items = messages(40, start=NOW - 2 * H)
    h = make_harness(items)
    h.workspace(status="recovered")

    automatic = h.run()
    assert automatic.chats == []  # only firing workspaces are even loaded by a scan
    assert h.page_requests == 0

    manual = h.run([h.target()], scope=MANUAL)

    assert manual.chats[0].ok and manual.chats[0].upserts.inserted == 40
    assert h.message_ids() == {i["message_id"] for i in items}


def test_each_chat_run_logs_one_structured_event_keyed_by_its_ids(
    make_harness: MakeHarness,
) -> None:
    readable = messages(30, start=NOW - 2 * H)
    hidden = messages(30, start=NOW - 2 * H, chat_id="oc_hidden", seed=5)
    h = make_harness(readable + hidden)
    h.workspace(chats=(CHAT, "oc_hidden"))
    h.sim.faults.update(permission_denied_chats={"oc_hidden"})

    with structlog.testing.capture_logs() as logged:
        h.run()

    finished = {e["chat_id"]: e for e in logged if e["event"] == "reconcile.chat.finished"}
    assert set(finished) == {CHAT, "oc_hidden"}
    assert finished[CHAT]["messages"] == 30 and finished[CHAT]["failure"] is None
    assert finished["oc_hidden"]["failure"] == FailureKind.PERMISSION_DENIED
    failed = [e for e in logged if e["event"] == "reconcile.chat.failed"]
    assert [(e["chat_id"], e["kind"]) for e in failed] == [("oc_hidden", "permission_denied")]
    assert all("workspace_id" in e for e in [*finished.values(), *failed])
    bodies = [item["body"]["content"] for item in readable[:5]]
    assert not any(body in repr(logged) for body in bodies)


def test_a_thread_rooted_before_the_workspace_is_listed_and_its_replies_collected(
    make_harness: MakeHarness,
) -> None:
    """The alert that opened the incident is posted 5 minutes before the workspace is created;
    an hour later five replies in its thread lose their events. The root is out of scope, but
    its thread is known from the chat's messages just before the floor, so the backfill lists
    it and collects the replies; the root itself is not stored."""
    created = NOW - 3 * H
    root = {
        **messages(1, start=created - timedelta(minutes=5), seed=5)[0],
        "message_id": "om_alert_root",
        "thread_id": "omt_alert",
    }
    chatter = messages(10, start=created + timedelta(minutes=1), seed=6)
    h = make_harness([root, *chatter])
    base = MessageKey.of(created + H, "").create_time_ms
    for n in range(5):
        h.sim.store.add_message(reply_to(root, f"om_lost_{n}", base + n * 60_000))
    h.workspace(created_at=created)

    backfill = h.run().chats[0]
    assert backfill.ok and backfill.threads_fetched == 1
    collected = h.message_ids()
    assert {f"om_lost_{n}" for n in range(5)} <= collected
    assert "om_alert_root" not in collected  # before the workspace: never evidence
    # An incremental run afterwards keeps the thread known and adds nothing twice.
    later = h.run(now=NOW + 10 * timedelta(minutes=1)).chats[0]
    assert later.ok and later.upserts.inserted == 0
    assert h.evidence_count() == 15


def test_a_thread_rooted_before_the_floor_competes_for_the_budget_like_any_other(
    make_harness: MakeHarness,
) -> None:
    """Known from the floor on and never listed, it is served first under a budget of one, and
    once served the coverage reaches the end of the range."""
    created = NOW - 3 * H
    root = {
        **messages(1, start=created - timedelta(minutes=5), seed=5)[0],
        "message_id": "om_alert_root",
        "thread_id": "omt_alert",
    }
    h = make_harness([root, *messages(10, start=created + timedelta(minutes=1), seed=6)])
    lost_at = MessageKey.of(created + H, "").create_time_ms
    h.sim.store.add_message(reply_to(root, "om_lost", lost_at))
    h.workspace(created_at=created)
    h.settings = h.settings.model_copy(update={"reconcile_max_threads": 1})
    chat = h.run().chats[0]
    assert chat.threads_fetched == 1 and "om_lost" in h.message_ids()
    assert h.checkpoint().last_seen_updated_at == NOW
