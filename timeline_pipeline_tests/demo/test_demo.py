"""The main job end to end: `timeline-pipeline demo --json` on SQLite and PostgreSQL.

Everything real: the local Lark, signed and encrypted events with drops and duplicates, the
receiver over HTTP, reconciliation through lark-oapi, the window sensor and synthesis runs on a
Dagster instance. The assertions are about what a newcomer would check by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select

from timeline_pipeline import demo_data
from timeline_pipeline.cli.main import cli
from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.schema import workspace_timeline_evidence as ev


@pytest.mark.slow
def test_demo_builds_a_traceable_timeline_from_the_bundled_chat(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIMELINE_DATABASE_URL", db_url)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    result = CliRunner().invoke(cli, ["demo", "--json", "--dagster-home", str(tmp_path / "dh")])
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    run = out["run"]
    # stderr is the progress display only: no log records from Dagster or the servers.
    noise = [line for line in result.stderr.splitlines() if line and not line.startswith("[")]
    assert not noise, noise[:3]

    # Events were really dropped and duplicated, and reconciliation recovered every drop.
    assert run["push"]["dropped"] and run["push"]["duplicated"]
    assert run["windows_run"] >= 9
    assert run["windows_failed"] == 0
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            stored = conn.execute(
                select(func.count()).where(ev.c.workspace_id == out["workspace"])
            ).scalar_one()
            recalled = conn.execute(
                select(ev.c.content, ev.c.deleted).where(
                    ev.c.workspace_id == out["workspace"], ev.c.deleted.is_(True)
                )
            ).all()
    finally:
        engine.dispose()
    assert stored == len(demo_data.load_messages())  # one row each: none lost, none doubled
    assert recalled and all(content == "" for content, _ in recalled)

    # A timeline a reader can trust: several kinds of fact, each traceable to its messages.
    entries = out["entries"]
    assert len(entries) >= 10
    assert len({e["category"] for e in entries}) >= 5
    assert [e["occurred_at"] for e in entries] == sorted(e["occurred_at"] for e in entries)
    assert out["summary"]
    assert run["summaries_run"] == 1
    # Each summary line says its section's label once, whatever label the entry's author used
    # ("Root cause (draft): ..."), and no acknowledgement or bare agreement is drafted as a
    # decision (the demo chat's negative examples).
    for line in out["summary"].splitlines()[1:]:
        heading, _, text = line.partition(": ")
        assert not text.lower().startswith(heading.lower().rstrip("s")), line
    not_decisions = {
        negative["message_id"]
        for negative in demo_data.load_negative_examples()
        if negative["category"] == "decision"
    }
    for entry in entries:
        if entry["category"] == "decision" and entry["source"] == "ai":
            cited = {item["source_key"].rsplit("/", 1)[1] for item in entry["evidence"]}
            assert not cited <= not_decisions, entry["title"]
    for entry in entries:
        assert entry["evidence"], entry["title"]
        assert all(item["link"].startswith("https://") for item in entry["evidence"])

    # The commander confirmed a draft from its review card in the chat.
    review = run["review"]
    assert review["cards_posted"] >= 1
    assert review["confirmed_entry"] is not None
    assert review["card_redrawn"] is True
    confirmed = [e for e in entries if e["status"] == "confirmed" and e["source"] != "human"]
    assert [e["id"] for e in confirmed] == [review["confirmed_entry"]]

    # The commander pinned a message no entry cited from the chat (docs/pins.md): a human,
    # confirmed entry bound to that message, and one reply in its thread.
    pin = run["pin"]
    [pinned] = [e for e in entries if e["id"] == pin["entry_id"]]
    assert (pinned["source"], pinned["status"]) == ("human", "confirmed")
    [cited] = pinned["evidence"]
    assert cited["source_key"].endswith(f"/message/{pin['message_id']}")
    assert pin["reply_posted"] is True
    assert pin["reply"] == f"Pinned to the timeline of {out['workspace']} as finding"
