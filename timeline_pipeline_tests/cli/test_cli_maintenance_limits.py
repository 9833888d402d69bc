"""`maintenance create` and `configure` check their batch limits before anything is sent: a
lock timeout above the statement timeout is one `error:` line and exit 1, and a bad
`--parameters` is reported first (docs/maintenance.md, docs/cli.md)."""

from __future__ import annotations

import socket

import pytest
from click.testing import CliRunner

from timeline_pipeline.cli.main import cli

LIMITS = ("--batch-size", "10", "--delay-ms", "1", "--statement-timeout-ms", "50")


def _closed_port() -> int:
    """A port nothing listens on: the command must fail before trying it."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize(
    "command",
    [
        ("create", "--type", "window_rerun", "--idempotency-key", "k"),
        ("configure", "--job", "j", "--revision", "1"),
    ],
)
def test_lock_timeout_above_statement_timeout_is_refused(command: tuple[str, ...]) -> None:
    args = ["maintenance", *command, *LIMITS, "--lock-timeout-ms", "51"]
    result = CliRunner().invoke(cli, [*args, "--port", str(_closed_port())])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == "error: --lock-timeout-ms must not exceed --statement-timeout-ms\n"


def test_bad_parameters_are_reported_before_the_limits() -> None:
    args = ["maintenance", "create", "--type", "window_rerun", "--idempotency-key", "k"]
    args += [*LIMITS, "--lock-timeout-ms", "51", "--parameters", "{"]
    result = CliRunner().invoke(cli, [*args, "--port", str(_closed_port())])
    assert result.exit_code == 1
    assert result.stderr == "error: --parameters is not valid JSON\n"
