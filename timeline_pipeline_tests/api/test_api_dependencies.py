"""`serve`'s composition root: routes reach their services through dependencies that a test can
replace with `app.dependency_overrides`, as FastAPI documents."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine

from timeline_pipeline.curation.evidence import EvidenceService
from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.migrate import upgrade
from timeline_pipeline.web.deps import get_evidence_service
from timeline_pipeline_tests.api.conftest import Served
from timeline_pipeline_tests.curation.support import W1, incident, say


def test_the_evidence_route_reads_through_its_overridable_service(
    served: Served, tmp_path: Path
) -> None:
    other: Engine = make_engine(f"sqlite:///{tmp_path / 'other.db'}")
    upgrade(other)
    incident(other, "inc-1")
    say(other, W1, ["from the other database"])
    say(served.engine, W1, ["from the app's database", "and another"])
    app = served.client.app
    url = "/api/workspaces/inc-1/evidence"

    before = served.client.get(url, headers=served.auth).json()["items"]
    app.dependency_overrides[get_evidence_service] = lambda: EvidenceService(other)  # type: ignore[attr-defined]
    try:
        after = served.client.get(url, headers=served.auth).json()["items"]
    finally:
        app.dependency_overrides.clear()  # type: ignore[attr-defined]
        other.dispose()

    assert [item["content"] for item in before] == ["from the app's database", "and another"]
    assert [item["content"] for item in after] == ["from the other database"]
