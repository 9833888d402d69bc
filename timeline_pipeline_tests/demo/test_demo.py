"""The main job end to end: `timeline-pipeline demo --json` on SQLite and PostgreSQL.

Everything real: the local Lark, signed and encrypted events with drops and duplicates, the
receiver over HTTP, reconciliation through lark-oapi, the window sensor and synthesis runs on a
Dagster instance, and at the end the incident report written into a Lark document of the local
Lark (docs/report.md). The assertions are about what a newcomer would check by hand.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select

from timeline_pipeline import demo_data
from timeline_pipeline.cli.main import cli
from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.schema import workspace_timeline_evidence as ev
from timeline_pipeline.lark.simulator.documents import DEFAULT_DOC_BASE_URL
from timeline_pipeline.report.milestones import MilestoneName
from timeline_pipeline.report.render import MILESTONE_LABELS
from timeline_pipeline.store import status_changes, workspaces


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
            workspace = workspaces.require(conn, out["workspace"])
            recovered_at = status_changes.last_change_to(conn, out["workspace"], "recovered")
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

    # The incident closed: the commander set the workspace recovered, and its report was built
    # (docs/report.md), written into one Lark document of the local Lark and linked once in the
    # chat.
    assert workspace.status == "recovered"
    assert recovered_at is not None
    report = out["report"]
    assert report["revision"] == 1
    assert report["status"] == "recovered"
    url = report["document_url"]
    assert url.startswith(f"{DEFAULT_DOC_BASE_URL}/docx/")
    assert report["document_revision"] == report["revision"]
    published = run["report"]
    assert published["revision"] == report["revision"]
    assert published["document_created"] is True
    assert published["documents_in_folder"] == 1
    assert url == f"{DEFAULT_DOC_BASE_URL}/docx/{published['document_id']}"
    assert published["replies"] == 1
    assert published["reply"] == report["reply"] == f"The incident report is ready: {url}"

    # Its milestones: every one found in this chat, in the order an incident passes them,
    # resolved by a recovery entry; the durations in whole seconds from the start.
    milestones = report["milestones"]
    moments = [
        datetime.fromisoformat(milestones[name.value]["at"].replace("Z", "+00:00"))
        for name in MilestoneName
    ]
    started, detected, mitigated, resolved = moments
    assert started <= mitigated <= resolved
    by_id = {entry["id"]: entry for entry in entries}
    assert by_id[milestones["resolved"]["entry_id"]]["category"] == "recovery"
    assert by_id[milestones["mitigated"]["entry_id"]]["category"] == "mitigation"
    durations = report["durations"]
    assert durations["time_to_resolve"] == int((resolved - started).total_seconds())
    assert durations["time_to_mitigate"] == int((mitigated - started).total_seconds())
    assert durations["time_to_detect"] == max(0, int((detected - started).total_seconds()))
    counts = report["counts"]
    assert counts["confirmed"] == 2  # the confirmed draft and the pin
    assert counts["drafts"] == sum(1 for entry in entries if entry["status"] == "draft")
    assert report["sections"]["timeline"] == len(entries)
    assert report["markdown"].startswith(f"# Incident report: {workspace.title}")

    # The document, read back from Lark as a reader sees it: the milestones with their times,
    # and the entries, the commander's confirmed one among them.
    text = published["document_text"]
    assert f"[{out['workspace']}]" in text.splitlines()[0]
    for name, moment in zip(MilestoneName, moments, strict=True):
        assert MILESTONE_LABELS[name] in text
        assert f"{moment:%Y-%m-%d %H:%M} UTC" in text
    assert by_id[review["confirmed_entry"]]["title"] in text
    assert by_id[pin["entry_id"]]["title"] in text
