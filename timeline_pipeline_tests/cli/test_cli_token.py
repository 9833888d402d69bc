from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from timeline_pipeline.cli.main import cli
from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.store import api_tokens


def test_token_create_prints_the_token_alone_on_the_last_line(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIMELINE_DATABASE_URL", db_url)
    runner = CliRunner()
    assert runner.invoke(cli, ["workspace", "create", "--id", "inc-1"]).exit_code == 0
    result = runner.invoke(cli, ["token", "create", "--workspace", "inc-1"])
    assert result.exit_code == 0
    token = result.stdout.strip().splitlines()[-1]
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            assert api_tokens.authorize(conn, token, "inc-1") is True
        listed = json.loads(
            runner.invoke(cli, ["token", "list", "--workspace", "inc-1", "--json"]).stdout
        )
        [entry] = listed["tokens"]
        assert token not in json.dumps(listed)
        assert runner.invoke(cli, ["token", "revoke", "--id", entry["id"]]).exit_code == 0
        with engine.connect() as conn:
            assert api_tokens.authorize(conn, token, "inc-1") is None
    finally:
        engine.dispose()
    missing = runner.invoke(cli, ["token", "revoke", "--id", "tok_nope"])
    assert missing.exit_code == 1
    assert "does not exist" in missing.stderr
