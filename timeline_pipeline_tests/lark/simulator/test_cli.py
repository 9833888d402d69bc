"""`timeline-pipeline lark simulate|push`: help, loopback refusal, and a real run of each."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi import FastAPI, Request

from timeline_pipeline.cli.lark_commands import lark_group
from timeline_pipeline.lark.client import LarkClient, LarkClientConfig
from timeline_pipeline.lark.simulator import LoopbackUvicorn, make_chat_messages, write_jsonl
from timeline_pipeline.lark.simulator.fixtures import user_lines

START = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def chats(tmp_path: Path) -> Path:
    messages = make_chat_messages("oc_cli", START, 12, seed=3, thread_every=0)
    messages[-1]["deleted"] = True
    return write_jsonl(tmp_path / "chats.jsonl", [*user_lines(), *messages])


def test_simulate_help_lists_its_options() -> None:
    result = CliRunner().invoke(lark_group, ["simulate", "--help"])

    assert result.exit_code == 0
    for option in ("--chats", "--host", "--port", "--fail-page", "--rate-limit-every", "--json"):
        assert option in result.output


def test_simulate_refuses_a_non_loopback_host(chats: Path) -> None:
    result = CliRunner().invoke(
        lark_group, ["simulate", "--chats", str(chats), "--host", "0.0.0.0"]
    )

    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "loopback" in result.stderr
    assert result.stdout == ""


def test_push_refuses_a_non_loopback_receiver(chats: Path) -> None:
    result = CliRunner().invoke(
        lark_group, ["push", "--chats", str(chats), "--receiver", "http://192.0.2.1/lark/events"]
    )

    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1


def test_simulate_serves_until_terminated(chats: Path) -> None:
    app_id = f"cli_test_{uuid.uuid4().hex[:12]}"
    env = {**os.environ, "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
    command = [
        sys.executable,
        "-c",
        "from timeline_pipeline.cli.lark_commands import lark_group; lark_group()",
        "simulate",
        "--chats",
        str(chats),
        "--app-id",
        app_id,
        "--app-secret",
        "cli-secret",
        "--json",
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        assert process.stdout is not None
        line = process.stdout.readline().decode()
        base_url = json.loads(line)["base_url"]
        assert base_url.startswith("http://127.0.0.1:")
        client = LarkClient(
            LarkClientConfig(app_id=app_id, app_secret="cli-secret", base_url=base_url)
        )
        pages = list(client.iter_chat_messages("oc_cli", START, START + timedelta(hours=1)))
        assert sum(len(p.items) for p in pages) == 12
    finally:
        process.terminate()
        code = process.wait(timeout=15)
    assert code == 0


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[dict[str, object]]]]:
    bodies: list[dict[str, object]] = []
    app = FastAPI()

    @app.post("/lark/events")
    async def events(request: Request) -> dict[str, str]:
        assert request.headers["x-lark-signature"]
        bodies.append(json.loads(await request.body()))
        return {"msg": "success"}

    with LoopbackUvicorn(app) as server:
        yield f"{server.base_url}/lark/events", bodies


def test_push_delivers_messages_and_recalls(
    chats: Path, receiver: tuple[str, list[dict[str, object]]]
) -> None:
    url, bodies = receiver

    result = CliRunner().invoke(
        lark_group,
        [
            "push",
            "--chats",
            str(chats),
            "--receiver",
            url,
            "--encrypt-key",
            "k",
            "--verification-token",
            "vt",
            "--plain",
            "--json",
        ],
    )

    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary == {
        "sent": 13,
        "dropped": 0,
        "duplicated": 0,
        "status_counts": {"200": 13},
        "errors": 0,
    }
    types = [b["header"]["event_type"] for b in bodies]  # type: ignore[index]
    assert types.count("im.message.receive_v1") == 12
    assert types[-1] == "im.message.recalled_v1"
