"""`timeline-pipeline lifecycle ...` as docs/cli.md spells it: JSON shapes, one-line refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from timeline_pipeline.cli.main import cli
from timeline_pipeline.db.engine import make_engine
from timeline_pipeline_tests.lifecycle.support import AS_OF, EVIDENCE, OLD, evidence, workspace

AT = ["--as-of", AS_OF.isoformat()]


@pytest.fixture
def run(db_url: str, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("TIMELINE_DATABASE_URL", db_url)
    engine = make_engine(db_url)
    workspace(engine, "inc-1")
    evidence(engine, "inc-1", [OLD] * 3)
    engine.dispose()
    runner = CliRunner()

    def invoke(*args: str) -> Result:
        return runner.invoke(cli, ["lifecycle", *args])

    return invoke


def refused(result: Result, code: int = 1) -> str:
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "Traceback" not in result.output
    return lines[0]


def test_registry_check_passes_on_a_migrated_database(run) -> None:  # type: ignore[no-untyped-def]
    result = run("registry-check", "--json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["valid"] is True
    assert data["descriptors"] >= 7


def test_hold_create_list_and_release_round_trip_with_json(run) -> None:  # type: ignore[no-untyped-def]
    made = run(
        "hold",
        "create",
        "--workspace",
        "inc-1",
        "--reason",
        "preservation notice 9",
        "--idempotency-key",
        "k1",
        "--json",
    )
    assert made.exit_code == 0, made.output
    hold_id = json.loads(made.stdout)["id"]
    dry = json.loads(
        run("dry-run", "--workspace", "inc-1", "--descriptor", EVIDENCE, *AT, "--json").stdout
    )
    (d,) = dry["descriptors"]
    assert (d["eligible"], d["held"], d["purgeable"]) == (3, 3, 0)
    assert d["workspaces"][0]["holds"] == [hold_id]
    short = run("hold", "release", "--hold", hold_id, "--reason", "ok", "--idempotency-key", "r")
    assert "at least 10 characters" in refused(short)
    no_key = run("hold", "release", "--hold", hold_id, "--reason", "matter closed by counsel")
    assert "idempotency key is required" in refused(no_key)
    ok = run(
        "hold",
        "release",
        "--hold",
        hold_id,
        "--reason",
        "matter closed by counsel",
        "--idempotency-key",
        "r1",
    )
    assert ok.exit_code == 0, ok.output
    listed = json.loads(run("hold", "list", "--json").stdout)["holds"]
    assert [(h["id"], h["status"]) for h in listed] == [(hold_id, "released")]


def test_dry_run_json_gives_eligible_held_and_purgeable_per_descriptor_and_workspace(
    run,  # type: ignore[no-untyped-def]
) -> None:
    data = json.loads(run("dry-run", *AT, "--json").stdout)
    evidence_report = next(d for d in data["descriptors"] if d["descriptor"] == EVIDENCE)
    (ws,) = evidence_report["workspaces"]
    assert {k: ws[k] for k in ("workspace", "eligible", "held", "purgeable")} == {
        "workspace": "inc-1",
        "eligible": 3,
        "held": 0,
        "purgeable": 3,
    }


def test_an_override_outside_the_bounds_is_refused_in_one_line(run) -> None:  # type: ignore[no-untyped-def]
    line = refused(run("dry-run", "--descriptor", EVIDENCE, "--retention-days-override", "3"))
    assert line == (
        "error: --retention-days-override 3 is below the minimum retention_min_days=7 of "
        f"{EVIDENCE}"
    )
    assert "unknown key" in refused(run("dry-run", "--descriptor", "nope.nope"))
    assert "--as-of" in refused(run("dry-run", "--as-of", "yesterday"), code=2)


def test_run_purges_and_archives_and_a_held_workspace_is_refused(
    run,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    run(
        "hold",
        "create",
        "--workspace",
        "inc-1",
        "--descriptor",
        EVIDENCE,
        "--reason",
        "preservation notice 9",
        "--idempotency-key",
        "k1",
    )
    held = run("run", "--workspace", "inc-1", *AT)
    assert "under legal hold" in refused(held)
    hold_id = json.loads(run("hold", "list", "--json").stdout)["holds"][0]["id"]
    run(
        "hold",
        "release",
        "--hold",
        hold_id,
        "--reason",
        "matter closed by counsel",
        "--idempotency-key",
        "r1",
    )
    done = run("run", "--workspace", "inc-1", *AT, "--archive-dir", str(tmp_path), "--json")
    assert done.exit_code == 0, done.output
    outcome = json.loads(done.stdout)
    assert (outcome["status"], outcome["purged"], outcome["archived"]) == ("succeeded", 3, 3)
    verified = run("verify-archive", "--manifest", outcome["manifest"], "--json")
    assert json.loads(verified.stdout)["rows"] == 3


def test_a_hold_on_a_table_of_no_workspace_is_refused_with_one_line(run) -> None:  # type: ignore[no-untyped-def]
    line = refused(
        run(
            "hold",
            "create",
            "--workspace",
            "inc-1",
            "--descriptor",
            "retired_partitions.lifecycle_retired_partitions",
            "--reason",
            "preservation notice 22",
            "--idempotency-key",
            "n-22",
        )
    )
    assert "no workspace column" in line
    listed = run("hold", "list", "--json")
    assert json.loads(listed.output)["holds"] == []


def test_interaction_retention_sets_the_dry_run_s_retention_of_review_cards(
    run, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("TIMELINE_LARK_INTERACTION_RETENTION", "240h")
    result = run(
        "dry-run", "--descriptor", "interaction_requests.interaction_requests", *AT, "--json"
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["descriptors"][0]["retention_days"] == 10
    monkeypatch.setenv("TIMELINE_LARK_INTERACTION_RETENTION", "9600h")
    line = refused(run("dry-run", *AT, "--json"))
    assert "default_retention_days" in line
