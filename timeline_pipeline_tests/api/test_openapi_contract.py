"""The served OpenAPI schema is the contract: schemathesis, with all its checks and the stateful
phase, finds no failure against a real `timeline-pipeline serve` on PostgreSQL, with a valid
token and a workspace that has evidence and entries.

The run is bounded (examples per operation, one worker) and deterministic (schemathesis'
deterministic generation, no example database), so it cannot flake. The refusals no schema can
express, each stated in the operation's documentation, are allowed where they apply and nowhere
else (`positive_data_acceptance` per operation, as schemathesis documents for such rules):

* 400 on the listings: a cursor not signed by this server (a signature is not a pattern);
* 400 where If-Match is taken: schemathesis draws If-Match values from its own ETag strategy,
  not from the documented pattern, so a drawn `0` or `W/"x"` is a malformed tag to this API;
* 428 on changes of an entry: neither `revision` nor If-Match (a rule across body and header);
* 422 `invalid_input` on adding and editing an entry: evidence ids of another workspace or none,
  and a time outside 2000..2100 UTC (a pattern cannot follow a date-time's offset);
* 422 `invalid_input` on setting a report milestone: a time in the future, outside 2000..2100
  UTC, or one that contradicts the other milestones (after `resolved`, ...).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import Engine

from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.store import api_tokens
from timeline_pipeline_tests.curation.support import (
    IMPACT,
    RECOVERED,
    ROLLBACK,
    ROOT_CAUSE,
    W1,
    W2,
    incident,
    say,
    synthesize,
)
from timeline_pipeline_tests.faults.support_serve import ServeProcess
from timeline_pipeline_tests.support.reports import build_report

MAX_EXAMPLES = 5
RUN_SECONDS = 240

POSITIVE = '"2xx", "3xx", "401", "403", "404", "409", "429", "5xx"'
CONFIG = f"""
[parameters]
"path.workspace_id" = "inc-1"

[[operations]]
include-path-regex = "/(timeline|evidence)$"
checks.positive_data_acceptance.expected-statuses = [{POSITIVE}, "400"]

[[operations]]
include-path-regex = "/(confirm|hide|restore|summary)$"
checks.positive_data_acceptance.expected-statuses = [{POSITIVE}, "400", "428"]

[[operations]]
include-path-regex = "/entries(/[{{]entry_id[}}])?$"
checks.positive_data_acceptance.expected-statuses = [{POSITIVE}, "400", "422", "428"]

[[operations]]
# A milestone's time is checked against the clock and the other milestones, in words only.
include-path-regex = "/report/milestones/"
checks.positive_data_acceptance.expected-statuses = [{POSITIVE}, "422"]

[[operations]]
# A hold's review date is bounded (2000..2099 UTC) in words only, like the entries' times.
include-path-regex = "/lifecycle/holds"
checks.positive_data_acceptance.expected-statuses = [{POSITIVE}, "422"]
"""


def populated(engine: Engine) -> str:
    """inc-1 with evidence, synthesized entries and a token of it; inc-2 beside it."""
    incident(engine, "inc-1", "oc_chat")
    incident(engine, "inc-2", "oc_other")
    say(engine, W1, [IMPACT, ROLLBACK])
    say(engine, W2, [ROOT_CAUSE, RECOVERED])
    synthesize(engine, W1)
    synthesize(engine, W2)
    build_report(engine)  # the report's reads answer 200 and are checked against their schema
    with engine.begin() as conn:
        # Every scope, so the legal-hold operations are reached too.
        return api_tokens.create(conn, "inc-1", api_tokens.SCOPES).token


@pytest.mark.slow
def test_schemathesis_finds_no_failure_against_the_served_schema(
    pg_url: str, tmp_path: Path
) -> None:
    engine = make_engine(pg_url, null_pool=True)
    token = populated(engine)
    engine.dispose()
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG, encoding="utf-8")
    runtime = {"TIMELINE_DATABASE_URL": pg_url, "LARK_VERIFICATION_TOKEN": "vt-contract"}
    with ServeProcess(runtime, tmp_path).start() as serve:
        command = [
            str(Path(sys.executable).parent / "schemathesis"),
            "--config-file",
            str(config),
            "run",
            f"{serve.base_url}/api/openapi.json",
            "--checks",
            "all",
            "--phases",
            "examples,coverage,fuzzing,stateful",
            "--header",
            f"Authorization: Bearer {token}",
            "--max-examples",
            str(MAX_EXAMPLES),
            "--generation-deterministic",
            "--workers",
            "1",
            "--request-timeout",
            "30",
            "--no-color",
        ]
        result = subprocess.run(
            command,
            cwd=tmp_path,
            env={**os.environ, "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"},
            capture_output=True,
            text=True,
            timeout=RUN_SECONDS,
            check=False,
        )
    report = result.stdout + result.stderr
    assert result.returncode == 0, report[-20000:]
    # The run went through every phase, the stateful one with scenarios, not merely nothing.
    for phase in ("Coverage", "Fuzzing", "Stateful", "Scenarios:"):
        assert phase in report, (phase, report[-5000:])
    assert "failed" not in report.split("SUMMARY")[-1], report[-5000:]
