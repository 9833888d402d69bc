"""The CLI as an operator uses it: one line on stderr and a non-zero exit for every mistake."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from timeline_pipeline.cli.main import cli


@pytest.fixture
def run(db_url: str, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("TIMELINE_DATABASE_URL", db_url)

    def invoke(*args: str) -> tuple[int, str, str]:
        result = CliRunner().invoke(cli, list(args))
        return result.exit_code, result.stdout, result.stderr

    return invoke


def test_create_bind_and_show_as_json(run) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run(
        "workspace", "create", "--id", "inc-7", "--created-at", "2026-11-29T10:00:00Z", "--json"
    )
    assert code == 0
    assert json.loads(out)["created_at"] == "2026-11-29T10:00:00+00:00"
    assert run("workspace", "bind-chat", "--workspace", "inc-7", "--chat", "oc_room")[0] == 0
    code, out, _ = run("status", "--json")
    assert code == 0
    [item] = json.loads(out)["workspaces"]
    assert (item["id"], item["status"], item["type"], item["chats"]) == (
        "inc-7",
        "firing",
        "incident",
        ["oc_room"],
    )


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("workspace", "bind-chat", "--workspace", "ghost", "--chat", "oc_room"), "does not exist"),
        (("workspace", "create", "--id", "bad id"), "invalid workspace id"),
        (("workspace", "create", "--id", "inc-1", "--created-at", "yesterday"), "ISO 8601"),
        (
            ("workspace", "create", "--id", "inc-1", "--created-at", "2026-11-29T10:00:00"),
            "timezone",
        ),
        (("workspace", "create", "--id", "inc-1", "--status", "resolved"), "resolved"),
    ],
)
def test_bad_input_is_one_line_and_non_zero(run, args, fragment: str) -> None:  # type: ignore[no-untyped-def]
    code, out, err = run(*args)
    assert code != 0
    assert fragment in err
    assert "Traceback" not in err
    code, out, _ = run("workspace", "list", "--json")
    assert json.loads(out)["workspaces"] == []


def test_a_duplicate_workspace_exits_non_zero_and_keeps_the_first(run) -> None:  # type: ignore[no-untyped-def]
    assert run("workspace", "create", "--id", "inc-1", "--title", "first")[0] == 0
    code, _, err = run("workspace", "create", "--id", "inc-1", "--title", "second")
    assert code == 1 and err.strip() == "error: workspace 'inc-1' already exists"
    _, out, _ = run("workspace", "list", "--json")
    assert [w["title"] for w in json.loads(out)["workspaces"]] == ["first"]


def test_unusable_database_urls(monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    monkeypatch.setenv("TIMELINE_DATABASE_URL", "mysql://db/x")
    result = runner.invoke(cli, ["status"])
    assert result.exit_code == 1 and "unsupported driver" in result.stderr
    monkeypatch.setenv("TIMELINE_DATABASE_URL", "postgresql+psycopg://postgres@127.0.0.1:1/nowhere")
    result = runner.invoke(cli, ["db", "upgrade"])
    assert result.exit_code == 3
    assert (
        result.stderr.startswith("error: database unavailable") and result.stderr.count("\n") == 1
    )


def test_every_command_has_help() -> None:
    import click

    def walk(command: click.Command, path: list[str]) -> list[list[str]]:
        found = [path]
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                found.extend(walk(sub, [*path, name]))
        return found

    for path in walk(cli, []):
        result = CliRunner().invoke(cli, [*path, "--help"])
        assert result.exit_code == 0, path
        assert "Usage:" in result.stdout


def test_curators_are_added_once_and_removed_and_a_non_curator_is_one_line(run) -> None:  # type: ignore[no-untyped-def]
    assert run("workspace", "create", "--id", "inc-8")[0] == 0
    add = ("workspace", "add-curator", "--workspace", "inc-8", "--open-id", "ou_ic", "--json")
    code, out, _ = run(*add)
    assert (code, json.loads(out)["created"]) == (0, True)
    assert json.loads(run(*add)[1])["created"] is False
    remove = ("workspace", "remove-curator", "--workspace", "inc-8", "--open-id", "ou_ic")
    assert run(*remove)[0] == 0
    code, out, err = run(*remove)
    assert code == 1
    assert out == ""
    assert err.strip().splitlines() == ["error: ou_ic is not a curator of workspace inc-8"]
    code, _, err = run("workspace", "add-curator", "--workspace", "inc-8", "--open-id", "x" * 129)
    assert code != 0
    assert len(err.strip().splitlines()) == 1
    assert "at most 128" in err


def test_a_workspace_made_with_a_language_and_zone_shows_them(run) -> None:  # type: ignore[no-untyped-def]
    code, _, _ = run(
        "workspace", "create", "--id", "inc-zh", "--locale", "zh-CN", "--time-zone", "Asia/Shanghai"
    )
    assert code == 0
    code, out, _ = run("workspace", "show", "inc-zh", "--json")
    assert code == 0
    shown = json.loads(out)
    assert (shown["locale"], shown["locale_from"], shown["effective_locale"]) == (
        "zh-CN",
        "workspace",
        "zh-CN",
    )
    assert (shown["time_zone"], shown["time_zone_from"]) == ("Asia/Shanghai", "workspace")
    code, out, _ = run("workspace", "show", "inc-zh")
    assert code == 0 and "locale: zh-CN (workspace) -> zh-CN" in out
    assert "time zone: Asia/Shanghai (workspace)" in out


def test_set_locale_and_time_zone_and_back_to_the_settings(run) -> None:  # type: ignore[no-untyped-def]
    assert run("workspace", "create", "--id", "inc-1")[0] == 0
    code, out, _ = run("workspace", "show", "inc-1", "--json")
    assert json.loads(out)["locale"] == "auto" and json.loads(out)["time_zone"] == "UTC"
    assert run("workspace", "set-locale", "--workspace", "inc-1", "--locale", "zh-CN")[0] == 0
    code, _, _ = run(
        "workspace", "set-time-zone", "--workspace", "inc-1", "--time-zone", "Asia/Tokyo"
    )
    assert code == 0
    shown = json.loads(run("workspace", "show", "inc-1", "--json")[1])
    assert (shown["effective_locale"], shown["time_zone"]) == ("zh-CN", "Asia/Tokyo")
    assert run("workspace", "set-locale", "--workspace", "inc-1", "--locale", "default")[0] == 0
    assert (
        run("workspace", "set-time-zone", "--workspace", "inc-1", "--time-zone", "default")[0] == 0
    )
    shown = json.loads(run("workspace", "show", "inc-1", "--json")[1])
    assert (shown["locale_from"], shown["time_zone"], shown["time_zone_from"]) == (
        "setting",
        "UTC",
        "setting",
    )


@pytest.mark.parametrize(
    "args",
    [
        ("workspace", "set-time-zone", "--workspace", "inc-1", "--time-zone", "Mars/Base"),
        ("workspace", "set-locale", "--workspace", "inc-1", "--locale", "fr"),
        ("workspace", "set-locale", "--workspace", "nope", "--locale", "en"),
        ("workspace", "create", "--id", "inc-2", "--time-zone", "UTC+8"),
        ("workspace", "show", "nope"),
    ],
)
def test_bad_language_input_is_one_line_and_changes_nothing(run, args) -> None:  # type: ignore[no-untyped-def]
    assert run("workspace", "create", "--id", "inc-1", "--time-zone", "Asia/Shanghai")[0] == 0
    code, _, err = run(*args)
    assert code != 0
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    shown = json.loads(run("workspace", "show", "inc-1", "--json")[1])
    assert (shown["locale_from"], shown["time_zone"]) == ("setting", "Asia/Shanghai")
    assert run("workspace", "show", "inc-2")[0] != 0
