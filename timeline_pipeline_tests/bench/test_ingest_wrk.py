"""wrk's side of the ingest benchmark: the events file it replays, its command, its report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.ingest import wrk
from timeline_pipeline.lark.simulator.signing import (
    HEADER_NONCE,
    HEADER_SIGNATURE,
    HEADER_TIMESTAMP,
    SignedRequest,
    sign_payload,
)

REPORT = {
    "requests": 18000,
    "duration_us": 15_000_000,
    "issued": 18016,
    "accepted": 17990,
    "other": 10,
    "exhausted_threads": 0,
    "errors": {"connect": 0, "read": 1, "write": 0, "status": 10, "timeout": 0},
    "latency_us": {
        "p50": 11000,
        "p90": 15000,
        "p99": 17500,
        "p99_9": 30000,
        "max": 33000,
        "mean": 11800.5,
        "stdev": 2000.0,
    },
}


def test_each_event_is_one_line_of_the_exact_signed_headers_and_body(tmp_path: Path) -> None:
    requests = [sign_payload({"n": n}, encrypt_key="k") for n in range(3)]
    events = tmp_path / "events.tsv"

    wrk.write_events(events, requests)

    lines = events.read_bytes().splitlines()
    assert len(lines) == 3
    for line, request in zip(lines, requests, strict=True):
        timestamp, nonce, signature, body = line.split(b"\t")
        assert body == request.body  # byte for byte: the signature covers these bytes
        headers = request.headers
        assert timestamp.decode() == headers[HEADER_TIMESTAMP]
        assert nonce.decode() == headers[HEADER_NONCE]
        assert signature.decode() == headers[HEADER_SIGNATURE]


def test_a_body_that_would_break_the_line_format_is_refused(tmp_path: Path) -> None:
    headers = {HEADER_TIMESTAMP: "1", HEADER_NONCE: "n", HEADER_SIGNATURE: "s"}
    with pytest.raises(ValueError, match="one line without tabs"):
        wrk.write_events(tmp_path / "e.tsv", [SignedRequest(b'{"a":\n1}', headers)])


def test_the_command_keeps_connections_open_and_hands_the_script_its_events() -> None:
    args = wrk.command(
        "/usr/bin/wrk",
        "http://127.0.0.1:1/lark/events",
        Path("/x/e.tsv"),
        threads=2,
        connections=16,
        seconds=15,
    )
    assert args[:4] == ["/usr/bin/wrk", "-t2", "-c16", "-d15s"]
    assert "--latency" in args and str(wrk.SCRIPT) in args
    assert args[-3:] == ["--", "/x/e.tsv", "2"]  # the script splits the lines by thread
    assert wrk.SCRIPT.is_file()


def test_the_report_line_gives_wrk_s_latency_distribution_in_milliseconds() -> None:
    stdout = "Running 15s test\n  2 threads\nBENCH-WRK " + json.dumps(REPORT) + "\n"

    report = wrk.parse_report(stdout)

    assert (report.p50_ms, report.p90_ms, report.p99_ms) == (11.0, 15.0, 17.5)
    assert (report.p99_9_ms, report.max_ms) == (30.0, 33.0)
    assert report.accepted_per_second == pytest.approx(17990 / 15)
    assert report.issued == 18016 and report.errors["status"] == 10


def test_no_report_line_is_a_failure_that_quotes_wrk_s_last_words() -> None:
    with pytest.raises(wrk.WrkFailed, match=r"exited 1 without a report: unable to connect"):
        wrk.parse_report("", returncode=1, stderr="unable to connect to 127.0.0.1:1\n")
