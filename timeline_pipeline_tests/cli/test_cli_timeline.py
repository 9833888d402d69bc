"""`timeline-pipeline timeline ...`: the table, the JSON, the Markdown export and curation from
the terminal, on a real database (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import Engine

from timeline_pipeline.cli.main import cli
from timeline_pipeline.curation.links import LARK_APPLINK_BASE
from timeline_pipeline_tests.curation.support import (
    IMPACT,
    ROLLBACK,
    ROOT_CAUSE,
    W1,
    entry_titled,
    incident,
    say,
    snapshot,
    synthesize,
)


@pytest.fixture
def run(db_url: str, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("TIMELINE_DATABASE_URL", db_url)
    monkeypatch.setenv("COLUMNS", "120")
    return CliRunner()


def invoke(runner: CliRunner, *args: str) -> Result:
    return runner.invoke(cli, list(args), catch_exceptions=False)


def test_show_prints_a_table_then_the_summary_and_json_with_links(
    run: CliRunner, engine: Engine
) -> None:
    incident(engine)
    evidence = say(engine, W1, [IMPACT, ROLLBACK, ROOT_CAUSE])
    synthesize(engine, W1)
    rollback = entry_titled(engine, "rolled back")
    root_cause = str(entry_titled(engine, "root").id)
    assert invoke(run, "timeline", "hide", "inc-1", root_cause).exit_code == 0

    table = invoke(run, "timeline", "show", "inc-1")
    assert table.exit_code == 0
    header, first, second, *rest = table.stdout.splitlines()
    assert header.split() == [
        "ID",
        "TIME",
        "(UTC)",
        "STATUS",
        "CATEGORY",
        "SOURCE",
        "REV",
        "EV",
        "TITLE",
    ]
    assert "Checkout latency is above 2s" in first
    moment = rollback.occurred_at
    assert second.split() == [
        str(rollback.id),
        moment.strftime("%Y-%m-%d"),
        moment.strftime("%H:%M"),
        "draft",
        "mitigation",
        rollback.source,
        "1",  # the revision to pass to --revision
        "1",  # one supporting message
        *rollback.title.split(),
    ]
    assert rest[:2] == ["", "Summary: none yet."]
    assert "Summary: none yet." in table.stdout
    assert "root cause" not in table.stdout.lower()  # hidden entries are not shown by default

    hidden = json.loads(
        invoke(run, "timeline", "show", "inc-1", "--status", "hidden", "--json").stdout
    )
    (only,) = hidden["entries"]
    assert only["status"] == "hidden" and only["evidence_ids"] == [evidence[2]]
    (link,) = only["links"]
    assert link["url"].startswith(LARK_APPLINK_BASE + "?openChatId=oc_chat&openMessageId=")


def test_curation_from_the_terminal_and_the_postmortem_export(
    run: CliRunner, engine: Engine, tmp_path: Path
) -> None:
    incident(engine)
    evidence = say(engine, W1, [IMPACT, ROLLBACK])
    synthesize(engine, W1)
    impact = entry_titled(engine, "checkout")
    rollback = entry_titled(engine, "rolled back")

    confirmed = invoke(
        run, "timeline", "confirm", "inc-1", str(impact.id), "--revision", "1", "--json"
    )
    assert json.loads(confirmed.stdout)["status"] == "confirmed"
    edited = invoke(
        run, "timeline", "edit", "inc-1", str(rollback.id),
        "--title", "Rolled back payments-api to v41", "--category", "mitigation",
    )  # fmt: skip
    assert edited.stdout.startswith(f"edited entry {rollback.id} (draft, revision 2)")
    added = invoke(
        run, "timeline", "add", "inc-1", "--title", "Declared a SEV-2", "--category", "decision",
        "--occurred-at", (W1.isoformat()), "--evidence", str(evidence[0]), "--json",
    )  # fmt: skip
    assert json.loads(added.stdout)["source"] == "human"
    summary_file = tmp_path / "summary.md"
    summary_file.write_text("EU checkout was slow for 30 minutes.\nRolled back to v41.\n")
    written = invoke(run, "timeline", "summary", "inc-1", "--file", str(summary_file))
    assert written.stdout.strip() == "summary of inc-1 written (revision 1)"

    out = tmp_path / "postmortem.md"
    exported = invoke(
        run, "timeline", "export", "inc-1", "--format", "markdown", "--output", str(out)
    )
    assert exported.exit_code == 0 and "wrote 3 entries" in exported.stderr
    document = out.read_text()
    rows = [line for line in document.splitlines() if line.startswith("| 20")]
    assert [row.split(" | ")[1] for row in rows] == ["Decision", "Finding", "Mitigation"]
    assert "**Declared a SEV-2**" in rows[0] and "added by curator" in rows[0]
    assert "draft, edited" in rows[2] and LARK_APPLINK_BASE in rows[1]
    assert "EU checkout was slow for 30 minutes." in document
    assert document.index("## Summary") < document.index("## Timeline")
    to_stdout = invoke(run, "timeline", "export", "inc-1")
    assert to_stdout.stdout.startswith("# Incident timeline: inc-1")


def test_a_refused_command_is_one_line_and_changes_nothing(run: CliRunner, engine: Engine) -> None:
    incident(engine)
    say(engine, W1, [ROLLBACK])
    synthesize(engine, W1)
    entry = str(entry_titled(engine, "rolled back").id)
    before = snapshot(engine)
    refusals = [
        (["timeline", "confirm", "inc-1", entry, "--revision", "9"], "revision 1, not 9"),
        (["timeline", "restore", "inc-1", entry], "cannot restore an entry that is draft"),
        (["timeline", "hide", "inc-1", "424242"], "entry 424242 does not exist"),
        (["timeline", "edit", "inc-1", entry, "--title", "x" * 600], "at most 512"),
        (["timeline", "show", "nope"], "workspace 'nope' does not exist"),
        (["timeline", "summary", "inc-1", "--content", "x", "--revision", "3"], "no summary yet"),
    ]
    for args, message in refusals:
        result = run.invoke(cli, args)
        assert result.exit_code == 1, args
        assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr
        assert snapshot(engine) == before, args
    usage = run.invoke(cli, ["timeline", "edit", "inc-1", entry])
    assert usage.exit_code == 2 and "give at least one of" in usage.stderr
