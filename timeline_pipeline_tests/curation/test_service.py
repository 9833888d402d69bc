"""Curation against a real database (SQLite and PostgreSQL): what a curator decides survives
automation, and a refused request changes nothing (docs/design.md §7, §11)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, select

from timeline_pipeline.curation.errors import EntryNotFound
from timeline_pipeline.curation.rules import Action
from timeline_pipeline.curation.service import CurationService, NewEntry
from timeline_pipeline.db.schema import audit_events
from timeline_pipeline.domain.errors import InvalidInput, InvalidTransition, Refused, StaleRevision
from timeline_pipeline.store.workspaces import WorkspaceNotFound
from timeline_pipeline_tests.curation.support import (
    IMPACT,
    RECOVERED,
    ROLLBACK,
    ROOT_CAUSE,
    W1,
    all_entries,
    entry_titled,
    incident,
    say,
    snapshot,
    synthesize,
)


def test_curated_entries_survive_a_rerun_of_their_window(engine: Engine) -> None:
    incident(engine)
    evidence = say(engine, W1, [IMPACT, ROLLBACK, ROOT_CAUSE, RECOVERED])
    synthesize(engine, W1)
    curation = CurationService(engine)
    impact = entry_titled(engine, "checkout latency")
    rollback = entry_titled(engine, "rolled back")
    root_cause = entry_titled(engine, "root cause")
    edited = curation.edit(
        "inc-1",
        impact.id,
        {"title": "EU checkout p99 above 2s", "category": "impact"},
        expected_revision=impact.revision,
        actor="alice",
    )
    assert edited.human_edited and edited.revision == impact.revision + 1
    assert edited.evidence_ids == list(impact.evidence_ids)  # the bindings are kept
    confirmed = curation.transition(
        "inc-1", rollback.id, Action.CONFIRM, expected_revision=rollback.revision, actor="alice"
    )
    hidden = curation.transition(
        "inc-1", root_cause.id, Action.HIDE, expected_revision=root_cause.revision, actor="alice"
    )
    added = curation.add(
        "inc-1",
        NewEntry(W1 + timedelta(minutes=3), "Paged the DB on-call", "decision", None, evidence[:1]),
        actor="alice",
    )
    before = {e.id: e for e in all_entries(engine)}

    # An operator replays the window: synthesis proposes the same drafts again.
    report = synthesize(engine, W1, replay=True)
    assert report.status == "completed"
    after = {e.id: e for e in all_entries(engine)}
    assert set(after) == set(before)  # no duplicate of a curated entry
    assert (after[impact.id].title, after[impact.id].category) == (
        "EU checkout p99 above 2s",
        "impact",
    )
    assert after[impact.id].human_edited
    assert after[rollback.id].status == "confirmed" and after[rollback.id].title == confirmed.title
    assert after[root_cause.id].status == "hidden" and after[root_cause.id].title == hidden.title
    assert after[added.id] == before[added.id]
    assert (after[added.id].source, after[added.id].status) == ("human", "confirmed")
    # Every curated entry still leads back to its evidence.
    assert after[impact.id].evidence_ids == impact.evidence_ids
    assert after[added.id].evidence_ids == (evidence[0],)


def test_each_change_is_audited_by_ids_and_revisions_never_text(engine: Engine) -> None:
    incident(engine)
    say(engine, W1, [ROLLBACK])
    synthesize(engine, W1)
    entry = entry_titled(engine, "rolled back")
    curation = CurationService(engine)
    curation.transition("inc-1", entry.id, Action.HIDE, expected_revision=None, actor="bob")
    curation.transition("inc-1", entry.id, Action.RESTORE, expected_revision=None, actor="bob")
    curation.write_summary(
        "inc-1", "secret words", expected_revision=None, check=False, actor="bob"
    )
    with engine.connect() as conn:
        events = conn.execute(select(audit_events).order_by(audit_events.c.id)).all()
    assert [(e.actor, e.action, e.subject_id) for e in events] == [
        ("bob", "entry.hide", str(entry.id)),
        ("bob", "entry.restore", str(entry.id)),
        ("bob", "summary.write", "inc-1"),
    ]
    assert events[1].details_json == {"revision": 3, "status": "draft", "from": "hidden"}
    assert all("secret" not in str(e.details_json) for e in events)


REFUSALS: list[tuple[str, Any, type[Exception], str]] = [
    (
        "stale revision",
        lambda c, e: c.transition("inc-1", e.id, Action.CONFIRM, expected_revision=1, actor="t"),
        StaleRevision,
        "revision 3, not 1",
    ),
    (
        "invalid transition",
        lambda c, e: c.transition("inc-1", e.id, Action.RESTORE, expected_revision=3, actor="t"),
        InvalidTransition,
        "cannot restore an entry that is draft",
    ),
    (
        "unknown entry",
        lambda c, e: c.transition("inc-1", 10**9, Action.HIDE, expected_revision=None, actor="t"),
        EntryNotFound,
        "does not exist",
    ),
    (
        "another workspace's entry",
        lambda c, e: c.transition("inc-2", e.id, Action.HIDE, expected_revision=None, actor="t"),
        EntryNotFound,
        "does not exist in workspace 'inc-2'",
    ),
    (
        "unknown workspace",
        lambda c, e: c.add("nope", NewEntry(W1, "x", "impact"), actor="t"),
        WorkspaceNotFound,
        "does not exist",
    ),
    (
        "oversized title",
        lambda c, e: c.edit("inc-1", e.id, {"title": "x" * 513}, expected_revision=3, actor="t"),
        InvalidInput,
        "at most 512",
    ),
    (
        "NUL in detail",
        lambda c, e: c.edit("inc-1", e.id, {"detail": "a\x00b"}, expected_revision=3, actor="t"),
        InvalidInput,
        "control characters",
    ),
    (
        "an uneditable field",
        lambda c, e: c.edit("inc-1", e.id, {"status": "confirmed"}, expected_revision=3, actor="t"),
        InvalidInput,
        "cannot edit status",
    ),
    (
        "evidence of another workspace",
        lambda c, e: c.add("inc-2", NewEntry(W1, "x", "impact", None, e.evidence_ids), actor="t"),
        InvalidInput,
        "not evidence of workspace 'inc-2'",
    ),
    (
        "a summary over a revision the writer never saw",
        lambda c, e: c.write_summary("inc-1", "x", expected_revision=7, check=True, actor="t"),
        StaleRevision,
        "no summary yet",
    ),
]


def test_a_refused_request_changes_nothing(engine: Engine) -> None:
    incident(engine)
    incident(engine, "inc-2", "oc_other")
    say(engine, W1, [ROLLBACK])
    synthesize(engine, W1)
    curation = CurationService(engine)
    entry = entry_titled(engine, "rolled back")
    curation.transition("inc-1", entry.id, Action.HIDE, expected_revision=1, actor="t")
    curation.transition("inc-1", entry.id, Action.RESTORE, expected_revision=2, actor="t")
    entry = entry_titled(engine, "rolled back")
    assert (entry.status, entry.revision) == ("draft", 3)
    for what, request, error, message in REFUSALS:
        before = snapshot(engine)
        with pytest.raises(error, match=message):
            request(curation, entry)
        assert snapshot(engine) == before, what
        assert issubclass(error, Refused | WorkspaceNotFound)
