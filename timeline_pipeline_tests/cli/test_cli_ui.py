"""`ui link`, `ui sessions`, `ui revoke` and `token revoke --workspace W --all`."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from click.testing import CliRunner

from timeline_pipeline.cli.main import cli
from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.store import api_tokens, ui_sessions


@pytest.fixture
def runner(db_url: str, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("TIMELINE_DATABASE_URL", db_url)
    made = CliRunner()
    assert made.invoke(cli, ["workspace", "create", "--id", "inc-1"]).exit_code == 0
    return made


def test_ui_link_prints_a_one_time_link_alone_on_the_last_line(
    runner: CliRunner, db_url: str
) -> None:
    result = runner.invoke(
        cli, ["ui", "link", "--workspace", "inc-1", "--base-url", "https://tl.example/"]
    )
    assert result.exit_code == 0, result.stderr
    link = result.stdout.strip().splitlines()[-1]
    parts = urlsplit(link)
    assert (parts.scheme, parts.netloc, parts.path) == ("https", "tl.example", "/ui/sign-in")
    [token] = parse_qs(parts.query)["token"]
    engine = make_engine(db_url)
    try:
        with engine.begin() as conn:
            soon = datetime.now(UTC) + timedelta(minutes=9)
            assert ui_sessions.redeem_link(conn, token, now=soon) is not None
    finally:
        engine.dispose()


def test_ui_link_refuses_a_missing_workspace_or_a_bad_base_url(runner: CliRunner) -> None:
    missing = runner.invoke(cli, ["ui", "link", "--workspace", "nope"])
    assert missing.exit_code == 1
    assert len(missing.stderr.strip().splitlines()) == 1
    bad = runner.invoke(cli, ["ui", "link", "--workspace", "inc-1", "--base-url", "ftp://x"])
    assert bad.exit_code == 2
    assert "--base-url" in bad.stderr


def test_revoking_the_workspace_ends_its_sessions_and_with_all_its_tokens(
    runner: CliRunner, db_url: str
) -> None:
    engine = make_engine(db_url)
    now = datetime.now(UTC)
    hour = timedelta(hours=1)
    try:
        with engine.begin() as conn:
            first = ui_sessions.open_session(conn, "inc-1", link_id=None, now=now, ttl=hour)
            token = api_tokens.create(conn, "inc-1").token
        revoked = runner.invoke(cli, ["ui", "revoke", "--workspace", "inc-1", "--json"])
        assert json.loads(revoked.stdout)["sessions_revoked"] == 1
        listed = json.loads(
            runner.invoke(cli, ["ui", "sessions", "--workspace", "inc-1", "--json"]).stdout
        )
        assert [s["revoked_at"] is not None for s in listed["sessions"]] == [True]
        assert first.secret not in json.dumps(listed)
        with engine.begin() as conn:
            second = ui_sessions.open_session(conn, "inc-1", link_id=None, now=now, ttl=hour)
        everything = runner.invoke(
            cli, ["token", "revoke", "--workspace", "inc-1", "--all", "--json"]
        )
        assert everything.exit_code == 0, everything.stderr
        assert json.loads(everything.stdout) == {
            "workspace": "inc-1",
            "tokens_revoked": 1,
            "sessions_revoked": 1,
        }
        with engine.begin() as conn:
            assert api_tokens.authorize(conn, token, "inc-1") is None
            assert ui_sessions.session_for(conn, second.secret, now=now) is None
    finally:
        engine.dispose()
    confused = runner.invoke(cli, ["token", "revoke", "--all"])
    assert confused.exit_code == 2
